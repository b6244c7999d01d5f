"""Spot the bug: a classifier that sees only what the page shows names each bug; settings
where a bug cannot be seen are never posed; the exhibit carries no bug name; the revealed diff
is the line the engine ran."""

from __future__ import annotations

import functools
import random

import pytest
import torch

from attnviz.core import modules as M
from attnviz.core.inputs import BOOK_TEXT
from attnviz.core.seeding import seeded
from attnviz.core.settings import Settings
from attnviz.core.trace import record
from attnviz.teach import bugs, prepare
from attnviz.teach import mystery as MY

from .classifier import classify
from .settings import random_case

TEXT = "Your journey starts with one step"
SETTINGS_PER_BUG = 100
NAMED_AT_LEAST = 0.95
CASES = [
    (page, key) for page in MY.PAGES for key in (MY.NONE, *(b.key for b in bugs.bugs_for(page)))
]


@functools.cache
def _showing(page: str, count: int) -> dict[str, tuple[tuple[str, Settings], ...]]:
    """For each answer of the page (NONE and its bugs): ``count`` random settings at which it
    can be posed, from one seeded scan of random texts and settings."""
    rng = random.Random(f"showing:{page}")
    found: dict[str, list[tuple[str, Settings]]] = {key: [] for p, key in CASES if p == page}
    for _ in range(40 * count):
        text, s = random_case(rng)
        for key in MY.candidates(page, text, s):
            if len(found[key]) < count:
                found[key].append((text, s))
        if all(len(v) == count for v in found.values()):
            return {key: tuple(v) for key, v in found.items()}
    raise AssertionError(f"some answer showed at fewer than {count} settings: {found.keys()}")


def _named(page: str, key: str, count: int) -> int:
    named = 0
    for text, s in _showing(page, count)[key]:
        m = MY.stage(page, text, s, False, key)
        named += classify(m.exhibit) == key
        if key != MY.NONE:  # the reveal names the check that catches it, or the error
            assert m.reveal.error or m.reveal.check.status == "fail", m.reveal.summary
    return named


# --- a classifier that sees only the exhibit names the bug -------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize(("page", "key"), CASES)
def test_a_classifier_of_what_the_page_shows_names_each_bug_over_100_settings(page, key):
    named = _named(page, key, SETTINGS_PER_BUG)
    print(f"{page} {key}: named {named} of {SETTINGS_PER_BUG}")
    assert named / SETTINGS_PER_BUG >= NAMED_AT_LEAST


@pytest.mark.parametrize(("page", "key"), CASES)
def test_the_classifier_names_each_bug_at_a_few_settings(page, key):
    assert _named(page, key, 3) == 3


# --- never posed where it cannot be seen (enumerated) ------------------------------------------
ONE_TOKEN = "Hello"
HIDDEN = [
    ("dropout_in_eval", "causal", TEXT, Settings(dropout=0.0), False, "dropout p = 0"),
    ("dropout_in_eval", "causal", TEXT, Settings(dropout=0.5, training=True), False,
     "training mode: the dropout the bug turns on is on anyway"),
    ("dropout_in_eval", "causal", BOOK_TEXT, Settings(dropout=0.5), True,
     "book mode runs the chapter's dropout 0"),
    ("unsliced_mask", "causal", TEXT, Settings(context_length=6), False,
     "a mask that covers every position: T = context_length = 6"),
    ("unsliced_mask", "causal", TEXT, Settings(context_length=4), False,
     "the text is cut to context_length, so T = context_length again"),
    ("unsliced_mask", "causal", BOOK_TEXT, Settings(), True, "the book's T = context_length = 6"),
    ("scale_by_d_out", "multihead", TEXT, Settings(num_heads=1), False, "one head: d_out = head_dim"),
    ("split_without_transpose", "multihead", TEXT, Settings(num_heads=1), False,
     "one head: nothing to mix across heads"),
    ("no_scaling", "trainable", TEXT, Settings(d_out=1), False, "d_k = 1: √1 = 1"),
    ("softmax_wrong_axis", "simplified", ONE_TOKEN, Settings(), False, "one token"),
    ("divide_by_sum", "simplified", ONE_TOKEN, Settings(), False, "one token: s / s = 1"),
    ("no_scaling", "trainable", ONE_TOKEN, Settings(), False, "one token: its weight is 1"),
    ("mask_with_zero", "causal", ONE_TOKEN, Settings(), False, "one token: no future key"),
    ("renormalize_without_mask", "causal", ONE_TOKEN, Settings(), False, "one token: no future"),
    ("scale_by_d_out", "multihead", ONE_TOKEN, Settings(), False, "one token: its weight is 1"),
    ("split_without_transpose", "multihead", ONE_TOKEN, Settings(d_in=1, d_out=2), False,
     "one token and head_dim 1: the wrong view reads the same numbers"),
    ("global_transpose", "causal", ONE_TOKEN, Settings(d_in=4, d_out=1), False,
     "one example of one token and d_out = 1: reversing the dims changes nothing"),
]  # fmt: skip


@pytest.mark.parametrize(("key", "page", "text", "settings", "book", "why"), HIDDEN)
def test_a_bug_is_never_posed_where_it_cannot_be_seen(key, page, text, settings, book, why):
    found = MY.candidates(page, text, settings, book)
    assert found and key not in found, why
    for seed in range(3):  # pose picks among the candidates only
        assert MY.pose(page, text, settings, book, seed).answer in found


SHOWING_TEXT = "the cat sat on a mat and the dog sat on the cat"
SHOWING = Settings(d_in=4, d_out=8, num_heads=2, dropout=0.5, context_length=32)


@functools.cache
def _showing_here(page: str) -> tuple[str, ...]:
    return MY.candidates(page, SHOWING_TEXT, SHOWING)


@pytest.mark.parametrize("key", sorted({h[0] for h in HIDDEN}))
def test_each_enumerated_bug_shows_at_other_settings(key):
    """The enumeration is not empty talk: each of those bugs is posable at these settings."""
    assert key in _showing_here(bugs.BUGS_BY_KEY[key].pass_kind)


# --- what the page may show ------------------------------------------------------------------
def test_the_exhibit_names_no_bug_and_shows_the_same_tensors_as_without_one():
    s, text = SHOWING, SHOWING_TEXT
    words = set()
    for bug in bugs.BUGS:
        words |= {bug.key, bug.title, bug.check, bugs.live_checks.TITLES.get(bug.check, bug.check)}
    for page in MY.PAGES:
        plain = MY.stage(page, text, s, False, MY.NONE).exhibit
        for key in _showing_here(page):
            ex = MY.stage(page, text, s, False, key).exhibit
            strings = [ex.page, *ex.labels, *(x.name for x in ex.shown), *dict(ex.row_sums)]
            strings += [ex.error or ""]
            assert not any(w in t for w in words for t in strings), (page, key)
            if ex.error is None:  # the same tensors, shapes and row sums are on show
                assert [x.name for x in ex.shown] == [x.name for x in plain.shown]
                assert ex.shapes == plain.shapes
                assert [n for n, _ in ex.row_sums] == [n for n, _ in plain.row_sums]
            assert ex.setup == plain.setup


def test_without_a_bug_the_exhibit_is_the_pages_own_trace():
    s = Settings(d_in=4, d_out=8, num_heads=2, dropout=0.5, training=True)
    prep, _ = prepare.within_context(prepare.prepare(TEXT, s), s.context_length)
    traces = {
        "simplified": prepare.simplified(prep),
        "trainable": prepare.trainable(prep, s),
        "causal": prepare.causal(prep, s),
        "multihead": prepare.multihead(prep, s),
    }
    for page, tr in traces.items():
        ex = MY.stage(page, TEXT, s, False, MY.NONE).exhibit
        first = (lambda t: t) if page in ("simplified", "trainable") else (lambda t: t[0])
        assert torch.equal(ex.get(MY.WEIGHTS), first(tr.attn_weights))
        assert torch.equal(ex.get(MY.SCORES), first(tr.attn_scores))
        if page in ("causal", "multihead"):
            assert torch.equal(ex.get(MY.DROPPED), tr.weights_dropped[0])  # the same dropout draw
            assert not torch.equal(ex.get(MY.DROPPED), ex.get(MY.WEIGHTS))


def test_a_posable_bug_changes_what_the_page_shows_by_at_least_VISIBLE():
    for page in MY.PAGES:
        for key, cases in _showing(page, 3).items():
            for text, s in cases:
                wrong = MY.stage(page, text, s, False, key).exhibit
                right = MY.stage(page, text, s, False, MY.NONE).exhibit
                assert (MY.change(wrong, right) >= MY.VISIBLE) is (key != MY.NONE)


def test_pose_is_deterministic_and_picks_every_candidate_about_equally():
    found = _showing_here("causal")
    assert len(found) == 6  # no bug, and all five causal bugs show at these settings
    answers = [MY.pick("causal", found, seed) for seed in range(600)]
    assert answers == [MY.pick("causal", found, seed) for seed in range(600)]
    assert all(60 <= answers.count(key) <= 140 for key in found)
    m = MY.pose("causal", SHOWING_TEXT, SHOWING, False, 5)
    assert m.answer == answers[5] and m.seed == 5
    assert m == MY.pose("causal", SHOWING_TEXT, SHOWING, False, 5)


def test_a_diagnosis_is_graded_and_the_reveal_names_the_check():
    s = Settings(d_in=4, d_out=8, num_heads=2, dropout=0.5, context_length=32)
    m = MY.stage("causal", TEXT, s, False, "mask_with_zero")
    assert MY.diagnose(m, "mask_with_zero").right
    wrong = MY.diagnose(m, MY.NONE)
    assert not wrong.right and wrong.answer == "mask_with_zero"
    assert wrong.reveal.check is not None and wrong.reveal.check.name == "no_future_leak"
    assert not wrong.reveal.check.passed
    assert "No future leak" in wrong.reveal.summary
    with pytest.raises(ValueError, match="Pick one of"):
        MY.diagnose(m, "not a bug")
    assert [c.key for c in m.choices] == [*(b.key for b in bugs.bugs_for("causal")), MY.NONE]


def test_the_reveal_of_a_bug_that_raises_quotes_the_error():
    m = MY.stage("causal", TEXT, Settings(), False, "unsliced_mask")
    assert m.exhibit.error is not None and m.exhibit.shown[0].name == MY.INPUTS
    assert m.reveal.error == m.exhibit.error
    assert "32" in m.reveal.why and m.reveal.check is None


# --- the revealed diff is the line the engine ran ----------------------------------------------
def _apply(diff: str, source: str) -> str:
    """The engine's source with the bug put back: the diff goes from the bug to the fix, so
    its one added line (the engine's) is replaced by its one removed line (the bug's)."""
    lines = diff.splitlines()[2:]
    bug = [ln[1:] for ln in lines if ln.startswith("-")]
    fix = [ln[1:] for ln in lines if ln.startswith("+")]
    assert len(bug) == len(fix) == 1, diff
    assert source.count(fix[0] + "\n") == 1
    return source.replace(fix[0] + "\n", bug[0] + "\n")


def _patched(diff: str, target: str):
    """The engine's ``target`` with ``diff`` applied, compiled beside the engine's code."""
    namespace = dict(vars(M))
    source = _apply(diff, bugs.source_of(getattr(M, target)))
    exec(compile(source, f"<diff applied to {target}>", "exec"), namespace)
    return namespace[target]


TAPS = {"attn_scores": MY.SCORES, "attn_weights": MY.WEIGHTS, "weights_dropped": MY.DROPPED}


@pytest.mark.parametrize("key", [b.key for b in bugs.BUGS])
def test_the_revealed_diff_applied_to_the_engines_code_gives_what_the_page_showed(key):
    bug = bugs.BUGS_BY_KEY[key]
    s = Settings(d_in=4, d_out=8, num_heads=2, dropout=0.5, context_length=32)
    m = MY.stage(bug.pass_kind, TEXT, s, False, key)
    spec = {
        "simplified": None,
        "trainable": prepare.spec_trainable(s),
        "causal": prepare.spec_causal(s),
        "multihead": prepare.spec_multihead(s),
    }[bug.pass_kind]
    assert m.reveal.diff == bug.diff(spec)
    code = _patched(m.reveal.diff, bug.target(spec))
    prep = prepare.prepare(TEXT, s)
    x = prep.x[0] if bug.pass_kind in ("simplified", "trainable") else prep.x
    module = spec.build().eval() if spec is not None else None
    with torch.inference_mode(), seeded(s.seed_dropout):
        try:
            if bug.where == "route1":
                queries, keys = module.W_query(x), module.W_key(x)
                got = {MY.ROUTE1: code(queries, keys, module.mask)}
            else:
                run = code if spec is None else (lambda x: code.forward(module, x))
                _, taps = record(lambda: run(x))
                got = {TAPS[tap]: t[0] for tap, t in taps.items() if tap in TAPS}
        except RuntimeError as err:
            assert str(err) == m.exhibit.error
            return
    assert m.exhibit.error is None
    right = MY.stage(bug.pass_kind, TEXT, s, False, MY.NONE).exhibit
    changed = 0
    for name, tensor in got.items():
        shown = m.exhibit.get(name)
        assert torch.equal(tensor if x.dim() == 2 else tensor[0], shown), name
        changed += not torch.equal(shown, right.get(name))
    assert changed, "the diff ran and changed a tensor the page shows"


# --- every bug shows a symptom the page lets the student point at (issue 37) ----------------
@pytest.mark.parametrize("page", MY.PAGES)
def test_every_posed_bug_breaks_a_sign_to_check_or_raises_and_right_code_breaks_none(page):
    rng = random.Random(f"signs:{page}")
    posed = set()
    for _ in range(25):
        text, s = random_case(rng)
        for key in MY.candidates(page, text, s):
            ex = MY.stage(page, text, s, False, key).exhibit
            if key == MY.NONE:
                assert ex.error is None and ex.signs and ex.symptoms == (), ex.symptoms
                continue
            posed.add(key)
            assert ex.error is not None or ex.symptoms, (key, text, s)
            if ex.error is None:  # the same measurements as right code's, named alike
                right = MY.stage(page, text, s, False, MY.NONE).exhibit
                assert [g.what for g in ex.signs] == [g.what for g in right.signs]
    assert posed, f"no bug of {page} was posed"


def test_a_sign_to_check_names_no_bug():
    titles = [b.title for b in bugs.BUGS] + [b.key for b in bugs.BUGS]
    for page in MY.PAGES:
        for key in (MY.NONE, *(b.key for b in bugs.bugs_for(page))):
            for sign in MY.stage(page, TEXT, Settings(), False, key).exhibit.signs:
                assert not [t for t in titles if t.lower() in sign.what.lower()], sign.what
