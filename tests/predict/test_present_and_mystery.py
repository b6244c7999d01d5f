"""The presenter's question step, and "Spot the bug" on the page (AppTest)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from attnviz.teach import bugs
from attnviz.teach import mystery as MY
from attnviz.teach import questions as Q
from tests.app.conftest import badges, exceptions, open_app, unescape

from .answer import give, prompts, verdicts
from .pages import Setting, numbers, secret
from .seen import chart_arrays, seen

PROMPT = "**Predict first.** "


def _steps(page: str, query: dict[str, str], count: int):
    """Every presenter step of ``page`` with "Predict first" on: (step, its run)."""
    for step in range(1, count + 1):
        at = open_app({**query, "present": "true", "predict": "true", "step": str(step)}, page)
        assert not exceptions(at)
        yield step, at


def test_a_presenter_step_asks_its_question_before_it_shows_anything_it_hides():
    s = Setting.of("causal", {})
    n = numbers(s)
    made = {}
    for kind in Q.PAGE_KINDS["causal"]:
        q = Q.make(kind, "causal", s.text, s.settings, s.book, 0, n)
        if q is not None:
            made[q.prompt] = q
    asked: dict[int, Q.Question] = {}
    runs = dict(_steps("causal", {}, 6))
    for step, at in runs.items():
        found = prompts(at)
        if found:
            asked[step] = made[found[0].removeprefix(PROMPT)]
            assert not list(at.get("plotly_chart"))
        if [c for c in at.caption if "Hidden until you answer" in c.value]:
            assert not list(at.get("plotly_chart"))
    assert len(asked) >= 2  # the raw scores' step and the weights' step at least
    assert len({q.kind for q in asked.values()}) == len(asked)
    for at in runs.values():  # no step shows a number a waiting question hides
        for q in asked.values():
            assert seen(at).leaks(secret(s, q)) == {}
    step, q = next(iter(asked.items()))
    at = give(runs[step], q, q.key)
    assert verdicts(at)[0].startswith("Right")
    marked = [c for c in at.get("plotly_chart") if c.proto.id.endswith("_answer")]
    assert len(marked) == 1
    drawn = np.concatenate(chart_arrays(json.loads(marked[0].proto.spec)))
    hidden = secret(s, q).matrix.numpy()
    assert np.isin(hidden[np.isfinite(hidden)], drawn).all()


# --- spot the bug ---------------------------------------------------------------------------------
MYSTERY_SEEDS = "_attnviz_predict_seeds"


def _posed(page: str, text: str, want) -> tuple[int, MY.Mystery]:
    s = Setting.of(page, {"text": text})
    for seed in range(40):
        m = MY.pose(page, text, s.settings, False, seed)
        if m is not None and want(m):
            return seed, m
    raise AssertionError(f"no such mystery on {page}")


def _open_mystery(page: str, text: str, seed: int):
    at = open_app({"text": text, "mystery": "true"}, page)
    at.session_state[MYSTERY_SEEDS] = {("mystery", page): seed}
    return at.run()


def _all_text(at) -> str:
    return "\n".join(seen(at).text.splitlines())


TEXT = "Your journey starts with one step"


@pytest.mark.parametrize(
    ("page", "want"),
    [
        ("causal", lambda m: m.answer == "mask_with_zero"),
        ("multihead", lambda m: m.answer not in (MY.NONE,) and not m.reveal.error),
        ("simplified", lambda m: m.answer == MY.NONE),
    ],
    ids=["causal-mask_with_zero", "multihead-a-bug", "simplified-no-bug"],
)
def test_spot_the_bug_shows_the_exhibit_and_names_nothing_until_the_diagnosis(page, want):
    seed, m = _posed(page, TEXT, want)
    at = _open_mystery(page, TEXT, seed)
    assert not exceptions(at)
    text = unescape(_all_text(at))
    # The exhibit: every tensor, with the numbers the engine computed, and its shape.
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    assert len(specs) == len(m.exhibit.shown)
    for shown, spec in zip(m.exhibit.shown, specs, strict=True):
        drawn = np.concatenate(chart_arrays(spec))
        values = shown.values.numpy().astype(np.float32).reshape(-1)
        assert np.isin(values[np.isfinite(values)], drawn).all(), shown.name
        assert str(tuple(shown.shape)) in text
    sums = [df.value for df in at.dataframe if "row" == df.value.index.name]
    assert len(sums) == 1
    for name, row in m.exhibit.row_sums:
        assert np.allclose(sums[0][name].to_numpy(), row, atol=1e-6)
    # the signs to check: the engine's measurements, the symptom among them when there is one
    (signs,) = [df.value for df in at.dataframe if "sign" in df.value.columns]
    assert list(signs["sign"]) == [g.what for g in m.exhibit.signs]
    assert np.allclose(signs["measured"], [g.value for g in m.exhibit.signs], atol=1e-6)
    assert bool(m.exhibit.symptoms) is (m.answer != MY.NONE)
    # Nothing names the bug: no badge, no diff, no symptom, no check, no key.
    assert badges(at) == []
    assert not [c for c in at.code if c.language == "diff"]
    if m.answer != MY.NONE:
        bug = bugs.BUGS_BY_KEY[m.answer]
        for secret_text in (bug.key, bug.symptom, bug.replacement, m.reveal.summary):
            assert secret_text not in text, secret_text
    titles = [c.title for c in m.choices]
    radio = [r for r in at.radio if r.key and r.key.startswith("m_")]
    assert len(radio) == 1
    assert [unescape(o) for o in radio[0].options] == titles
    for title in titles:  # each diagnosis is named once, as one choice among all
        assert text.count(title) == 1, title
    # The diagnosis: the reveal shows the diff the engine ran and the check.
    wrong = next(i for i, c in enumerate(m.choices) if c.key != m.answer)
    radio[0].set_value(wrong)
    at = [b for b in at.button if b.label == "Diagnose"][0].click().run()
    assert not exceptions(at)
    assert verdicts(at) == [f"Not this time. It was: {m.reveal.title}."]
    diffs = [c.value for c in at.code if c.language == "diff"]
    if m.answer == MY.NONE:
        assert diffs == []
        return
    bug = bugs.BUGS_BY_KEY[m.answer]
    assert diffs == [m.reveal.diff]  # the engine's Bug.diff for the module the page ran
    # From the bug to the fix: the bug's line is the removed one, drawn red.
    removed = [ln[1:].strip() for ln in diffs[0].splitlines() if ln.startswith("- ")]
    assert removed == [bug.replacement.strip()]
    if m.reveal.check is not None:
        assert badges(at)[0][1] == f"{m.reveal.check.title}: {m.reveal.check.status}"


def test_a_diagnosis_counts_once_in_the_sessions_score():
    seed, m = _posed("causal", TEXT, lambda m: m.answer != MY.NONE)
    at = _open_mystery("causal", TEXT, seed)
    radio = [r for r in at.radio if r.key and r.key.startswith("m_")][0]
    radio.set_value([c.key for c in m.choices].index(m.answer))
    at = [b for b in at.button if b.label == "Diagnose"][0].click().run()
    assert verdicts(at) == [f"Right: {m.reveal.title}."]
    assert "This session: 1 answered, 1 right, streak 1." in [c.value for c in at.caption]
    at = at.run()  # a rerun does not count it again
    assert "This session: 1 answered, 1 right, streak 1." in [c.value for c in at.caption]


def test_a_switch_value_the_link_gets_wrong_is_named_and_left_off():
    at = open_app({"predict": "yes", "mystery": "1"})  # the first run reads the link
    assert not exceptions(at)
    warnings = [unescape(w.value) for w in at.warning]
    named = ("predict (not true or false)", "mystery (not true or false)")
    assert any(all(n in w for n in named) for w in warnings), warnings
    at = at.switch_page("pages/simplified-attention.py").run()
    assert prompts(at) == []
    assert at.toggle(key="predict").value is False and at.toggle(key="mystery").value is False
