"""A matrix as LaTeX: a ``bmatrix`` with its row and column labels, for slides and papers.

:func:`bmatrix` writes one (rows, cols) matrix with 4 decimals, ``-\\infty`` for a masked score,
and the token labels escaped for LaTeX text (``_ & % $ # { } ~ ^ \\`` and the app's own markers,
␣ for a space and ↵ for a newline). The labels sit outside the brackets: column labels above
their column, row labels to the left of their row. Every column is given one width in both the
labels' row and the matrix (``\\hphantom`` of its widest entry, label or number), and each entry
is set right-aligned in it, so the labels stand over their numbers with nothing but ``amsmath``.
:func:`document` wraps matrices in a standalone document that ``pdflatex`` compiles.

Plain data in, strings out; nothing here imports Streamlit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

DECIMALS = 4
# amsmath's matrices allow this many columns unless the counter MaxMatrixCols is raised.
AMSMATH_MAX_COLS = 10
# Past this many entries a matrix is no use on a slide or a page, and its LaTeX runs to megabytes
# (a 256 x 256 map: 4 MB, half a second of the server's time): narrow the token window first.
MAX_CELLS = 64 * 64

# Characters that mean something to LaTeX, or print wrongly in its default text font, and the
# app's markers for invisible characters (attnviz/core/tokens.py), each as LaTeX text.
_TEXT_ESCAPES = {
    "\\": r"\textbackslash{}",
    "{": r"\{",
    "}": r"\}",
    "$": r"\$",
    "&": r"\&",
    "%": r"\%",
    "#": r"\#",
    "_": r"\_",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
    "-": "{-}",  # no -- or --- ligature (en and em dashes)
    "'": r"\textquotesingle{}",  # no '' ligature (a closing quote)
    "`": r"\textasciigrave{}",
    '"': r"\texttt{\char34}",  # a straight double quote (the default font curls it)
    "\u2423": r"\textvisiblespace{}",  # ␣ a space
    "\u21b5": r"\ensuremath{\hookleftarrow}",  # ↵ a newline
    "\u21e5": r"\ensuremath{\rightarrow}\textbar{}",  # ⇥ a tab
    "\u27e8": r"\ensuremath{\langle}",  # ⟨D7 A9⟩: bytes of a split character
    "\u27e9": r"\ensuremath{\rangle}",
}


def _escape_char(ch: str, ascii_only: bool) -> str:
    if ch in _TEXT_ESCAPES:
        return _TEXT_ESCAPES[ch]
    if ascii_only and not ch.isascii():
        return rf"\ensuremath{{\langle}}U+{ord(ch):04X}\ensuremath{{\rangle}}"
    return ch


def escape(text: str, ascii_only: bool = False) -> str:
    """``text`` as LaTeX text: every special character escaped, the app's markers as symbols.
    Other characters are kept as they are (UTF-8: pdflatex takes Latin letters, XeLaTeX and
    LuaLaTeX every script), or with ``ascii_only`` named by their code point (⟨U+05E9⟩), which
    any LaTeX compiles."""
    return "".join(_escape_char(ch, ascii_only) for ch in text)


def number(value: float, decimals: int = DECIMALS) -> str:
    """One entry in math mode: ``decimals`` places, ``-\\infty`` for a masked score."""
    if math.isnan(value):
        return r"\mathrm{NaN}"
    if math.isinf(value):
        return r"-\infty" if value < 0 else r"\infty"
    text = f"{value:.{decimals}f}"
    if float(text) == 0:
        text = text.lstrip("-")  # -0.0000 prints as 0.0000
    return text


# Rough widths in em (Computer Modern at 10 pt), only to choose which of a column's label and
# its widest number sets the column's width; a wrong guess shifts a label by a fraction of an em.
def _text_width(text: str) -> float:
    width = 0.0
    for ch in text:
        if ch.isdigit() or ch.islower():
            width += 0.5
        elif ch.isupper():
            width += 0.72
        elif ch in " .:,;'|!":
            width += 0.3
        else:
            width += 0.75
    return width


def _number_width(entry: str) -> float:
    if entry == r"-\infty":
        return 1.78
    if entry == r"\infty":
        return 1.0
    if entry == r"\mathrm{NaN}":
        return 2.0
    return sum(0.78 if ch == "-" else 0.28 if ch == "." else 0.5 for ch in entry)


def _entries(values: torch.Tensor, decimals: int) -> list[list[str]]:
    return [[number(float(v), decimals) for v in row] for row in values.tolist()]


def bmatrix(
    values: torch.Tensor,
    rows: Sequence[str] | None = None,
    cols: Sequence[str] | None = None,
    decimals: int = DECIMALS,
    ascii_only: bool = False,
) -> str:
    """A (rows, cols) matrix as a LaTeX ``bmatrix`` (math mode), with its row and column labels
    outside the brackets when they are given (``ascii_only``: see :func:`escape`). Needs
    ``amsmath``; past 10 columns it raises amsmath's column limit itself
    (``\\setcounter{MaxMatrixCols}``)."""
    values = torch.as_tensor(values)
    if values.dim() != 2:
        raise ValueError(f"bmatrix takes a (rows, cols) matrix, not shape {tuple(values.shape)}")
    n_rows, n_cols = values.shape
    if n_rows * n_cols > MAX_CELLS:
        raise ValueError(
            f"A {n_rows}×{n_cols} matrix is too large for LaTeX here (at most {MAX_CELLS:,} "
            "entries): show fewer tokens (the token window) and copy that."
        )
    for name, labels, size in (("row", rows, n_rows), ("column", cols, n_cols)):
        if labels is not None and len(labels) != size:
            raise ValueError(f"{len(labels)} {name} labels for {size} {name}s")
    entries = _entries(values, decimals)
    limit = f"\\setcounter{{MaxMatrixCols}}{{{n_cols}}}\n" if n_cols > AMSMATH_MAX_COLS else ""
    if rows is None and cols is None:
        body = " \\\\\n".join(" & ".join(row) for row in entries)
        return f"{limit}\\begin{{bmatrix}}\n{body}\n\\end{{bmatrix}}"
    row_text = [escape(r, ascii_only) for r in rows] if rows is not None else None
    col_text = [escape(c, ascii_only) for c in cols] if cols is not None else None
    # each column's width: its label's or its widest number's, whichever is wider
    phantoms = []
    for c in range(n_cols):
        widest = max((entries[r][c] for r in range(n_rows)), key=_number_width, default="0")
        label = cols[c] if cols is not None else ""
        if col_text is not None and _text_width(label) > _number_width(widest):
            phantoms.append(f"\\hphantom{{\\text{{{col_text[c]}}}}}")
        else:
            phantoms.append(f"\\hphantom{{{widest}}}")

    def cell(c: int, content: str) -> str:
        return f"{phantoms[c]}\\llap{{{content}}}"

    matrix_rows = [" & ".join(cell(c, f"${e}$") for c, e in enumerate(row)) for row in entries]
    matrix = "\\begin{bmatrix}\n" + " \\\\\n".join(matrix_rows) + "\n\\end{bmatrix}"
    lines = [f"{limit}\\begin{{array}}{{@{{}}r@{{\\;}}c@{{}}}}"]
    if col_text is not None:
        header = " & ".join(cell(c, col_text[c]) for c in range(n_cols))
        lines.append(
            f"& \\begin{{array}}{{@{{}}*{{{n_cols}}}{{r}}@{{}}}} {header} \\end{{array}} \\\\"
        )
    if row_text is not None:
        left = " \\\\ ".join(f"\\text{{{r}}}" for r in row_text)
        lines.append(f"\\begin{{array}}{{@{{}}r@{{}}}} {left} \\end{{array}}")
    lines.append(f"& {matrix}")
    lines.append("\\end{array}")
    return "\n".join(lines)


def bmatrices(
    values: torch.Tensor,
    rows: Sequence[str] | None = None,
    cols: Sequence[str] | None = None,
    heads: Sequence[int] | None = None,
) -> tuple[str, ...]:
    """One :func:`bmatrix` per matrix, at its default decimals: a (rows, cols) matrix gives one, a stack of heads
    (H, rows, cols) one per head, each preceded by ``\\text{head h}``. ``heads``: the heads to
    write (by their number in the stack; default every one)."""
    values = torch.as_tensor(values)
    if values.dim() == 2:
        return (bmatrix(values, rows, cols),)
    if values.dim() != 3:
        raise ValueError(f"a matrix or a stack of heads, not shape {tuple(values.shape)}")
    chosen = range(values.shape[0]) if heads is None else heads
    return tuple(f"\\text{{head {h}}}\\quad\n" + bmatrix(values[h], rows, cols) for h in chosen)


def document(*matrices: str, title: str = "") -> str:
    """A standalone LaTeX document (article, amsmath) with each matrix in its own display."""
    head = f"\\section*{{{escape(title)}}}\n" if title else ""
    body = "\n".join(f"\\[\n{m}\n\\]" for m in matrices)
    return (
        "\\documentclass{article}\n\\usepackage{amsmath}\n"
        "\\usepackage[margin=1cm,landscape]{geometry}\n"
        f"\\begin{{document}}\n{head}{body}\n\\end{{document}}\n"
    )
