"""What a pass page shows, rebuilt from the engine (never from ``ui/``), and the numbers a
question hides there: the values a test must not find before the answer.

``hidden``: every number of the panels the question conceals (``Question.conceals``) and of the
matrix it asks about. ``allowed``: every number of the page's other panels and charts. A value
the page draws in a panel the question does not hide is no leak, so the strings and float32
values searched for are ``hidden`` minus ``allowed`` (and never 0, 1 or a blank −∞).
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass

import numpy as np
import torch

from attnviz.core.settings import Settings
from attnviz.teach import prepare
from attnviz.teach import questions as Q
from attnviz.teach.lessons import causal as LC
from attnviz.teach.lessons import multihead as LM
from attnviz.teach.lessons import simplified as L1
from attnviz.teach.lessons import trainable as L2

URL_PATHS = {
    "simplified": "simplified-attention",
    "trainable": "trainable-attention",
    "causal": "causal-attention",
    "multihead": "multi-head-attention",
}
TEXT2 = "Every effort moves you forward"


@dataclass(frozen=True)
class Setting:
    """One page at one setting, as a URL gives it."""

    page: str
    items: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, page: str, query: dict[str, str]) -> Setting:
        return cls(page, tuple(sorted(query.items())))

    @property
    def query(self) -> dict[str, str]:
        return dict(self.items)

    @property
    def book(self) -> bool:
        return self.query.get("book") == "true"

    @property
    def text(self) -> str:
        return "" if self.book else self.query.get("text", "Your journey starts with one step")

    @property
    def settings(self) -> Settings:
        """The pass's settings as the page keys its caches (``Config.trace_args``)."""
        if self.book:
            return Settings()
        names = {
            "d_in": "d_in",
            "d_out": "d_out",
            "heads": "num_heads",
            "ctx": "context_length",
            "dropout": "dropout",
            "eseed": "seed_embed",
            "wseed": "seed_weights",
            "dseed": "seed_dropout",
            "bias": "qkv_bias",
            "train": "training",
        }
        changes: dict = {}
        for url, field in names.items():
            if url in self.query:
                raw = self.query[url]
                default = getattr(Settings(), field)
                changes[field] = (
                    raw == "true" if isinstance(default, bool) else type(default)(float(raw))
                )
        return Settings().with_changes(**changes).for_pass(self.page)


def _prepared(s: Setting):
    """The page's tokens and X, as ``ui/cache.py`` prepares them."""
    prep = prepare.prepare(s.text, s.settings, s.book)
    if s.page in ("causal", "multihead"):
        prep, _ = prepare.within_context(prep, s.settings.context_length)
    return prep


@dataclass(frozen=True)
class Shown:
    """The page as the engine builds it: its panels by key, its bar and line charts' values,
    and the numbers its questions read."""

    panels: dict[str, torch.Tensor]
    charts: tuple[np.ndarray, ...]
    numbers: Q.Numbers
    claims: tuple[tuple[str, str], ...] = ()  # (panel key, the sentence)


def shown(s: Setting, head: int = 0) -> Shown:
    """Every panel the page draws (and the multi-head page's head ``head``), from the engine."""
    prep = _prepared(s)
    st = s.settings
    if s.page == "simplified":
        tr = prepare.simplified(prep)
        lesson = L1.simplified_lesson(tr, s.book)
        qv = L1.query_view(tr, min(1, tr.num_tokens - 1), 1, 0, s.book)
        panels = {p.key: p.values for p in lesson.panels.values()}
        panels[qv.context_walk.key] = qv.context_walk.values
        charts = tuple(
            series.values for c in (qv.scores_figure, qv.walk_figure) for series in c.series
        )
        claims = tuple((lesson.panels[c.panel].key, c.text) for c in lesson.claims)
        return Shown(panels, charts, Q.numbers_of("simplified", tr), claims)
    if s.page == "trainable":
        version = "v1" if s.book else "v2"
        tr = prepare.trainable(prep, st, version)
        other = prepare.trainable(prep, st, "v2" if version == "v1" else "v1")
        wide_s = L2.wide_settings(st, s.book)
        wide = prepare.trainable(prep, wide_s, version) if wide_s else None
        lesson = L2.trainable_lesson(tr, other, wide, s.book)
        panels = {p.key: p.values for p in lesson.panels.values()}
        figures = (
            lesson.entropy_figure,
            lesson.gradient_figure,
            lesson.weights_histogram,
            lesson.scores_histogram,
        )
        charts = tuple(series.values for c in figures for series in c.series)
        claims = tuple((lesson.panels[c.panel].key, c.text) for c in lesson.claims)
        return Shown(panels, charts, Q.numbers_of("trainable", tr), claims)
    if s.page == "causal":
        tr = prepare.causal(prep, st)
        lab = prepare.causal(prep, st.with_changes(training=True)) if st.dropout > 0 else None
        if s.book:
            lab = None
        text2 = "" if s.book else s.query.get("text2", TEXT2)
        batch = prepare.prepare_batch(s.text, text2, st, s.book)
        bt = prepare.causal_batch(batch, st, s.book) if batch.num_tokens else None
        lesson = LC.causal_lesson(tr, lab, bt, batch.labels, settings=st, book=s.book)
        panels = {p.key: p.values for p in lesson.panels.values()}
        claims = tuple((c.panel, c.text) for c in lesson.claims)
        return Shown(panels, (), Q.numbers_of("causal", tr, lab, s.book), claims)
    if s.page == "multihead":
        tr = prepare.multihead(prep, st)
        view = LM.build(tr, None, s.book)
        head_view = LM.head_view(tr, head)
        panels = {view.grid.key: view.grid.values}
        panels |= {p.key: p.values for p in head_view.panels.values()}
        claims = tuple((c.panel, c.text) for c in (*view.claims, *head_view.claims))
        return Shown(panels, (), Q.numbers_of("multihead", tr), claims)
    raise ValueError(s.page)


def hidden_claims(s: Setting, q: Q.Question) -> set[str]:
    """The sentences the page states only about panels the question conceals."""
    page = shown(s, q.head or 0)
    visible = {text for key, text in page.claims if key not in q.conceals}
    return {text for key, text in page.claims if key in q.conceals} - visible


@functools.lru_cache(maxsize=64)
def numbers(s: Setting) -> Q.Numbers:
    """What the page's questions read: its own traces (book mode's pass 2 draws v1)."""
    prep = _prepared(s)
    st = s.settings
    if s.page == "simplified":
        return Q.numbers_of("simplified", prepare.simplified(prep))
    if s.page == "trainable":
        return Q.numbers_of("trainable", prepare.trainable(prep, st, "v1" if s.book else "v2"))
    if s.page == "causal":
        lab = None
        if not s.book and st.dropout > 0:
            lab = prepare.causal(prep, st.with_changes(training=True))
        return Q.numbers_of("causal", prepare.causal(prep, st), lab, s.book)
    return Q.numbers_of("multihead", prepare.multihead(prep, st))


def question(s: Setting, seed: int = 0) -> Q.Question | None:
    """The question the page poses at ``seed`` (the session's first is seed 0)."""
    return Q.choose(s.page, s.text, s.settings, s.book, seed, numbers=numbers(s))


def hidden_matrix(q: Q.Question, n: Q.Numbers) -> torch.Tensor | None:
    """The matrix the question asks about, recomputed here from the numbers."""
    h = q.head or 0
    if q.kind in (Q.ARGMAX_KEY, Q.SKETCH_ROW, Q.MASKED_ZEROS, Q.SCORE_RISES, Q.WEIGHT_RATIO):
        return n.weights[h]
    if q.kind == Q.SCALED_SCORE:
        return n.raw[0] / n.scale  # as the trace divides: float32 by √d_k
    if q.kind in (Q.DROPOUT_SURVIVOR, Q.DROPOUT_ROW_SUM):
        return n.dropped[h]
    if q.kind == Q.SCORE:
        raw = n.raw[0].clone()
        if n.causal:
            raw[torch.triu(torch.ones_like(raw, dtype=torch.bool), diagonal=1)] = -math.inf
        return raw
    if q.kind == Q.SCALING_ENTROPY:
        raw = n.raw[0].double()
        changed = {
            Q.WITHOUT: torch.softmax(raw, dim=-1),
            Q.WIDER: torch.softmax(raw / (2 * n.scale), dim=-1),
            Q.SHIFTED: torch.softmax((raw + 3) / n.scale, dim=-1),
        }[q.variant]
        return (changed - n.weights[0].double()).float()
    return None


def _values(t) -> np.ndarray:
    a = t.detach().to(torch.float32).numpy() if isinstance(t, torch.Tensor) else np.asarray(t)
    a = a.astype(np.float32).reshape(-1)
    return a[np.isfinite(a)]


TRIVIAL = {0.0, 1.0, -1.0}


@dataclass(frozen=True)
class Secret:
    """What must not reach the student before the answer: float32 values and their printed
    3- and 4-decimal strings; ``total``: how many distinct hidden values there were."""

    values: frozenset[float]
    strings: frozenset[str]
    total: int
    matrix: torch.Tensor | None


def _printed(v: float) -> set[str]:
    return {f"{v:.3f}", f"{v:.4f}"}


def secret(s: Setting, q: Q.Question) -> Secret:
    page = shown(s, q.head or 0)
    concealed = set(q.conceals)
    matrix = hidden_matrix(q, page.numbers)
    hidden_parts = [v for k, v in page.panels.items() if k in concealed]
    if matrix is not None:
        hidden_parts.append(matrix)
    allowed_parts = [v for k, v in page.panels.items() if k not in concealed]
    if not _sections_hidden(s.page, concealed):
        allowed_parts += list(page.charts)
    trivial = set(TRIVIAL)
    if page.numbers.p > 0:  # a kept weight of 1 becomes the scale 1/(1 − p), which the page states
        trivial.add(float(np.float32(1 / (1 - page.numbers.p))))
    hidden = {float(x) for part in hidden_parts for x in _values(part)} - trivial
    allowed = {float(x) for part in allowed_parts for x in _values(part)}
    allowed_strings = {t for v in allowed for t in _printed(v)}
    # The prompt may state a number of a concealed panel (the weight before dropout that a
    # dropout question starts from): the question gives it, so it is no leak.
    stated = {v for v in hidden if found_strings(q.prompt, _printed(v))}
    values = frozenset(hidden - allowed - stated)
    strings = {t for v in values for t in _printed(v)} - allowed_strings
    strings -= {t for v in trivial for t in _printed(v)} | {"-0.000", "-0.0000"}
    return Secret(values, frozenset(strings), len(hidden), matrix)


def _sections_hidden(page: str, concealed: set[str]) -> bool:
    """Whether the page's bar and line charts are hidden with these panels (ui.teach.predict's
    sections: pass 1's query walk, pass 2's histograms)."""
    if page == "simplified":
        return bool(concealed & {"p1_scores", "p1_weights"})
    if page == "trainable":
        return bool(concealed & {"p2_scores", "p2_scaled"})
    return False


def found_strings(text: str, strings) -> set[str]:
    """The strings that occur in ``text`` as whole numbers: no digit, point or minus sign just
    before (0.25 is not found in -0.25 or 10.25), no digit just after (nor in 0.251)."""
    found = set()
    for s in strings:
        if re.search(r"(?<![\d.\-])" + re.escape(s) + r"(?!\d)", text):
            found.add(s)
    return found


def found_values(arrays, values: frozenset[float]) -> set[float]:
    """The float32 ``values`` that occur in any of ``arrays``."""
    if not values:
        return set()
    wanted = np.array(sorted(values), dtype=np.float32)
    found: set[float] = set()
    for a in arrays:
        flat = np.asarray(a, dtype=np.float32).reshape(-1)
        hits = np.isin(wanted, flat)
        found |= {float(v) for v in wanted[hits]}
    return found
