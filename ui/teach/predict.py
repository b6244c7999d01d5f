"""Predict first, and spot the bug (issue 25, the page part).

**Predict first** (a switch on every pass page, ``predict=true`` in the URL): the page asks one
question made from its own traces (:func:`attnviz.teach.questions.choose`), so the key is the number
about to be drawn. Until the student answers, the panel the question hides and every other
place on the page that shows the same numbers (``Question.conceals``, the sections declared to
show them (``attnviz.teach.declared``), the claims about them, their numbers tables and CSVs,
their hover data) send nothing to the browser: the question is drawn where the hidden panel would be, the rest say
they are hidden. The answer, graded by :func:`attnviz.teach.questions.grade`, reveals the panel with
the answer marked on it (the key cell outlined, the student's pick beside it, a sketched row
drawn over the true one). Presenter mode gets a question step: a step whose panel a question
hides asks it first.

**Spot the bug** (``mystery=true``): the page shows what :func:`attnviz.teach.mystery.pose` picked
(the tensors, their shapes and row sums, never a badge, a diff or the bug's name) and asks for
the diagnosis; the reveal shows the check that catches it and the one-line diff the engine ran.

The score of a session (answered, right, streak) lives in ``st.session_state`` only. For the
class polls: :func:`answer_widgets` draws one question's answer widgets anywhere and returns
the answer, :func:`reveal` draws the revealed matrix with the answer marked.

How a page uses this: :func:`controls` draws the two switches; :func:`start`, before the
page's layout, chooses the question and returns the run's :class:`Plan`: which panels and
sections a question stands in for or hides. The page hands the plan to everything that draws
its numbers (``ui.render.show`` and ``beside``, the claims, the live checks, "Explain a cell",
the presenter's stepper, the closed parts a question opens) and asks :meth:`Plan.slot` before a
section that shows numbers without a panel (a printout, a bar chart). Nothing of it is kept
between runs: a page without the plan draws everything.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import pandas as pd
import streamlit as st
import torch

from attnviz import figures
from attnviz.core import seeding
from attnviz.teach import declared
from attnviz.teach import mystery as MY
from attnviz.teach import questions as Q
from attnviz.teach.panel import CAUSAL_WEIGHTS, WEIGHTS, Panel, Style, View, chart_label, draw
from ui import url
from ui.classroom import poll_views as poll
from ui.text import md_escape

if TYPE_CHECKING:
    from ui.teach.slides import PageContext

PREDICT_KEY = url.PREDICT
MYSTERY_KEY = url.MYSTERY
PREDICT_LABEL = "Predict first"
MYSTERY_LABEL = "Spot the bug"


# ``present.read_url`` checks these with its own (before any widget exists).
PARSERS = {PREDICT_KEY: url.parse_bool, MYSTERY_KEY: url.parse_bool}

# Session state: plain values and the engine's frozen answers, nothing stored elsewhere.
_SEEDS = "_attnviz_predict_seeds"  # (what, page) -> the seed of the question or mystery shown
_GRADES = "_attnviz_predict_grades"  # question id -> Grade
_DIAGNOSES = "_attnviz_predict_diagnoses"  # mystery id -> Diagnosis
_SCORES = "_attnviz_predict_scores"  # "predict" or "mystery" -> Score
_ERRORS = "_attnviz_predict_errors"  # form prefix -> the message about an answer's form
_LAST = "_attnviz_predict_last"  # page -> the id of the last question posed there
_MARKED = "_attnviz_predict_marked"  # (question id, panel serial, look) -> chart JSON


def _store(name: str) -> dict:
    if name not in st.session_state:
        st.session_state[name] = {}
    return st.session_state[name]


# --- the switches -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Mode:
    predict: bool
    mystery: bool


def controls(*, present: bool = False) -> Mode:
    """The "Predict first" and "Spot the bug" switches, each bound to the URL (presenter mode
    has predictions only: its question steps)."""
    if present:
        on = st.toggle(
            PREDICT_LABEL,
            value=False,
            key=PREDICT_KEY,
            bind="query-params",
            help="Ask the class before each step a question hides.",
        )
        return Mode(bool(on), False)
    # one row (on a phone, two): a horizontal container, two messages fewer than two columns
    with st.container(horizontal=True, gap="large"):
        predict = st.toggle(
            PREDICT_LABEL,
            value=False,
            key=PREDICT_KEY,
            bind="query-params",
            help="A question about the numbers comes first; the panel with the answer stays "
            "hidden until you answer.",
        )
        mystery = st.toggle(
            MYSTERY_LABEL,
            value=False,
            key=MYSTERY_KEY,
            bind="query-params",
            help="One classic bug (or none) is switched on at random: diagnose it from the "
            "numbers.",
        )
    return Mode(bool(predict), bool(mystery))


def _seed(what: str, page: str) -> int:
    """The seed of the question (``what`` "predict") or mystery ("mystery") shown on ``page``
    in this session: the session's own first seed (:func:`attnviz.core.seeding.session_seed`),
    one more for each "Next question" or "Another mystery"."""
    seeds = _store(_SEEDS)
    if (what, page) not in seeds:
        seeds[(what, page)] = seeding.session_seed()
    return int(seeds[(what, page)])


def _next(what: str, page: str) -> None:
    seeds = _store(_SEEDS)
    seeds[(what, page)] = _seed(what, page) + 1


def _score(what: str) -> Q.Score:
    return _store(_SCORES).get(what, Q.Score())


def score_line(what: str = "predict") -> str:
    s = _score(what)
    return f"This session: {s.answered} answered, {s.right} right, streak {s.streak}."


def question_id(q: Q.Question) -> str:
    """A short name for a question, from all of its plain values."""
    text = json.dumps(Q.to_plain(q), sort_keys=True, default=str)
    return hashlib.blake2b(text.encode(), digest_size=10).hexdigest()


def grade_of(q: Q.Question) -> Q.Grade | None:
    return _store(_GRADES).get(question_id(q))


# --- answer widgets (a page, a presenter step, a phone) -----------------------------------------
TOKEN_PILLS_UP_TO = 24  # more tokens: one select box instead of a button each
SHAPE_HINT = "whole numbers separated by commas"


def _record(q: Q.Question, prefix: str, on_answer: Callable | None) -> None:
    """The form's submit callback (before the next run): read and grade the answer; a wrong
    form leaves a message for the form, a graded answer goes to ``on_answer``."""
    errors = _store(_ERRORS)
    errors.pop(prefix, None)
    try:
        answer = read_answer(q, prefix)
        grade = Q.grade(q, answer)
    except Q.AnswerError as err:
        errors[prefix] = str(err)
        return
    if on_answer is not None:
        on_answer(q, grade)


def read_answer(q: Q.Question, prefix: str) -> Q.Answer:
    """The answer in the widgets of :func:`answer_widgets` (session state), or AnswerError."""
    ss = st.session_state
    fmt = q.answer_format
    if fmt == Q.ROW:
        return tuple(float(ss.get(f"{prefix}_row_{j}", 0.0)) for j in range(len(q.choices)))
    if fmt == Q.SHAPE:
        return parse_shape(str(ss.get(f"{prefix}_shape", "") or ""))
    value = ss.get(f"{prefix}_{fmt}")
    if value is None:
        raise Q.AnswerError("Give an answer first.")
    if fmt == Q.CHOICE:
        return q.choices[int(value)]
    return value


def parse_shape(text: str) -> tuple[int, ...]:
    found = re.fullmatch(r"\s*[\(\[]?\s*(\d+(?:\s*,\s*\d+)*)\s*,?\s*[\)\]]?\s*", text)
    if not found:
        raise Q.AnswerError(f"Write the shape as {SHAPE_HINT}.")
    return tuple(int(v) for v in found[1].split(","))


def answer_widgets(
    question: Q.Question,
    key_prefix: str,
    *,
    on_answer: Callable[[Q.Question, Q.Grade], None] | None = None,
    submit_label: str = "Check my answer",
) -> Q.Answer | None:
    """Draw one question's answer widgets in a form of their own (nothing reruns until the
    student submits) and return the answer submitted in this run, or None (nothing submitted,
    or an answer of the wrong form: its message is drawn under the form).

    A token is clicked (one button per token; a select box past 24 tokens), a row sketched
    with one slider per key, an integer or a number to 2 decimals typed, a choice picked, a
    shape written. ``on_answer(question, grade)`` runs when a well-formed answer is submitted,
    before the run that follows (a page records it there, so that run draws the reveal).
    Every widget key starts with ``key_prefix``; the prompt itself is the caller's to draw."""
    q, p = question, key_prefix
    with st.form(f"{p}_form", border=False):
        fmt = q.answer_format
        if fmt == Q.TOKEN:
            options = list(range(len(q.choices)))
            if len(options) <= TOKEN_PILLS_UP_TO:
                st.pills(
                    "Your answer: click a token",
                    options,
                    format_func=lambda i: md_escape(q.choices[i]),
                    key=f"{p}_{Q.TOKEN}",
                )
            else:
                st.selectbox(
                    "Your answer: pick a token",
                    options,
                    index=None,
                    format_func=lambda i: q.choices[i],  # select boxes show plain text
                    placeholder="a token",
                    key=f"{p}_{Q.TOKEN}",
                )
        elif fmt == Q.ROW:
            st.caption("One slider per key, each between 0 and 1.")
            columns = st.columns(2) if len(q.choices) > 8 else [st.container()]
            for j, label in enumerate(q.choices):
                with columns[j % len(columns)]:
                    st.slider(md_escape(label), 0.0, 1.0, 0.0, 0.01, key=f"{p}_row_{j}")
        elif fmt == Q.INTEGER:
            st.number_input(
                "Your answer (a whole number)",
                min_value=int(q.low or 0),
                max_value=int(q.high) if q.high is not None else None,
                value=None,
                step=1,
                key=f"{p}_{Q.INTEGER}",
            )
        elif fmt == Q.NUMBER:
            st.number_input(
                "Your answer, to 2 decimals",
                value=None,
                step=0.01,
                format="%.2f",
                key=f"{p}_{Q.NUMBER}",
            )
        elif fmt == Q.CHOICE:
            st.radio(
                "Your answer",
                list(range(len(q.choices))),
                index=None,
                format_func=lambda i: md_escape(q.choices[i]),
                horizontal=True,
                key=f"{p}_{Q.CHOICE}",
            )
        elif fmt == Q.SHAPE:
            st.text_input(
                f"Your answer: the shape, as {SHAPE_HINT}",
                placeholder="(…, …, …, …)",
                max_chars=80,
                key=f"{p}_shape",
            )
        submitted = st.form_submit_button(
            submit_label, type="primary", on_click=_record, args=(q, p, on_answer)
        )
    message = _store(_ERRORS).get(p)
    if message:
        st.warning(md_escape(message))
    if not submitted or message:
        return None
    try:
        return read_answer(q, p)
    except Q.AnswerError:
        return None


# --- what a question's answer looks like --------------------------------------------------------
def say(q: Q.Question, value: Q.Answer, *, key: bool = False) -> str:
    """An answer in words (plain text: it may name the student's tokens)."""
    fmt = q.answer_format
    if fmt == Q.TOKEN:
        assert isinstance(value, int)
        return q.choices[value]
    if fmt == Q.NUMBER:
        assert isinstance(value, int | float)
        return f"{float(value):.4f}" if key else f"{float(value):.2f}"
    if fmt == Q.ROW:
        assert isinstance(value, tuple)
        return "[" + ", ".join(f"{float(v):.2f}" for v in value) + "]"
    if fmt == Q.SHAPE:
        assert isinstance(value, tuple)
        return "(" + ", ".join(str(int(v)) for v in value) + ")"
    return str(value)


def verdict(q: Q.Question, grade: Q.Grade) -> str:
    """One sentence: right or not, the answer, and for a sketch how far it was."""
    if q.answer_format == Q.ROW:
        assert grade.distance is not None
        far = (
            f"Your sketch is {grade.distance:.2f} from the true row (total-variation distance; "
            f"within {q.tolerance:.2f} counts)."
        )
        return ("Right. " if grade.right else "Not quite. ") + far
    if grade.right:
        return f"Right: {say(q, grade.key, key=True)}."
    return (
        f"Not quite: you said {say(q, grade.answer)}; the answer is {say(q, grade.key, key=True)}."
    )


def _graded(q: Q.Question, grade: Q.Grade, what: str = "predict") -> None:
    """The verdict, the misconception's sentence if the answer matched one, the score."""
    (st.success if grade.right else st.error)(md_escape(verdict(q, grade)))
    if q.reason:  # why the key is right, from these numbers
        st.write(md_escape("Why: " + q.reason))
    if grade.explanation:
        st.info(md_escape("That is the answer of a common slip. " + grade.explanation))
    st.caption(score_line(what))


# --- the hidden matrix, marked ------------------------------------------------------------------
def _future(t: int) -> torch.Tensor:
    return torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)


def hidden_matrix(q: Q.Question, n: Q.Numbers) -> torch.Tensor | None:
    """(T, T): the matrix the question hides, from the page's numbers (None: a shape)."""
    h = q.head or 0
    if q.kind in (Q.ARGMAX_KEY, Q.SKETCH_ROW, Q.MASKED_ZEROS, Q.SCORE_RISES, Q.WEIGHT_RATIO):
        return n.weights[h]
    if q.kind in (Q.DROPOUT_SURVIVOR, Q.DROPOUT_ROW_SUM):
        assert n.dropped is not None
        return n.dropped[h]
    if q.kind == Q.SCORE:
        raw = n.raw[0]
        return raw.masked_fill(_future(raw.shape[-1]), -math.inf) if n.causal else raw
    if q.kind == Q.SCALED_SCORE:
        return n.raw[0] / n.scale
    if q.kind == Q.SCALING_ENTROPY:
        return Q.scaling_change(q, n)
    return None


# The kinds that ask about one cell (query, other): the cell is outlined, not the row.
CELL_KINDS = (Q.SCORE, Q.DROPOUT_SURVIVOR, Q.SCALED_SCORE, Q.SCORE_RISES)

_TITLES = {
    Q.ARGMAX_KEY: "Attention weights",
    Q.SKETCH_ROW: "Attention weights",
    Q.MASKED_ZEROS: "Causal attention weights",
    Q.SCORE_RISES: "Attention weights",
    Q.WEIGHT_RATIO: "Attention weights",
    Q.DROPOUT_SURVIVOR: "Weights after dropout",
    Q.DROPOUT_ROW_SUM: "Weights after dropout",
    Q.SCORE: "Attention scores",
    Q.SCALED_SCORE: "Scaled scores",
    Q.SCALING_ENTROPY: "What the change does to the weights: the changed softmax minus the page's",
}


def reveal_panel(q: Q.Question, n: Q.Numbers) -> Panel | None:
    """The hidden matrix as a panel of its own (for a poll's phone, or a page that does not
    draw the hidden panel itself)."""
    m = hidden_matrix(q, n)
    if m is None:
        return None
    head = f", head {q.head}" if q.head is not None else ""
    title = f"{_TITLES[q.kind]}{head}: the answer"
    if q.kind in (Q.SCORE, Q.SCALED_SCORE, Q.SCALING_ENTROPY):
        value = "change" if q.kind == Q.SCALING_ENTROPY else "score"
        style = Style(colour="signed", value_name=value)
        kind = ""
    else:
        top = float(m[torch.isfinite(m)].max()) if m.numel() else 1.0
        style = Style(zmax=max(1.0, top))
        kind = CAUSAL_WEIGHTS if n.causal else WEIGHTS
    labels = n.labels
    return Panel(f"answer_{q.hides}", m, labels, labels, title=title, kind=kind, style=style)


def _rows_match(panel: Panel, q: Q.Question, matrix: torch.Tensor) -> bool:
    """Whether ``panel`` draws the question's matrix where it matters: the asked row (or the
    whole matrix), on every entry finite in the question's matrix."""
    v = panel.values
    if v.dim() != 2 or tuple(v.shape) != tuple(matrix.shape):
        return False
    a, b = (v, matrix) if q.query is None else (v[q.query], matrix[q.query])
    finite = torch.isfinite(b)
    return bool(torch.equal(a[finite].to(torch.float32), b[finite].to(torch.float32)))


def _cell(row: int, col: int, colour: str, width: int, dash: str = "solid") -> dict:
    """A rectangle around one cell (category axes put cell (r, c) at (c, r))."""
    return {
        "type": "rect",
        "name": f"marked cell {row}, {col}",
        "xref": "x",
        "yref": "y",
        "x0": col - 0.5,
        "x1": col + 0.5,
        "y0": row - 0.5,
        "y1": row + 0.5,
        "line": {"color": colour, "width": width, "dash": dash},
        "fillcolor": "rgba(0,0,0,0)",
    }


KEY_COLOUR = "#000000"  # the key's cell: black, with a white line inside (seen on any colour)
PICK_COLOUR = "#ff00ff"  # the student's wrong pick: dashed magenta
ZERO_CELLS_UP_TO = 12  # tokens: past this, the zero cells are not outlined one by one


def marks(q: Q.Question, grade: Q.Grade | None, matrix: torch.Tensor) -> tuple[list[dict], str]:
    """The shapes that mark the answer on the hidden matrix, and a caption saying what they
    mean (plain text)."""
    shapes: list[dict] = []
    said: list[str] = []

    def key_cell(r: int, c: int) -> None:
        shapes.extend((_cell(r, c, KEY_COLOUR, 5), _cell(r, c, "#ffffff", 2)))

    if q.kind == Q.ARGMAX_KEY and q.query is not None:
        assert isinstance(q.key, int)
        key_cell(q.query, q.key)
        said.append(f"outlined in black: the key query {q.choices[q.query]} weighs most")
        if grade is not None and not grade.right and isinstance(grade.answer, int):
            shapes.append(_cell(q.query, grade.answer, PICK_COLOUR, 3, "dash"))
            said.append("dashed: your pick")
    elif q.kind in CELL_KINDS and q.query is not None and q.other is not None:
        key_cell(q.query, q.other)
        asked = "the weight asked about" if q.kind == Q.SCORE_RISES else "the number asked for"
        said.append(f"outlined in black: {asked}")
    elif q.kind == Q.WEIGHT_RATIO and q.query is not None and q.other is not None:
        key_cell(q.query, q.other)
        said.append("outlined in black: the larger of the two weights")
    elif q.kind == Q.MASKED_ZEROS:
        t = matrix.shape[-1]
        if t <= ZERO_CELLS_UP_TO:
            for r, c in torch.nonzero(matrix == 0).tolist():
                shapes.append(_cell(r, c, KEY_COLOUR, 2))
            said.append("outlined: every entry that is exactly 0")
    if q.query is not None and q.kind not in CELL_KINDS:
        said.append("the row asked about is outlined in red")
    return shapes, ("Marked: " + "; ".join(said) + ".") if said else ""


def _send(spec: dict, label: str, key: str) -> None:
    """A spec drawn for this session only (it carries the student's answer): sent as JSON,
    without the shared chart cache."""
    from ui.charts import PLOT_CONFIG, _current_dg, _encoded, send_plotly_spec

    data, height, label = _encoded(spec, label)
    send_plotly_spec(_current_dg(), data, json.dumps(PLOT_CONFIG), height, key, label)


def _outlined(q: Q.Question, panel: Panel) -> Panel:
    """``panel`` with the asked row outlined (a question about one cell outlines the cell)."""
    rows = (q.query,) if q.query is not None and q.kind not in CELL_KINDS else ()
    return replace(panel, style=replace(panel.style, outline_rows=rows))


def marked_spec(
    q: Q.Question, grade: Q.Grade | None, panel: Panel, look: figures.Look = figures.NORMAL
) -> tuple[figures.Spec, str]:
    """The spec of ``panel`` (the hidden matrix) with the answer marked on it, and the caption
    that says what the marks mean."""
    shapes, caption = marks(q, grade, panel.values)
    spec = draw(_outlined(q, panel), look)
    spec["layout"].setdefault("shapes", []).extend(shapes)
    return spec, caption


def draw_marked(
    q: Q.Question, grade: Q.Grade | None, panel: Panel, *, look: figures.Look = figures.NORMAL
) -> str:
    """Draw ``panel`` (the hidden matrix) with the answer marked on it; returns the caption.
    The spec is kept in the session (it carries this student's answer)."""
    cache = _store(_MARKED)
    name = (question_id(q), panel.serial, look.name, grade.answer if grade else None)
    if name not in cache:
        cache[name] = marked_spec(q, grade, panel, look)
    spec, caption = cache[name]
    _send(spec, chart_label(_outlined(q, panel)), f"fig_{panel.key}_answer")
    return caption


def draw_sketch(q: Q.Question, grade: Q.Grade) -> None:
    """A sketched row drawn over the true row, bar beside bar: the gap is what differs."""
    if q.answer_format != Q.ROW or not isinstance(grade.answer, tuple):
        return
    assert isinstance(q.key, tuple)
    chart = figures.grouped_bars(
        {"your sketch": grade.answer, "the weights": q.key},
        q.choices,
        title=f"Row {q.choices[q.query or 0]}: your sketch and the true weights",
    )
    _send(chart.spec, chart.label, f"sketch_{question_id(q)}")
    assert grade.gap is not None
    worst = max(range(len(grade.gap)), key=lambda j: abs(grade.gap[j]))  # type: ignore[index]
    st.caption(
        md_escape(
            f"Largest gap: key {q.choices[worst]}, {grade.gap[worst]:+.2f} "
            f"(your {grade.answer[worst]:.2f} against {float(q.key[worst]):.4f})."
        )
    )


def reveal(
    question: Q.Question,
    grade: Q.Grade | None,
    *,
    numbers: Q.Numbers | None = None,
    look: figures.Look = figures.NORMAL,
) -> None:
    """Draw the revealed matrix with the answer marked (and a sketch over the true row), from
    the question alone: its numbers are read from (page, text, settings, book), once per
    setting, unless given. A shape question shows the shape in words."""
    q = question
    if grade is not None and q.answer_format == Q.ROW:
        draw_sketch(q, grade)
    if q.kind == Q.SPLIT_SHAPE:
        assert isinstance(q.key, tuple)
        st.markdown(f"`queries.view(...).transpose(1, 2)` has shape `{say(q, q.key)}`.")
        return
    n = numbers if numbers is not None else numbers_for(q)
    panel = reveal_panel(q, n) if n is not None else None
    if panel is None:
        return
    caption = draw_marked(q, grade, panel, look=look)
    if caption:
        st.caption(md_escape(caption))


def numbers_for(q: Q.Question) -> Q.Numbers | None:
    """The numbers behind a question, computed from its plain values (shared, once per
    setting)."""
    from ui import cache

    key = ("predict numbers", q.page, q.text, q.settings, q.book)
    return cache.derived.get(key, Q.read, (q.page, q.text, q.settings, q.book))


# --- the plan: what a page draws while a question waits ----------------------------------------
@dataclass
class Plan:
    """One run of a pass page under "Predict first", decided before its layout (by :func:`start`):
    ``homes`` maps where each question is asked (a panel key, a section declared to stand for
    the hidden panel, or a presenter step's key) to it; ``numbers`` are the page's own. With
    "Predict first" off it has no homes and hides nothing.

    The page passes it to whatever draws its numbers: :meth:`panel` draws a question, a hidden
    notice or the answer in a panel's place, :meth:`slot` does so for a section, :meth:`visible`
    keeps the claims about numbers still hidden, :meth:`waiting` says whether the live checks'
    numbers wait, :meth:`opens` which closed part of the page holds a question."""

    page: str
    homes: dict[str, Q.Question]
    numbers: Q.Numbers | None
    steps: tuple[str, ...] = ()  # presenter mode: every step's panel key, in order
    asked: set[str] = field(default_factory=set)  # question ids drawn in this run
    # the computation the panels drawn next come from, for their "Reproduce" scripts
    # (ui.render.drawn_from; None: no script)
    source: PageContext | None = None

    @property
    def questions(self) -> list[Q.Question]:
        seen: dict[str, Q.Question] = {}
        for q in self.homes.values():
            seen.setdefault(question_id(q), q)
        return list(seen.values())

    def pending(self) -> list[Q.Question]:
        return [q for q in self.questions if grade_of(q) is None]

    def conceals(self, keys: Iterable[str]) -> Q.Question | None:
        """The waiting question that hides any of ``keys``, or None."""
        wanted = set(keys)
        for q in self.pending():
            if wanted & set(q.conceals):
                return q
        return None

    def notice_if_hidden(self, keys: Iterable[str]) -> bool:
        """Whether a waiting question hides any of ``keys``; if so, a hidden notice is drawn
        where they would stand."""
        waiting = self.conceals(keys)
        if waiting is not None:
            self.placeholder(waiting)
        return waiting is not None

    def hidden_keys(self) -> set[str]:
        return {key for q in self.pending() for key in q.conceals}

    # --- what the page and ui.render ask ---
    def panel(self, panel: Panel, *, numbers: bool, view: View = View()) -> bool:
        """Before ``ui.render.show`` draws ``panel``: True when the plan drew something in its
        place (the question, a hidden notice, or the panel with the answer marked), False when
        the panel is drawn as usual."""
        q = self.homes.get(panel.key)
        if q is not None:
            if grade_of(q) is None:
                self.ask(q)
                return True
            if view.is_default:
                return self.answered(q, panel, numbers=numbers)
            self.answered(q, None, numbers=numbers)
            return False
        return self.notice_if_hidden({panel.key})

    def slot(self, name: str) -> bool:
        """Whether the page may draw section ``name`` (declared with the panels whose numbers
        it shows, ``attnviz.teach.declared``) now. While a question hides its numbers, draws a
        hidden notice (or the question, where it stands in for the hidden panel) and returns
        False; once answered there, draws the verdict and the marked matrix first."""
        q = self.homes.get(name)
        if q is not None:
            if grade_of(q) is None:
                self.ask(q)
                return False
            self.answered(q, None, numbers=False)
            return True
        return not self.notice_if_hidden(declared.shown_by(name))

    def opens(self, box: str) -> bool:
        """Whether a question of this run is asked (or was answered) in the closed part ``box``
        of the page (``ui/sections.py``): the part is then drawn open."""
        return any(declared.declared(k) and declared.find(k).box == box for k in self.homes)

    def hides(self, panel_key: str) -> bool:
        """Whether a waiting question hides the numbers of panel ``panel_key`` now (a page asks
        before drawing what it says about that panel)."""
        return self.conceals({panel_key}) is not None

    def waiting(self) -> bool:
        """Whether a question waits for its answer (a live check's numbers then wait too: they
        quote the weights and scores the question hides)."""
        return bool(self.pending())

    def visible(self, claims: Iterable[Any]) -> list[Any]:
        """The claims whose panel no waiting question hides (a claim about hidden numbers
        waits)."""
        hidden = self.hidden_keys()
        return [c for c in claims if c.panel not in hidden]

    def gates_step(self, step: Panel) -> bool:
        """Presenter mode: whether :meth:`present_step` draws ``step`` (as a question step, or
        a step hidden while a question waits) rather than the stepper drawing it as usual."""
        if not self.steps:
            return False
        return step.key in self.homes or self.conceals({step.key}) is not None

    def present_step(
        self, index: int, step: Panel, *, look: figures.Look = figures.PROJECTOR
    ) -> bool:
        """Presenter mode: draw step ``index`` as a question step (its question until answered,
        then the verdict and the step with the answer marked, drawn at ``look``: the projector's,
        at the screen's scale) or a hidden step; True when done, False when the stepper should
        draw the step as usual."""
        if not self.steps:
            return False
        q = self.homes.get(step.key)
        if q is not None:
            if grade_of(q) is None:
                self.ask(q, present=True)
                return True
            self.answered(q, step, numbers=False, look=look)
            return True
        return self.notice_if_hidden({step.key})

    # --- drawing ---
    def ask(self, q: Q.Question, *, present: bool = False) -> None:
        qid = question_id(q)
        if qid in self.asked:  # a second place for the same question: only say it is hidden
            self.placeholder(q)
            return
        self.asked.add(qid)
        with st.container(border=True, key=f"predict_box_{qid}"):
            st.markdown(f"**{PREDICT_LABEL}.** " + md_escape(q.prompt))
            answer_widgets(q, f"q_{qid}", on_answer=_recorded)
            if (
                present
            ):  # or the whole class answers it on their phones (ui/classroom/poll_views.py)
                poll.ask_button(q, key=f"poll_ask_{qid}")
            else:
                st.caption(score_line())

    def placeholder(self, q: Q.Question) -> None:
        where = f" (step {self.step_of(q) + 1})" if self.steps else ""
        st.caption(
            ":material/lock: Hidden until you answer the prediction question"
            f"{where}: these numbers would give the answer away."
        )

    def answered(self, q: Q.Question, panel: Panel | None, *, numbers: bool, look=figures.NORMAL):
        """The verdict and the hidden matrix with the answer marked: ``panel`` (the page's own)
        when it draws the question's matrix, else one made from the numbers."""
        grade = grade_of(q)
        assert grade is not None and self.numbers is not None
        with st.container(border=True, key=f"predict_answer_{question_id(q)}"):
            _graded(q, grade)
            if q.answer_format == Q.ROW:
                draw_sketch(q, grade)
            if q.kind == Q.SPLIT_SHAPE:
                reveal(q, grade, numbers=self.numbers)
            matrix = hidden_matrix(q, self.numbers)
            own = panel is not None and matrix is not None and _rows_match(panel, q, matrix)
            if own:
                assert panel is not None
                caption = draw_marked(q, grade, panel, look=look)
                if panel.caption and look is figures.NORMAL:
                    st.caption(panel.caption)
            elif matrix is not None:
                made = reveal_panel(q, self.numbers)
                assert made is not None
                caption = draw_marked(q, grade, made, look=look)
            else:
                caption = ""
            if caption:
                st.caption(md_escape(caption))
            if look is figures.NORMAL:
                st.button(
                    "Next question",
                    key=f"next_{question_id(q)}",
                    on_click=_next,
                    args=("predict", self.page),
                )
        if own and look is figures.NORMAL and panel is not None:
            from ui.numbers import numbers_box

            numbers_box(panel.values, panel.rows, panel.cols, key=panel.key, numbers=numbers)
        return own

    def step_of(self, q: Q.Question) -> int:
        qid = question_id(q)
        for i, key in enumerate(self.steps):
            if key in self.homes and question_id(self.homes[key]) == qid:
                return i
        return 0


def _recorded(q: Q.Question, grade: Q.Grade) -> None:
    """A page's answer: kept for this session (once per question), and the score moved."""
    grades = _store(_GRADES)
    qid = question_id(q)
    if qid in grades:
        return
    grades[qid] = grade
    scores = _store(_SCORES)
    scores["predict"] = Q.scored(scores.get("predict", Q.Score()), grade)


def _page_questions(page, key, numbers_of, seed) -> tuple[Q.Question | None, Q.Numbers]:
    """The page's question at ``seed`` (``questions.choose``) and the numbers behind it."""
    n = numbers_of()
    text, settings, book = key[:3]
    return Q.choose(page, text, settings, book, seed, numbers=n), n


def _step_questions(page, key, numbers_of, seed, steps) -> tuple[dict[str, Q.Question], Q.Numbers]:
    """Presenter mode: for each kind of the page (in an order fixed by the seed), its question
    is asked at the first step that shows a number it hides; one question a step."""
    n = numbers_of()
    text, settings, book = key[:3]
    kinds = list(Q.PAGE_KINDS[page])
    random.Random(f"present:{page}:{seed}").shuffle(kinds)
    homes: dict[str, Q.Question] = {}
    for kind in kinds:
        q = Q.make(kind, page, text, settings, book, seed, n)
        if q is None:
            continue
        first = next((s for s in steps if s in q.conceals), None)
        if first is not None and first not in homes:
            homes[first] = q
    return homes, n


def start(
    page: str,
    key: tuple,
    numbers_of: Callable[[], Q.Numbers],
    *,
    on: bool,
    steps: Sequence[Panel] | None = None,
) -> Plan:
    """This run's plan, before the page lays anything out: with ``on`` ("Predict first"), the
    page's question (or, given the presenter's ``steps``, one per step that a question can
    hide), chosen from the page's own numbers (``numbers_of``:
    :func:`attnviz.teach.questions.numbers_of` on the page's cached traces) and cached for every
    session under ``key`` ((text, settings, book, ...) plain values); without, a plan that hides
    nothing. Every pass page calls it on every run and passes the plan to what it draws."""
    from ui import cache

    if not on:
        return Plan(page, {}, None)
    seed = _seed("predict", page)
    if steps is None:
        q, n = cache.derived.get(
            ("predict question", page, *key, seed),
            lambda: _page_questions(page, key, numbers_of, seed),
        )
        homes = {} if q is None else {q.hides: q}
        if q is not None:  # the sections that stand where the hidden panel would be
            homes |= dict.fromkeys(declared.standing_for(q.hides), q)
        plan = Plan(page, homes, n)
    else:
        keys = tuple(s.key for s in steps)
        homes, n = cache.derived.get(
            ("predict steps", page, *key, seed, keys),
            lambda: _step_questions(page, key, numbers_of, seed, keys),
        )
        plan = Plan(page, dict(homes), n, keys)
    _follow_head(page, plan)
    if steps is None:
        _status(plan)
    return plan


def _follow_head(page: str, plan: Plan) -> None:
    """On the multi-head page, a new question about head h opens "One head in detail" on h."""
    if page != "multihead" or not plan.homes:
        return
    q = next(iter(plan.homes.values()))
    last = _store(_LAST)
    qid = question_id(q)
    if last.get(page) != qid:
        last[page] = qid
        if q.head is not None:
            st.session_state[url.HEAD] = q.head  # the "Head" box of "One head in detail"


def _status(plan: Plan) -> None:
    """Under the switches: where the question waits, or that none is clear here."""
    if not plan.homes:
        st.info(
            "No question is clear at these numbers (every candidate answer is too close to "
            "call). Change the text or a setting for another."
        )
        return
    q = next(iter(plan.homes.values()))
    if grade_of(q) is None:
        st.caption(
            ":material/help: A question waits further down, where its numbers would be. "
            + score_line()
        )


CHECK_NUMBERS_WAIT = "Its numbers wait until you answer the prediction question."


# --- spot the bug ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Posed:
    """A mystery and the panels that show its exhibit (built once, shared)."""

    mystery: MY.Mystery
    panels: tuple[Panel, ...]
    shapes: pd.DataFrame
    sums: pd.DataFrame | None
    signs: pd.DataFrame | None  # the "Signs to check" table (none when the pass raised)


def _labels_for(size: int, labels: tuple[str, ...], name: str) -> tuple[str, ...]:
    if size == len(labels):
        return labels
    return tuple(f"{name} {i}" for i in range(size))


def _exhibit_panel(i: int, shown: MY.Shown, labels: tuple[str, ...]) -> Panel:
    v = shown.values.detach().to(torch.float32)
    rows = _labels_for(v.shape[-2], labels, "row")
    cols = _labels_for(v.shape[-1], labels, "dim")
    finite = v[torch.isfinite(v)]
    weights = shown.name in MY.WEIGHT_NAMES
    if weights and (finite.numel() == 0 or float(finite.min()) >= 0):
        style = Style(zmax=max(1.0, float(finite.max()) if finite.numel() else 1.0))
    else:
        value = "score" if shown.name == MY.SCORES else "value"
        style = Style(colour="signed", value_name=value, row_name="row", col_name="column")
    title = f"{shown.name} {tuple(shown.shape)}"
    if v.dim() == 3:
        title = f"{shown.name} {tuple(shown.shape)}, {{heads}}"
    return Panel(f"mystery_{i}", v, rows, cols, title=title, style=style)


def _sums_frame(ex: MY.Exhibit) -> pd.DataFrame | None:
    if not ex.row_sums:
        return None
    t = len(ex.labels)
    columns = {}
    for name, sums in ex.row_sums:
        if len(sums) == t:
            index = list(ex.labels)
        else:
            index = [f"head {i // t} · {ex.labels[i % t]}" for i in range(len(sums))]
        columns[name] = pd.Series(sums, index=index)
    frame = pd.DataFrame(columns)
    frame.index.name = "row"
    return frame


def _posed(page: str, text: str, settings, book: bool, seed: int) -> Posed | None:
    """The mystery of ``seed`` (``mystery.pose``), its bugs' candidates found once for every
    session's seed at these settings."""
    from ui import cache

    found = cache.derived.get(
        ("mystery candidates", page, text, settings, book),
        MY.candidates,
        (page, text, settings, book),
    )
    if not found:
        return None
    m = MY.stage(page, text, settings, book, MY.pick(page, found, seed), seed)
    if m is None:
        return None
    ex = m.exhibit
    panels = tuple(_exhibit_panel(i, s, ex.labels) for i, s in enumerate(ex.shown))
    shapes = pd.DataFrame(
        {"tensor": [s.name for s in ex.shown], "shape": [str(s.shape) for s in ex.shown]}
    )
    signs = None
    if ex.signs:
        signs = pd.DataFrame(  # the numbers first: a phone shows them without scrolling
            {
                "measured": [g.value for g in ex.signs],
                "right code": [g.expected for g in ex.signs],
                "sign": [g.what for g in ex.signs],
            }
        )
    return Posed(m, panels, shapes, _sums_frame(ex), signs)


def mystery_id(m: MY.Mystery) -> str:
    text = json.dumps([m.page, m.text, repr(m.settings), m.book, m.seed])
    return hashlib.blake2b(text.encode(), digest_size=10).hexdigest()


def _diagnosed(mid: str, m: MY.Mystery, choice: int) -> None:
    found = _store(_DIAGNOSES)
    if mid in found:
        return
    diagnosis = MY.diagnose(m, m.choices[choice].key)
    found[mid] = diagnosis
    scores = _store(_SCORES)
    s = scores.get("mystery", Q.Score())
    right = diagnosis.right
    scores["mystery"] = Q.Score(s.answered + 1, s.right + right, s.streak + 1 if right else 0)


def _diagnose_submitted(mid: str, m: MY.Mystery) -> None:
    errors = _store(_ERRORS)
    choice = st.session_state.get(f"m_{mid}_choice")
    if choice is None:
        errors[f"m_{mid}"] = "Pick a diagnosis first."
        return
    errors.pop(f"m_{mid}", None)
    _diagnosed(mid, m, int(choice))


def mystery_page(page: str, key: tuple) -> None:
    """The "Spot the bug" view of a pass page, in place of its lesson: the exhibit (tensors,
    shapes, row sums, or the error raised), the diagnosis, and after it the reveal."""
    from ui import cache
    from ui.render import badge, formatted_table, show

    text, settings, book = key[:3]
    seed = _seed("mystery", page)
    name = ("mystery", page, text, settings, book, seed)
    if name in cache.derived:
        posed = cache.derived.get(name, _posed, (page, text, settings, book, seed))
    else:
        with st.spinner("Choosing a mystery…"):
            posed = cache.derived.get(name, _posed, (page, text, settings, book, seed))
    st.header(MYSTERY_LABEL)
    if posed is None:
        st.info("This page cannot run at these settings, so there is no mystery to pose.")
        return
    m, ex = posed.mystery, posed.mystery.exhibit
    mid = mystery_id(m)
    st.write(
        "One classic bug of this pass (one line away from the engine's code) may be switched "
        "on, or none. Here is what the pass computed. Which is it?"
    )
    s = ex.setup
    st.caption(
        f"{s.tokens} tokens · d_in {s.d_in} · d_out {s.d_out} · {s.num_heads} head(s) of "
        f"{s.head_dim} · context_length {s.context_length} · dropout {s.dropout:g} · "
        + ("training mode" if s.training else "eval mode")
    )
    if ex.error is not None:
        st.error("The pass did not run. PyTorch raised:")
        st.code(ex.error, language="text", wrap_lines=True)
    st.dataframe(posed.shapes, hide_index=True)
    for panel in posed.panels:
        show(panel, numbers=False)
    if posed.sums is not None:
        st.markdown("**Row sums of the weights**")
        formats = {c: st.column_config.NumberColumn(format="%.4f") for c in posed.sums.columns}
        st.dataframe(posed.sums, column_config=formats)
    if posed.signs is not None:
        st.markdown("**Signs to check**")
        st.caption(
            "Each sign is measured on the tensors above, beside what right code (the engine's "
            "own) gives. A sign that is off is a symptom: which bug gives it?"
        )
        formatted_table(posed.signs, {"measured": "%.4f", "right code": "%.0f"}, width="small")
    diagnosis = _store(_DIAGNOSES).get(mid)
    titles = [c.title for c in m.choices]
    if diagnosis is None:
        with st.form(f"m_{mid}_form"):
            st.radio(
                "Your diagnosis",
                list(range(len(titles))),
                index=None,
                format_func=lambda i: md_escape(titles[i]),
                key=f"m_{mid}_choice",
            )
            st.form_submit_button(
                "Diagnose", type="primary", on_click=_diagnose_submitted, args=(mid, m)
            )
        message = _store(_ERRORS).get(f"m_{mid}")
        if message:
            st.warning(message)
        st.caption(score_line("mystery"))
        return
    r = diagnosis.reveal
    if diagnosis.right:
        st.success(md_escape(f"Right: {r.title}."))
    else:
        st.error(md_escape(f"Not this time. It was: {r.title}."))
    st.write(md_escape(r.summary))
    if r.diff:
        st.markdown("**The one line that changed**")
        st.code(r.diff, language="diff")
    if r.check is not None:
        badge(r.check)
    if r.error:
        st.code(f"RuntimeError: {r.error}", language="text", wrap_lines=True)
        if r.why:
            st.write(md_escape("Why: " + r.why + "."))
    st.caption(score_line("mystery"))
    st.button("Another mystery", key=f"m_{mid}_next", on_click=_next, args=("mystery", page))
