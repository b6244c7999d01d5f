"""QR codes for a poll's join link, made here by segno (pure Python): nothing is fetched.

Error correction level M (15% of the symbol can be lost: a projector's glare, a low seat) and
the standard quiet zone of four modules, dark on a white ground whatever the page's theme, so
a phone's camera finds it on a dark projector slide too.
"""

from __future__ import annotations

import io
from urllib.parse import urlsplit

import segno

QUIET_ZONE = 4  # modules of white around the symbol, as the QR standard asks
MAX_URL = 1024


def _symbol(url: str) -> segno.QRCode:
    if not isinstance(url, str) or len(url) > MAX_URL:
        raise ValueError(f"a join link is a string of at most {MAX_URL} characters")
    if any(c.isspace() or ord(c) < 32 for c in url):
        raise ValueError("a join link has no spaces or control characters")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError("a join link starts with http:// or https:// and a host")
    return segno.make(url, error="m", micro=False, boost_error=False)


def qr_svg(url: str) -> str:
    """The QR code of ``url`` as a standalone SVG document (one module per unit, sized by its
    viewBox, so the page scales it to any width)."""
    out = io.BytesIO()
    _symbol(url).save(
        out,
        kind="svg",
        border=QUIET_ZONE,
        scale=1,
        dark="#000",
        light="#fff",
        xmldecl=False,
        omitsize=True,
        title="QR code of the join link",
    )
    return out.getvalue().decode("utf-8")


def qr_matrix(url: str) -> tuple[tuple[bool, ...], ...]:
    """The symbol's modules (True is dark), without the quiet zone: what both images draw."""
    return tuple(tuple(bool(m) for m in row) for row in _symbol(url).matrix)
