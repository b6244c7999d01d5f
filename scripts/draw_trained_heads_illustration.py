"""Draw ui/models/trained-heads-illustration.svg: what the trained-heads page shows once GPT-2's weights
are installed, for the students of a server that has none.

It is an illustration, and says so in the picture: the four kinds of head the page sorts GPT-2's
heads into (attnviz.models.gpt2.HEAD_TYPES), each drawn from its own definition (most of a row's
weight on the previous token, on token 0, on the token itself, or spread evenly), beside the
blur of an untrained head. No GPT-2 weights are read. Run it again after changing the picture:

    .venv/bin/python scripts/draw_trained_heads_illustration.py
"""

from __future__ import annotations

import html
from pathlib import Path

import numpy as np
from plotly.colors import sample_colorscale

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "ui" / "models" / "trained-heads-illustration.svg"
TOKENS = ["The", "cat", "sat", "on", "the", "mat", "because", "it", "was", "tired"]
CELL = 13
GAP = 26
LEFT = 56  # room for the row labels
TOP = 58


def _rows(focus) -> np.ndarray:
    """Causal weights where row i puts 0.8 on ``focus(i)`` and spreads 0.2 over the rest."""
    n = len(TOKENS)
    w = np.zeros((n, n))
    for i in range(n):
        seen = i + 1
        w[i, : i + 1] = 0.2 / seen
        w[i, focus(i)] += 0.8
    return w


def _even() -> np.ndarray:
    n = len(TOKENS)
    return np.tril(np.ones((n, n))) / np.arange(1, n + 1)[:, None]


def _untrained() -> np.ndarray:
    """A blurry head: near an even share, with small fixed wobbles (no random draw)."""
    n = len(TOKENS)
    wobble = 1 + 0.35 * np.sin(np.arange(n)[:, None] * 1.7 + np.arange(n)[None, :] * 2.3)
    w = np.tril(wobble)
    return w / w.sum(axis=1, keepdims=True)


PANELS = [
    ("previous-token head", _rows(lambda i: max(i - 1, 0))),
    ("first-token head", _rows(lambda i: 0)),
    ("current-token head", _rows(lambda i: i)),
    ("broad head", _even()),
    ("untrained head (for contrast)", _untrained()),
]


def svg() -> str:
    n = len(TOKENS)
    side = n * CELL
    width = LEFT + len(PANELS) * (side + GAP)
    height = TOP + side + 46
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" role="img" '
        'aria-label="Illustration of five attention heads">',
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
        '<text x="8" y="20" font-size="14" font-weight="bold" fill="#1a1a1a">'
        "ILLUSTRATION, not GPT-2's numbers: the kinds of head the page finds</text>",
        '<text x="8" y="38" font-size="12" fill="#333333">'
        "Each map: one row per query token, one column per key; darker purple = less weight, "
        "yellow = more.</text>",
    ]
    for k, (name, weights) in enumerate(PANELS):
        x0 = LEFT + k * (side + GAP)
        out.append(
            f'<text x="{x0}" y="{TOP - 6}" font-size="11" fill="#1a1a1a">{html.escape(name)}</text>'
        )
        colours = sample_colorscale("Viridis", list(np.clip(weights.ravel(), 0, 1)))
        for i in range(n):
            for j in range(n):
                if j > i:
                    colour = "#f2f2f2"  # a future key: no weight
                else:
                    colour = colours[i * n + j]
                out.append(
                    f'<rect x="{x0 + j * CELL}" y="{TOP + i * CELL}" width="{CELL - 1}" '
                    f'height="{CELL - 1}" fill="{colour}"/>'
                )
    for i, token in enumerate(TOKENS):
        out.append(
            f'<text x="{LEFT - 4}" y="{TOP + i * CELL + CELL - 3}" font-size="9" '
            f'text-anchor="end" fill="#333333">{html.escape(token)}</text>'
        )
    out.append(
        f'<text x="8" y="{TOP + side + 22}" font-size="11" fill="#333333">Drawn from each kind\'s '
        "definition on a made-up sentence. With the weights installed, the page draws every head "
        "of every layer of GPT-2 on your own text.</text>"
    )
    out.append("</svg>")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    OUT.write_text(svg(), encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")
