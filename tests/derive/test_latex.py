"""Every matrix as a LaTeX bmatrix with its labels: escaped, 4 decimals, −∞ for a masked
score; compiled with Debian's pdflatex (texlive-latex-base, installed by scripts/test) and read
back from the PDF with pdftotext (poppler-utils), so the numbers on the page are checked."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import torch

from attnviz.core.settings import Settings
from attnviz.teach import export, prepare

HOSTILE = 'A_b & 50% $x #1 {y} ~z ^w \\n "q" <a|b> -- `t\'s\nline\there'


def _tool(name: str) -> str:
    path = shutil.which(name)
    assert path, (
        f"{name} is not installed: scripts/test installs texlive-latex-base and poppler-utils"
    )
    return path


def _compile(tmp_path: Path, source: str) -> str:
    """pdflatex the document (stopping at the first error), then the PDF's text."""
    tex = tmp_path / "m.tex"
    tex.write_text(source, encoding="utf-8")
    run = subprocess.run(
        [
            _tool("pdflatex"),
            "-interaction=nonstopmode",
            "-halt-on-error",
            "-no-shell-escape",
            tex.name,
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    log = (tmp_path / "m.log").read_text(encoding="utf-8", errors="replace")
    assert run.returncode == 0, log[-3000:]
    assert "Missing character" not in log, log[-3000:]
    text = subprocess.run(
        [_tool("pdftotext"), "-raw", "m.pdf", "-"], cwd=tmp_path, capture_output=True, text=True
    )
    assert text.returncode == 0
    return text.stdout


NUMBER = re.compile(r"[−-]?\d+\.\d{4}|[−-]∞")


def _printed(values: torch.Tensor) -> list[str]:
    """The entries as the PDF prints them: 4 decimals, − for minus, −∞ for a masked score."""
    out = []
    for v in values.flatten().tolist():
        out.append("−∞" if v == float("-inf") else export.number(v).replace("-", "−"))
    return out


def test_escape_turns_every_special_character_into_text():
    assert export.escape("a_b&c%d$e#f{g}h~i^j\\k") == (
        r"a\_b\&c\%d\$e\#f\{g\}h\textasciitilde{}i\textasciicircum{}j\textbackslash{}k"
    )
    assert export.escape("3: ␣the") == r"3: \textvisiblespace{}the"
    assert export.escape("5: ↵") == r"5: \ensuremath{\hookleftarrow}"
    assert export.escape("-- ''") == r"{-}{-} \textquotesingle{}\textquotesingle{}"
    assert export.escape("plain words") == "plain words"


def test_numbers_have_four_decimals_and_a_masked_score_is_minus_infinity():
    assert export.number(0.123456) == "0.1235"
    assert export.number(-1.5) == "-1.5000"
    assert export.number(-0.00001) == "0.0000"
    assert export.number(float("-inf")) == r"-\infty"
    assert export.number(float("nan")) == r"\mathrm{NaN}"


def test_bmatrix_holds_every_entry_and_label():
    values = torch.tensor([[1.0, float("-inf")], [0.25, -0.5]])
    latex = export.bmatrix(values, ["0: a_b", "1: ␣%"], ["0: a_b", "1: ␣%"])
    assert latex.count(r"\begin{bmatrix}") == 1 and latex.count(r"\end{bmatrix}") == 1
    assert "$1.0000$" in latex and r"$-\infty$" in latex
    assert "$0.2500$" in latex and "$-0.5000$" in latex
    assert latex.count(r"\text{0: a\_b}") >= 2  # a row label and a column label
    assert r"1: \textvisiblespace{}\%" in latex
    plain = export.bmatrix(values)
    assert plain == "\\begin{bmatrix}\n1.0000 & -\\infty \\\\\n0.2500 & -0.5000\n\\end{bmatrix}"


def test_bmatrix_refuses_labels_that_do_not_fit():
    with pytest.raises(ValueError, match="3 row labels for 2 rows"):
        export.bmatrix(torch.zeros(2, 2), ["a", "b", "c"], ["a", "b"])
    with pytest.raises(ValueError, match="not shape"):
        export.bmatrix(torch.zeros(2, 2, 2))
    with pytest.raises(ValueError, match="A 65×64 matrix is too large for LaTeX here"):
        export.bmatrix(torch.zeros(65, 64))
    assert export.bmatrix(torch.zeros(64, 64)).count("0.0000") == 64 * 64


def test_a_stack_of_heads_gives_one_bmatrix_per_head():
    out = export.bmatrices(torch.zeros(3, 2, 2), ["a", "b"], ["a", "b"])
    assert len(out) == 3 and out[2].startswith(r"\text{head 2}")


def test_latex_compiles_and_the_pdf_holds_the_numbers(tmp_path):
    s = Settings(context_length=64)
    prep = prepare.prepare(HOSTILE, s)
    assert prep.num_tokens == 35  # every special character, ↵ and ⇥ among the labels
    masked = prepare.causal(prep, s).attn_scores[0]  # −∞ above the diagonal
    book = prepare.causal(prepare.prepare("", s, True), s)  # the chapter's masking walkthrough
    heads = prepare.multihead(
        prepare.prepare("Your journey starts with one step", Settings()), Settings()
    )
    parts = [
        (masked[:12, :12], prep.labels[:12]),  # 12 columns: past amsmath's default of 10
        (masked[12:24, 12:24], prep.labels[12:24]),
        (masked[24:, 24:], prep.labels[24:]),  # wider maps run off an A4 page
        (book.attn_weights[0], book.labels),
    ]
    latex = [export.bmatrix(v, lab, lab) for v, lab in parts]
    latex += list(export.bmatrices(heads.attn_weights[0], heads.labels, heads.labels))
    text = _compile(tmp_path, export.document(*latex, title="Masked scores & weights_1"))
    expected = [n for v, _ in parts for n in _printed(v)]
    expected += _printed(heads.attn_weights[0])
    assert NUMBER.findall(text) == expected
    assert "Masked scores & weights" in text
    for word in ("journey", "here", "line", "0: A", "2: b", "34: here", "head 1"):
        assert word in text
    assert r"\setcounter{MaxMatrixCols}{12}" in latex[0]
    assert r"\setcounter{MaxMatrixCols}" not in latex[3]


def test_ascii_only_labels_compile_for_any_script(tmp_path):
    assert export.escape("ש", ascii_only=True) == r"\ensuremath{\langle}U+05E9\ensuremath{\rangle}"
    assert export.escape("é␣", ascii_only=True) == (
        r"\ensuremath{\langle}U+00E9\ensuremath{\rangle}\textvisiblespace{}"
    )
    s = Settings()
    prep = prepare.prepare("שלום 🙂 naïve 日本", s)
    weights = prepare.simplified(prep).attn_weights
    latex = export.bmatrix(weights, prep.labels, prep.labels, ascii_only=True)
    assert latex.isascii()
    text = _compile(tmp_path, export.document(latex))
    assert NUMBER.findall(text) == _printed(weights)
    assert "U+05E9" in text  # ש, named by its code point
