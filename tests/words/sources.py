"""Where the app's sentences come from, as (source, text) pairs for the spell check.

- the data files: every part of attnviz/teach/lessons/story.toml but the formulas, ui/intros.toml's
  titles and paragraphs;
- every lesson object the pages draw, at several settings (the defaults, book mode, training
  with dropout 0.5, 4 heads, a 60-token text): each claim, panel title, sentence and caption,
  presenter step, check title and detail, and every other string field they hold;
- the bugs: titles, symptoms, why they slip or clash, the settings that hide them (hidden
  reasons), and each one's run: its check, sentences and verdict;
- the sentences the page files and ui/ write themselves.
"""

from __future__ import annotations

import ast
import dataclasses
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from string import Template

import pandas as pd
import torch

from attnviz import figures
from attnviz.core import trace as tracing
from attnviz.core.inputs import BOOK_TEXT
from attnviz.core.settings import BOOK, Settings
from attnviz.models import toy_tasks as learn
from attnviz.teach import bugs, prepare
from attnviz.teach.checks import CheckResult
from attnviz.teach.lessons import causal, home, multihead, simplified, trainable
from attnviz.teach.lessons import watch_learn as learn_lesson
from attnviz.teach.panel import Claim, Panel

ROOT = Path(__file__).resolve().parents[2]
Sentences = Iterator[tuple[str, str]]

TEXT2 = "Every effort moves you forward"
# About 60 tokens of plain English: long enough for the token window and the long-text words.
LONG_TEXT = (
    "The quick brown fox jumps over the lazy dog while the cat sleeps on the warm mat near the "
    "open window, and the children laugh in the garden as the sun goes down behind the old "
    "stone wall at the end of a long summer day in the quiet little town by the river."
)
# name -> (text, second text, settings, book)
SETTINGS: dict[str, tuple[str, str, Settings, bool]] = {
    "defaults": (BOOK_TEXT, TEXT2, Settings(), False),
    "book": ("", "", Settings(**BOOK), True),
    "training p=0.5": (BOOK_TEXT, TEXT2, Settings(training=True, dropout=0.5), False),
    "4 heads": (BOOK_TEXT, TEXT2, Settings(num_heads=4), False),
    "60 tokens": (LONG_TEXT, LONG_TEXT, Settings(context_length=64), False),
}
# Fields that hold code, LaTeX, keys or the student's own text, not sentences.
NOT_PROSE = {
    "constructor",
    "formula",
    "code",
    "key",
    "name",
    "kind",
    "prop",
    "panel",
    "status",
    "labels",
    "rows",
    "cols",
    "zero_rows",  # names the student's tokens
}


# --- the data files ------------------------------------------------------------------------
class _Digits(dict):
    """Every $field reads as a digit: the words around it are checked, the field is not (what
    code fills in is checked where the lessons fill it)."""

    def __missing__(self, key):
        return "0"


def story() -> Sentences:
    entries = tomllib.loads((ROOT / "attnviz/teach/lessons/story.toml").read_text(encoding="utf-8"))
    for key, parts in entries.items():
        for part, text in parts.items():
            if part != "formula":
                yield f"story.toml [{key}] {part}", Template(text).substitute(_Digits())


def intros() -> Sentences:
    entries = tomllib.loads((ROOT / "ui/intros.toml").read_text(encoding="utf-8"))
    for page, parts in entries.items():
        for part in ("title", "text"):
            if part in parts:
                yield f"intros.toml [{page}] {part}", parts[part]


# --- lesson objects ------------------------------------------------------------------------
def strings_of(obj, where: str, depth: int = 0) -> Sentences:
    """Every sentence an object the pages draw from holds, with the path to it."""
    if depth > 6 or obj is None:
        return
    if isinstance(obj, str):
        if not re.fullmatch(r"[a-z0-9_]+", obj):  # a key ("simple_scores"), not a sentence
            yield where, obj
    elif isinstance(obj, Claim):
        yield f"{where} (claim)", obj.text
    elif isinstance(obj, CheckResult):
        yield f"{where} (check {obj.name}: title)", obj.title
        yield f"{where} (check {obj.name}: detail)", obj.detail
    elif isinstance(obj, Panel):
        yield f"{where} [{obj.key}] title", figures.title_of(obj.figure)
        for part in ("caption", "sentence"):
            yield f"{where} [{obj.key}] {part}", getattr(obj, part)
    elif isinstance(obj, figures.Chart):  # a bar or line chart: its title and its series' names
        yield f"{where} (chart title)", obj.title
        for series in obj.series:
            yield f"{where} (series name)", series.name
    elif isinstance(obj, (pd.DataFrame, torch.Tensor)):
        return  # tables hold numbers and code names
    elif isinstance(obj, dict):
        for key, value in obj.items():
            yield from strings_of(value, f"{where}[{key}]", depth + 1)
    elif isinstance(obj, (tuple, list)):
        for i, value in enumerate(obj):
            yield from strings_of(value, f"{where}[{i}]", depth + 1)
    elif dataclasses.is_dataclass(obj):
        for f in dataclasses.fields(obj):
            if f.name not in NOT_PROSE:
                yield from strings_of(getattr(obj, f.name), f"{where}.{f.name}", depth + 1)
        for name in ("steps", "claims"):  # properties the pages read
            if name in dir(type(obj)) and isinstance(getattr(type(obj), name), property):
                yield from strings_of(getattr(obj, name), f"{where}.{name}", depth + 1)


def lessons(name: str) -> Sentences:
    """Every page's lesson objects at the named settings (SETTINGS)."""
    text, text2, s, book = SETTINGS[name]
    prep = prepare.prepare(text, s, use_book=book)
    yield from strings_of(home.home_lesson(prep), f"{name}: home")
    tr1 = prepare.simplified(prep)
    yield from strings_of(simplified.simplified_lesson(tr1, book), f"{name}: pass 1")
    yield from strings_of(simplified.query_view(tr1, 1, 1, 0, book), f"{name}: pass 1 query")
    v2, v1 = prepare.trainable(prep, s, "v2"), prepare.trainable(prep, s, "v1")
    wide_s = trainable.wide_settings(s, book)
    wide = prepare.trainable(prep, wide_s, "v2") if wide_s else None
    yield from strings_of(trainable.trainable_lesson(v2, v1, wide, book), f"{name}: pass 2")
    ctx = 6 if book else s.context_length
    within, _ = prepare.within_context(prep, ctx)
    tr3 = prepare.causal(within, s)
    lab = prepare.causal(within, s.with_changes(training=True)) if not book and s.dropout else None
    batch = prepare.prepare_batch(text, text2, s, book)
    bt = prepare.causal_batch(batch, s, book) if batch.num_tokens else None
    lesson3 = causal.causal_lesson(tr3, lab, bt, batch.labels, settings=s, book=book)
    yield from strings_of(lesson3, f"{name}: pass 3")
    tr4 = prepare.multihead(within, s)
    wrapper = prepare.wrapper(within, s) if book else None
    yield from strings_of(multihead.preface(s, book), f"{name}: pass 4 preface")
    yield from strings_of(multihead.build(tr4, wrapper, book), f"{name}: pass 4")
    for h in range(tr4.num_heads):
        yield from strings_of(multihead.head_view(tr4, h), f"{name}: pass 4 head {h}")


def learn_page() -> Sentences:
    """Page 5 on both tasks, trained briefly (its words depend on the run's numbers)."""
    for cfg in (learn.LearnConfig(steps=2), learn.LearnConfig(task="marked", num_heads=2, steps=2)):
        where = f"learn {cfg.task} {cfg.num_heads}h"
        yield from strings_of(learn_lesson.task_view(cfg), where)
        yield from strings_of(learn_lesson.lesson(learn.train(cfg)), where)


# --- the bugs -------------------------------------------------------------------------------
# Settings that hide each kind of bug: (tokens, heads, key width, dropout, context_length).
HIDING = [(1, 2, 8, 0.1, 32), (6, 1, 8, 0.1, 32), (6, 2, 1, 0.1, 32), (6, 2, 8, 0.0, 32)]
HIDING += [(6, 2, 8, 0.1, 6), (6, 1, 16, 0.0, 32)]


def bug_texts() -> Sentences:
    """Each bug's own words: title, symptom, why it slips or clashes, when it shows and the
    reasons the settings give for hiding it."""
    fields = {"weights": "0.1", "output": "0.1", "margin": "2", "ctx": "8", "T": "6"}
    fields |= {"scores": "2, 6, 6"}
    for bug in bugs.BUGS:
        where = f"bug {bug.key}"
        yield f"{where}: title", bug.title
        yield f"{where}: symptom", bug.symptom
        yield f"{where}: slips_when", bug.slips_when.format_map(bugs._Fields(fields))
        if bug.clash:
            yield f"{where}: clash", bug.clash.format(**fields)
        for case in HIDING:
            reason = bug.hidden_reason(*case)
            if reason:
                yield f"{where}: hidden at {case}", reason


def bug_runs() -> Sentences:
    """Each bug run at three settings: its check, the correct code's, why it raises, what its
    matrices are called, the sentences beside them and the verdict."""
    for name in ("defaults", "book", "training p=0.5"):
        text, text2, s, book = SETTINGS[name]
        prep = prepare.prepare(text, s, use_book=book)
        inputs = {
            "simplified": (prepare.simplified(prep).inputs, None),
            "trainable": (prepare.trainable(prep, s).inputs, prepare.trainable(prep, s).spec),
            "causal": _batch(text, text2, s, book),
            "multihead": (prepare.multihead(prep, s).inputs, prepare.multihead(prep, s).spec),
        }
        for bug in bugs.BUGS:
            found, right = bugs.outcome(bug.key, *inputs[bug.pass_kind])
            where = f"{name}: bug {bug.key} run"
            for part in ("why", "error", "verdict"):
                if part != "error":
                    yield from strings_of(getattr(found, part), f"{where}: {part}")
            yield from strings_of(found.check, where)
            yield from strings_of(right, f"{where} (correct code)")
            yield from strings_of(found.sentences, f"{where}: sentences")
            yield from strings_of(tuple(m.title for m in found.shown), f"{where}: titles")


def _batch(
    text: str, text2: str, s: Settings, book: bool
) -> tuple[torch.Tensor, tracing.ModuleSpec]:
    bt = prepare.causal_batch(prepare.prepare_batch(text, text2, s, book), s, book)
    return bt.inputs, bt.spec


# --- what the pages and ui/ write themselves ------------------------------------------------
# Calls whose strings are code, LaTeX, a graph or CSS, not prose.
_CODE_CALLS = {"code", "latex", "formula", "graphviz_chart", "html"}


def _skipped(tree: ast.AST) -> set[int]:
    """Nodes whose strings are not prose: docstrings, the arguments of the calls above, and
    what is assigned to a name with CSS in it."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                skip.add(id(first.value))
        inside = None
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in _CODE_CALLS:
                inside = node
        elif isinstance(node, ast.Assign) and any(
            "CSS" in getattr(t, "id", "") for t in node.targets
        ):
            inside = node
        if inside is not None:
            skip |= {id(n) for n in ast.walk(inside)}
    return skip


def _literals(path: Path) -> Sentences:
    """The string constants of a module that read as sentences (three words or more): what it
    passes to st.write, st.caption, ... (f-strings: their literal parts)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = _skipped(tree)
    for node in ast.walk(tree):
        if id(node) in docstrings:
            continue
        if isinstance(node, ast.JoinedStr):
            text = " ".join(
                v.value
                for v in node.values
                if isinstance(v, ast.Constant) and isinstance(v.value, str)
            )
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) in docstrings:
                continue
            text = node.value
        else:
            continue
        if len(text.split()) >= 3 and "\n    " not in text:  # a sentence, not a code block
            yield f"{path.relative_to(ROOT)}:{node.lineno}", text


def pages_and_ui() -> Sentences:
    for folder in ("pages", "ui"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            yield from _literals(path)
    yield from _literals(ROOT / "app.py")
