"""The join link's QR code, made locally: the SVG, once its path is drawn module by module here,
decodes back to the link with an independent decoder (zxing-cpp)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest
import zxingcpp
from PIL import Image

from attnviz.classroom.qr import QUIET_ZONE, qr_matrix, qr_svg

LINKS = [
    "http://127.0.0.1:8501/class-poll?code=AB3K9Z",
    "https://attnviz.example.edu/class-poll?code=Q7RM2X",
    # A long sentence in the link (a bigger symbol), and text beyond ASCII.
    "https://attnviz.example.edu/class-poll?code=Q7RM2X&text=" + "The+cat+sat+on+the+mat+" * 8,
    "https://attnviz.example.edu/class-poll?code=Q7RM2X&text=caf%C3%A9%20%E2%90%A3",
]


def decode(image: Image.Image) -> list[str]:
    return [
        b.text for b in zxingcpp.read_barcodes(image) if b.format == zxingcpp.BarcodeFormat.QRCode
    ]


def svg_to_modules(svg: str) -> list[list[bool]]:
    """Draw segno's SVG path: 'M x y' and 'm dx dy' move, 'h n' draws n dark modules on the row
    through y (the stroke runs along each row's middle)."""
    root = ET.fromstring(svg)
    ns = {"svg": "http://www.w3.org/2000/svg"}
    size = int(root.get("viewBox").split()[2])
    dark = [p for p in root.findall("svg:path", ns) if p.get("stroke") == "#000"]
    assert len(dark) == 1
    grid = [[False] * size for _ in range(size)]
    x = y = 0.0
    for op, a, b in re.findall(r"([MmHh])\s*(-?[\d.]+)(?:\s+(-?[\d.]+))?", dark[0].get("d")):
        if op == "M":
            x, y = float(a), float(b)
        elif op == "m":
            x, y = x + float(a), y + float(b)
        else:
            for col in range(int(x), int(x + float(a))):
                grid[int(y)][col] = True
            x += float(a)
    return grid


@pytest.mark.parametrize("link", LINKS)
def test_the_svg_draws_the_same_modules_and_decodes_back(link):
    svg = qr_svg(link)
    assert "http" not in svg.replace("http://www.w3.org/2000/svg", "")  # references nothing
    grid = svg_to_modules(svg)
    inner = [row[QUIET_ZONE:-QUIET_ZONE] for row in grid[QUIET_ZONE:-QUIET_ZONE]]
    assert inner == [list(row) for row in qr_matrix(link)]
    assert not any(grid[0]) and not any(row[0] for row in grid)  # the quiet zone is white
    scale = 6
    image = Image.new("L", (len(grid) * scale, len(grid) * scale), 255)
    for r, row in enumerate(grid):
        for c, on in enumerate(row):
            if on:
                image.paste(0, (c * scale, r * scale, (c + 1) * scale, (r + 1) * scale))
    assert decode(image) == [link]


@pytest.mark.parametrize(
    "link",
    ["ftp://example.edu/x", "javascript:alert(1)", "http://", "http://a b", "x" * 2000, None],
)
def test_a_link_that_is_not_http_is_refused(link):
    with pytest.raises(ValueError):
        qr_svg(link)
