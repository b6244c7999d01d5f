"""Every panel of the four pass pages, declared once, and the look-ups the features make.

Each page's lesson module declares its panels (and the parts of the page that draw their
numbers) in one tuple, ``DECLARED``, of :class:`attnviz.teach.panel.Declared`: page 1's in
``lessons/simplified.py``, page 2's in ``lessons/trainable.py``, page 3's in
``lessons/causal.py``, page 4's in ``lessons/multihead.py``; the home page declares its
alignment (``lessons/home.py``), whose cells "Explain a cell" opens too. Their words are in
``lessons/story.toml``, by key. "Predict first" (what a question hides, and what it hides
with it), "Explain a cell" (the heatmaps a click opens a cell on), "Reproduce" (the matrix a
panel's snippet prints), presenter mode (the steps, in order) and the closed parts of a page
(which one a question opens) read them here; none of them names a panel.

Adding a panel: one declaration in its page's tuple, its words in story.toml, the line of the
lesson that builds it and the line of the page that lays it out.

The lesson modules are imported on the first look-up (a poll's phone needs none of them).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from types import MappingProxyType

from attnviz.teach.panel import PICKED_HEAD, Declared

PAGES = ("simplified", "trainable", "causal", "multihead")
# Every page that declares panels: the passes, and the home page's alignment.
ALL_PAGES = (*PAGES, "home")


@functools.cache
def by_page() -> Mapping[str, tuple[Declared, ...]]:
    """Each page's declarations (the passes', then the home page's), in its lesson's order."""
    from attnviz.teach.lessons import causal, home, multihead, simplified, trainable

    found = {
        "simplified": simplified.DECLARED,
        "trainable": trainable.DECLARED,
        "causal": causal.DECLARED,
        "multihead": multihead.DECLARED,
        "home": home.DECLARED,
    }
    return MappingProxyType(found)


@functools.cache
def _by_key() -> Mapping[str, Declared]:
    return MappingProxyType({d.key: d for page in by_page().values() for d in page})


def every() -> tuple[Declared, ...]:
    """Every declaration of every page."""
    return tuple(_by_key().values())


def find(key: str) -> Declared:
    """The declaration of panel (or section) ``key``; KeyError when none declares it."""
    found = _by_key().get(key)
    if found is None:
        raise KeyError(f"no panel or section is declared as {key!r}")
    return found


def declared(key: str) -> bool:
    return key in _by_key()


def of_page(page: str) -> tuple[Declared, ...]:
    return by_page()[page]


def holding(page: str, what: str, *, dropped: bool) -> str:
    """The key of the panel of ``page`` that draws ``what`` (a HOLDS_* of
    :mod:`attnviz.teach.panel`), with dropout acting (``dropped``) or not: the panel a question
    about those numbers hides."""
    found = [d.key for d in of_page(page) if what in d.held(dropped)]
    if len(found) != 1:
        raise LookupError(f"{len(found)} panels of {page} hold {what!r}: {found}")
    return found[0]


def same_numbers(key: str) -> tuple[str, ...]:
    """The other panels that draw the numbers of panel ``key`` again."""
    return find(key).same


def shown_by(key: str) -> frozenset[str]:
    """The panels whose numbers ``key`` draws: a section's ``shows``, a panel's own key."""
    d = _by_key().get(key)
    return frozenset(d.shows) if d is not None and d.shows else frozenset({key})


def standing_for(key: str) -> tuple[str, ...]:
    """The sections that take the place of panel ``key`` when the page does not draw it."""
    return tuple(d.key for d in every() if d.stands_for == key)


def cells(page: str, sources, head: int = 0) -> dict[str, tuple[str, int | None, int]]:
    """For "Explain a cell": each heatmap of ``page`` whose trace is among ``sources`` (names)
    -> (trace, head or None for a grid of every head, example in the batch). ``head``: the
    head the page's "Head" box picked."""
    out: dict[str, tuple[str, int | None, int]] = {}
    for d in of_page(page):
        if d.cell is None or d.cell[0] not in sources:
            continue
        source, h, batch = d.cell
        out[d.key] = (source, head if h == PICKED_HEAD else h, batch)
    return out
