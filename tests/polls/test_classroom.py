"""attnviz/classroom/poll_questions.py: a question of attnviz.teach.questions as a class poll, and back.

The payload every phone receives must carry no key; the poll's grading must call the
question's own key right and each kept misconception's answer that misconception; a phone
must rebuild the presenter's very question; the sentences about the class are the counts."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
import torch

from attnviz import figures
from attnviz.classroom import poll_questions
from attnviz.classroom.polls import (
    Choice,
    MemoryPollStore,
    Number,
    PresenterView,
    RoundTally,
    Sketch,
    format_from_json,
    tally_round,
)
from attnviz.core.settings import Settings
from attnviz.teach import questions as Q
from attnviz.teach.panel import Panel

TEXT = "Your journey starts with one step"
CAT = "The cat sat on the mat"


def made(kind: str, page: str, text: str = TEXT, seed: int = 0, **changes) -> Q.Question:
    q = Q.make(kind, page, text, Settings().with_changes(**changes), False, seed)
    assert q is not None, (kind, page, text, seed)
    return q


def made_where(kind: str, page: str, want, text: str = TEXT, **changes) -> Q.Question:
    """The question of the first seed (0 to 39) that ``want``s."""
    for seed in range(40):
        q = Q.make(kind, page, text, Settings().with_changes(**changes), False, seed)
        if q is not None and want(q):
            return q
    raise AssertionError((kind, page, text))


# One question of every answer format, each with a misconception where the numbers give one.
CASES = {
    "token": lambda: made_where(Q.ARGMAX_KEY, "multihead", lambda q: q.misconceptions, CAT),
    "number": lambda: made(Q.SCORE, "trainable"),
    "integer": lambda: made(Q.MASKED_ZEROS, "causal"),
    "shape": lambda: made_where(
        Q.SPLIT_SHAPE, "multihead", lambda q: "self.num_heads, self.head_dim)" in q.prompt
    ),
    "choice": lambda: made_where(
        Q.SCALING_ENTROPY, "trainable", lambda q: q.variant == Q.WITHOUT, d_out=128
    ),
    "row": lambda: made(Q.SKETCH_ROW, "simplified", seed=1),
    "dropout": lambda: made(Q.DROPOUT_ROW_SUM, "causal"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_key_is_graded_right_and_each_misconception_is_told_apart(case):
    q = CASES[case]()
    asked = poll_questions.poll_question(q)
    form = asked.answer
    assert form.matches(form.clean(poll_questions.to_poll_answer(q, q.key)), asked.key)
    for m in q.misconceptions:
        if m.name in asked.misconceptions:
            mine = form.clean(poll_questions.to_poll_answer(q, m.answer))
            assert form.matches(mine, asked.misconceptions[m.name])
            assert not form.matches(mine, asked.key)
    store = MemoryPollStore()
    assert store.create(asked).__class__.__name__ == "Created"


def test_each_format_becomes_the_polls_own():
    assert CASES["token"]().answer_format == Q.TOKEN
    token = poll_questions.poll_question(CASES["token"]())
    assert isinstance(token.answer, Choice)
    assert token.answer.options == ("0: The", "1: ␣cat", "2: ␣sat", "3: ␣on", "4: ␣the", "5: ␣mat")
    assert token.key == CASES["token"]().key and token.misconceptions == {
        Q.COLUMN: CASES["token"]().misconceptions[0].answer
    }
    number = poll_questions.poll_question(CASES["number"]())
    assert isinstance(number.answer, Number) and number.answer.decimals == 2
    assert number.key == round(CASES["number"]().key, 2)
    integer = poll_questions.poll_question(CASES["integer"]())
    assert isinstance(integer.answer, Number) and integer.answer.decimals == 0
    assert integer.key == 15.0 and (integer.answer.lo, integer.answer.hi) == (0, 36)
    assert set(integer.misconceptions) == {Q.MASK_WITH_ZERO, Q.DIAGONAL_MASKED}
    shape = poll_questions.poll_question(CASES["shape"]())
    assert isinstance(shape.answer, Choice)
    # Every distinct order of (1, 2, 6, 4): 24, shuffled; the key and the no-transpose answer.
    assert len(shape.answer.options) == 24
    assert shape.answer.options[shape.key] == "(1, 2, 6, 4)"
    assert shape.answer.options[shape.misconceptions[Q.NO_TRANSPOSE]] == "(1, 6, 2, 4)"
    row = poll_questions.poll_question(CASES["row"]())
    assert isinstance(row.answer, Sketch) and row.answer.length == 6
    assert row.answer.tolerance == Q.TV_TOLERANCE


def test_a_float32_key_just_above_its_float64_bound_still_fits():
    """dropout p = 0.1: a row after dropout sums to 1/(1 − p) = 1.1111111 in float64, and the
    float32 key is 1.1111111342906952: the poll's range must hold it."""
    # A row dropout took nothing from is no longer asked (its sum, 1/(1 − p), is guessable):
    # the same key and bound, made by hand.
    q = dataclasses.replace(CASES["dropout"](), key=float(torch.tensor(1 / 0.9)), high=1 / 0.9)
    assert q.high is not None and float(q.key) > q.high  # the case this test is about
    asked = poll_questions.poll_question(q)
    assert asked.answer.hi >= round(float(q.key), 2)
    assert MemoryPollStore().create(asked).__class__.__name__ == "Created"


def test_a_misconception_the_sketch_grading_cannot_tell_apart_is_not_sealed():
    """The store scales each sketch to sum to 1 before grading it, so a row zeroed after the
    softmax and not renormalised (the key's row, scaled down) grades as the key itself there:
    that misconception is not sealed; one whose row is far from the key is."""
    q = CASES["row"]()
    key = tuple(float(v) for v in q.key)
    far = tuple(1.0 if i == 0 else 0.0 for i in range(len(key)))
    q = dataclasses.replace(
        q,
        misconceptions=(
            Q.Misconception(Q.NO_RENORMALISE, tuple(0.6 * v for v in key), "scaled"),
            Q.Misconception(Q.COLUMN, far, "far"),
        ),
    )
    asked = poll_questions.poll_question(q)
    assert list(asked.misconceptions) == [Q.COLUMN]


def test_the_payload_a_phone_gets_carries_no_key():
    for case, make in CASES.items():
        q = make()
        asked = poll_questions.poll_question(q)
        sent = json.dumps([asked.payload, asked.settings])
        assert set(asked.payload) == {"v", "kind", "page", "seed", "prompt"}, case
        secrets = [repr(asked.key), json.dumps(asked.key)]
        if isinstance(asked.answer, Choice):
            secrets = [f'"key": {asked.key}']  # an index alone is too common a number
        elif isinstance(asked.key, float):
            secrets += [f"{float(q.key):.3f}", f"{float(q.key):.4f}"]
        elif isinstance(asked.key, tuple):
            secrets = [f"{v:.4f}" for v in asked.key if 0 < v < 1]
        for secret in secrets:
            assert secret not in sent, (case, secret)


@pytest.mark.parametrize("case", list(CASES))
def test_a_phone_rebuilds_the_presenters_question(case):
    q = CASES[case]()
    asked = poll_questions.poll_question(q)
    through_json = json.loads(json.dumps([asked.payload, asked.settings]))
    assert poll_questions.question_from(*through_json) == q


def test_a_payload_that_does_not_make_the_same_question_is_refused():
    asked = poll_questions.poll_question(CASES["number"]())
    assert (
        poll_questions.question_from({**asked.payload, "prompt": "another prompt"}, asked.settings)
        is None
    )
    assert poll_questions.question_from({**asked.payload, "v": 99}, asked.settings) is None
    bad = {**asked.settings, "settings": {**asked.settings["settings"], "d_in": -1}}
    assert poll_questions.question_from(asked.payload, bad) is None
    assert poll_questions.question_from({"kind": "score"}, {}) is None


def test_the_sentences_are_the_counts():
    form = Choice(("0: a", "1: b", "2: c"))
    sealed = {"key": "1", "misconceptions": {Q.COLUMN: "2"}}
    one = tally_round(form, 1, ["1", "1", "2", "0", "2"], sealed)
    two = tally_round(form, 2, ["1", "1", "1", "2"], sealed)
    assert poll_questions.answered_line(two) == "Round 2: 4 answers"
    view = PresenterView(
        "ABCDEF", None, {}, {}, form, (one, two), key=1, key_label="1: b",  # type: ignore[arg-type]
        misconceptions=((Q.COLUMN, 2, "2: c"),),
    )  # fmt: skip
    assert poll_questions.share_lines(view) == (
        "Round 1: 2 of 5 right (40%)",
        "Round 2: 3 of 4 right (75%)",
    )
    assert poll_questions.misconception_lines(view) == (
        "25% (1 of 4) answered as reading a column instead of a row would (2: c): "
        + poll_questions.explanation_of(Q.COLUMN),
    )


def test_the_tally_chart_draws_the_counts_and_marks_the_key():
    form = Choice(("0: a", "1: b", "2: c"))
    one = tally_round(form, 1, ["1", "1", "2"], None)
    chart = poll_questions.tally_chart(form, [one], key=1)
    assert chart is not None
    bars = chart.spec["data"][0]
    assert bars["x"] == ["0: a", "1: b", "2: c"]
    assert chart.series[0].values.tolist() == [0, 2, 1]
    assert bars["marker"]["color"][1] != bars["marker"]["color"][0]  # the key's bar stands out
    # Read off a projector: the heading above says the round; the title says what the bars are
    # and which one is the answer; tick labels large and level unless they would overlap.
    layout = chart.spec["layout"]
    assert layout["title"]["text"] == "Answers per option; the answer in yellow"
    assert bars["marker"]["color"][1] == figures.HIGHLIGHT
    assert layout["xaxis"]["tickfont"]["size"] >= 16 and "tickangle" not in layout["xaxis"]
    plain = poll_questions.tally_chart(form, [one])
    assert plain is not None and plain.spec["layout"]["title"]["text"] == "Answers per option"
    two = tally_round(form, 2, ["1", "1", "1"], None)
    both = poll_questions.tally_chart(form, [one, two])
    assert both is not None and [s.name for s in both.series] == ["round 1", "round 2"]
    assert [s.values.tolist() for s in both.series] == [[0, 2, 1], [0, 3, 0]]
    assert poll_questions.tally_chart(form, [RoundTally(1, 0, form_counts(form))]) is None
    sketch = Sketch(2)
    mean = poll_questions.tally_chart(
        sketch, [tally_round(sketch, 1, ["[0.2,0.2]", "[1.0,0.0]"], None)], (0.6, 0.2)
    )
    assert mean is not None
    assert [s.name for s in mean.series] == ["class mean", "spread (SD)", "true row"]
    assert mean.series[0].values.tolist() == pytest.approx([0.75, 0.25])
    assert mean.series[2].values.tolist() == pytest.approx([0.75, 0.25])  # the key, scaled to 1


def test_the_tally_counts_whole_answers_on_its_axis_and_in_its_hover():
    # Seen on the projector: two answers gave Plotly's ticks 0, 0.2, 0.4, ..., 1 "answers".
    form = Choice(("0: a", "1: b", "2: c"))
    one = tally_round(form, 1, ["1", "2"], None)
    for chart in (
        poll_questions.tally_chart(form, [one]),
        poll_questions.tally_chart(form, [one, one]),
    ):
        assert chart is not None
        y = chart.spec["layout"]["yaxis"]
        assert (y["tick0"], y["dtick"], y["tickformat"]) == (0, 1, "d")
        assert all("%{y}" in t["hovertemplate"] for t in chart.spec["data"])
        assert all(":.4f" not in t["hovertemplate"] for t in chart.spec["data"])
    crowd = tally_round(form, 1, ["1"] * 40 + ["2"] * 3, None)
    many = poll_questions.tally_chart(form, [crowd])
    assert many is not None and many.spec["layout"]["yaxis"]["dtick"] == 5  # 0, 5, …, 40
    sketch = Sketch(2)  # a sketch's bars are weights, not counts: Plotly's own ticks
    mean = poll_questions.tally_chart(
        sketch, [tally_round(sketch, 1, ["[0.2,0.2]", "[1.0,0.0]"], None)]
    )
    assert mean is not None and "dtick" not in mean.spec["layout"]["yaxis"]


def form_counts(form: Choice) -> tuple[tuple[str, int], ...]:
    return tuple((o, 0) for o in form.options)


def test_the_true_figure_is_the_hidden_matrix_with_the_asked_row_outlined():
    q = CASES["number"]()  # a score on pass 2: the raw scores, before 1/√d_k
    n = Q.read(q.page, q.text, q.settings, q.book)
    figure = poll_questions.reveal_figure(q, n)
    assert isinstance(figure, Panel)
    assert torch.equal(figure.values, n.raw[0])
    assert figure.style.outline_rows == (q.query,)
    assert float(figure.values[q.query, q.other]) == pytest.approx(q.key)
    dropped = CASES["dropout"]()
    n = Q.read(dropped.page, dropped.text, dropped.settings, dropped.book)
    figure = poll_questions.reveal_figure(dropped, n)
    assert isinstance(figure, Panel) and n.dropped is not None
    assert torch.equal(figure.values, n.dropped[0])
    assert float(figure.values[dropped.query].sum()) == pytest.approx(dropped.key, abs=1e-6)
    # A sketch's row: the scores as the softmax reads them, divided by √d_k (pass 2 on).
    sketch = dataclasses.replace(made(Q.ARGMAX_KEY, "causal", CAT), kind=Q.SKETCH_ROW)
    n = Q.read(sketch.page, sketch.text, sketch.settings, sketch.book)
    figure = poll_questions.given(sketch, n).figure
    assert figure is not None and figure.title.startswith("Scores ÷ √d_k")
    seen = torch.isfinite(figure.values)
    assert torch.equal(seen, torch.ones_like(seen).tril())  # the future masked, blank
    assert torch.allclose(figure.values[seen], (n.raw[0] / n.scale)[seen])

    zeros = CASES["integer"]()
    n = Q.read(zeros.page, zeros.text, zeros.settings, zeros.book)
    figure = poll_questions.reveal_figure(zeros, n)
    assert isinstance(figure, Panel) and int((figure.values == 0).sum()) == zeros.key
    assert (
        poll_questions.reveal_figure(CASES["shape"](), Q.read("multihead", TEXT, Settings()))
        is None
    )
    scaling = CASES["choice"]()
    n = Q.read(scaling.page, scaling.text, scaling.settings, scaling.book)
    bars = poll_questions.reveal_figure(scaling, n)
    assert bars is not None and not isinstance(bars, Panel)
    assert [s.name for s in bars.series] == ["softmax(scores / √d_k)", "softmax(scores)"]


def test_each_key_follows_from_the_figure_the_class_is_shown():
    """The figure on the projector and the phones (``given``) holds what the key is worked out
    from, and none of the numbers the question hides."""
    which = made(Q.ARGMAX_KEY, "multihead", CAT)
    n = Q.read(which.page, which.text, which.settings, which.book)
    figure = poll_questions.given(which, n).figure
    assert isinstance(figure, Panel) and figure.style.outline_rows == (which.query,)
    row = figure.values[which.query]
    assert int(torch.where(torch.isfinite(row), row, -math.inf).argmax()) == which.key
    # ... read off the cells as printed, two decimals: the winner stands alone.
    printed = sorted((round(float(v), 2) for v in row if math.isfinite(v)), reverse=True)
    assert printed[0] > printed[1]
    assert not torch.isfinite(row[which.query + 1 :]).any()  # the future: masked, blank

    # A sketch's row: the scores as the softmax reads them, divided by √d_k (pass 2 on).
    sketch = dataclasses.replace(made(Q.ARGMAX_KEY, "causal", CAT), kind=Q.SKETCH_ROW)
    n = Q.read(sketch.page, sketch.text, sketch.settings, sketch.book)
    figure = poll_questions.given(sketch, n).figure
    assert figure is not None and figure.title.startswith("Scores ÷ √d_k")
    seen = torch.isfinite(figure.values)
    assert torch.equal(seen, torch.ones_like(seen).tril())  # the future masked, blank
    assert torch.allclose(figure.values[seen], (n.raw[0] / n.scale)[seen])

    zeros = CASES["integer"]()
    n = Q.read(zeros.page, zeros.text, zeros.settings, zeros.book)
    figure = poll_questions.given(zeros, n).figure
    assert figure is not None and torch.isfinite(figure.values).all()
    t = figure.values.shape[0]
    assert zeros.key == t * (t - 1) // 2  # the cells above the diagonal: every future key

    row_sum = CASES["dropout"]()
    n = Q.read(row_sum.page, row_sum.text, row_sum.settings, row_sum.book)
    made_ = poll_questions.given(row_sum, n)
    assert made_.figure is not None and row_sum.query is not None
    kept = made_.figure.values[row_sum.query]
    worked = float(kept[torch.isfinite(kept)].sum()) / (1 - n.p)
    assert worked == pytest.approx(row_sum.key, abs=1e-5)
    assert made_.tolerance is not None and 0.01 <= made_.tolerance <= 0.05

    score = CASES["number"]()  # pass 2: queries[q] · keys[k]
    main, _ = Q.traces_for(score.page, score.text, score.settings, score.book)
    n = Q.read(score.page, score.text, score.settings, score.book)
    made_ = poll_questions.given(score, n, main)
    assert made_.figure is not None and made_.figure.values.shape[0] == 2
    a, b = made_.figure.values.double()
    assert float(a @ b) == pytest.approx(score.key, abs=1e-5)
    rounded = float((a * 100).round() / 100 @ ((b * 100).round() / 100))
    assert abs(rounded - score.key) <= made_.tolerance  # what a careful class gets is right


def test_a_number_answer_is_graded_within_its_tolerance_and_keeps_it_through_json():
    q = CASES["number"]()
    asked = poll_questions.poll_question(q, 0.03)
    form = asked.answer
    assert isinstance(form, Number) and form.tolerance == 0.03
    assert form.matches(asked.key + 0.03, asked.key) and not form.matches(
        asked.key + 0.04, asked.key
    )
    assert format_from_json(json.loads(json.dumps(form.to_json()))) == form
    exact = format_from_json({"kind": "number", "decimals": 2, "lo": 0, "hi": 1})  # an old poll
    assert exact.matches(0.5, 0.504) and not exact.matches(0.5, 0.51)
    default = poll_questions.poll_question(q).answer
    assert isinstance(default, Number) and default.tolerance == poll_questions.TOLERANCE[Q.SCORE]
    count = poll_questions.poll_question(CASES["integer"]()).answer
    assert isinstance(count, Number) and count.tolerance == 0  # a count is exact


def test_the_projectors_tally_is_drawn_at_a_projectors_sizes():
    form = Choice(("0: a", "1: b", "2: c"))
    one = tally_round(form, 1, ["1", "1", "2"], None)
    for rounds in ([one], [one, one]):
        chart = poll_questions.tally_chart(form, rounds)
        assert chart is not None
        big = poll_questions.projected(chart)
        layout = big.spec["layout"]
        assert layout["title"]["font"]["size"] == poll_questions.POLL_LOOK.title >= 26
        assert layout["xaxis"]["tickfont"]["size"] == layout["yaxis"]["tickfont"]["size"] >= 20
        assert layout["height"] >= poll_questions.PROJECTED_HEIGHT
        assert big.spec["data"] == chart.spec["data"]  # the same counts
        assert chart.spec["layout"]["title"]["font"]["size"] < 20  # the phone's, untouched


def test_a_shapes_options_are_not_sorted_so_no_fixed_pick_finds_the_key():
    """An ascending key (the scores' (1, 2, 6, 6), the merge's (1, 6, 8)) would be the first of
    its sorted orders: the options come in an order each question's seed draws."""
    firsts = []
    for seed in range(24):
        q = Q.make(Q.SPLIT_SHAPE, "multihead", TEXT, Settings(), False, seed)
        if q is None:
            continue
        asked = poll_questions.poll_question(q)
        assert asked.answer.options[asked.key] == poll_questions.shape_label(q.key)
        firsts.append(asked.key == 0)
    assert len(firsts) >= 12 and sum(firsts) <= 0.4 * len(firsts)
