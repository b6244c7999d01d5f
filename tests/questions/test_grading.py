"""Grading from the question alone, the misconceptions' explanations, the session score, the
chooser, and questions as plain values that rebuild from (kind, page, text, settings, seed)."""

from __future__ import annotations

import json
import random
import re
import tomllib
from pathlib import Path

import pytest
import torch

from attnviz.core.settings import Settings
from attnviz.teach import questions as Q

from .reference import reference
from .settings import random_case

TEXT = "Your journey starts with one step"
STORY = Path(__file__).resolve().parents[2] / "attnviz" / "teach" / "lessons" / "story.toml"


_FOUND: dict[tuple[str, str], tuple[random.Random, list[Q.Question], list[int]]] = {}


def find(kind: str, page: str, want=lambda q: True, cases: int = 400) -> Q.Question:
    """The first posed question of ``kind`` on ``page`` that ``want``s, over seeded cases
    (the questions posed so far are kept, so the tests share one scan per kind and page)."""
    rng, posed, done = _FOUND.setdefault(
        (kind, page), (random.Random(f"find:{kind}:{page}"), [], [0])
    )
    for q in posed:
        if want(q):
            return q
    while done[0] < cases:
        i = done[0]
        done[0] += 1
        text, s = random_case(rng)
        if page == "multihead" and s.multihead_problem():
            continue
        q = Q.make(kind, page, text, s, False, i)
        if q is not None:
            posed.append(q)
            if want(q):
                return q
    raise AssertionError(f"no {kind} question on {page} in {cases} cases")


def has(name: str):
    return lambda q: any(m.name == name for m in q.misconceptions)


def misconception(q: Q.Question, name: str) -> Q.Misconception:
    return next(m for m in q.misconceptions if m.name == name)


# --- every named misconception, answered on purpose, gets its explanation --------------------
@pytest.mark.parametrize(
    ("kind", "page", "name"),
    [
        (Q.ARGMAX_KEY, "simplified", Q.COLUMN),
        (Q.ARGMAX_KEY, "causal", Q.COLUMN),
        (Q.SKETCH_ROW, "trainable", Q.COLUMN),
        (Q.SCORE, "trainable", Q.COLUMN),
        (Q.SKETCH_ROW, "causal", Q.NO_RENORMALISE),
        (Q.SKETCH_ROW, "causal", Q.MASK_WITH_ZERO),
        (Q.MASKED_ZEROS, "causal", Q.MASK_WITH_ZERO),
        (Q.DROPOUT_ROW_SUM, "causal", Q.ROWS_SUM_TO_ONE),
        (Q.DROPOUT_SURVIVOR, "causal", Q.ROWS_SUM_TO_ONE),
        (Q.DROPOUT_SURVIVOR, "multihead", Q.NO_RESCALE),
        (Q.MASKED_ZEROS, "multihead", Q.DIAGONAL_MASKED),
        (Q.SPLIT_SHAPE, "multihead", Q.NO_TRANSPOSE),
        (Q.SCALING_ENTROPY, "trainable", Q.SCALING_BACKWARDS),
    ],
)
def test_a_misconception_answered_on_purpose_gets_its_explanation(kind, page, name):
    q = find(kind, page, has(name))
    m = misconception(q, name)
    g = Q.grade(q, m.answer)
    assert not g.right
    assert g.misconception == name
    assert g.explanation == Q.EXPLANATIONS[name]
    assert Q.grade(q, q.key).misconception is None  # the key itself is right, no explanation


def test_the_four_named_misconceptions_have_one_sentence_each():
    for name in (Q.COLUMN, Q.NO_RENORMALISE, Q.MASK_WITH_ZERO, Q.ROWS_SUM_TO_ONE):
        text = Q.EXPLANATIONS[name]
        assert text.endswith(".") and text.count(". ") == 0, text


def _causal_reference(q: Q.Question):
    ref = reference(q.page, q.text, q.settings)
    n = ref.weights.shape[-1]
    future = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    scale = (q.settings.d_out // (q.settings.num_heads if q.page == "multihead" else 1)) ** 0.5
    return ref, future, scale


def test_the_column_misconception_is_the_columns_argmax():
    q = find(Q.ARGMAX_KEY, "trainable", has(Q.COLUMN))
    ref = reference(q.page, q.text, q.settings)
    column = ref.weights[0, :, q.query]
    assert misconception(q, Q.COLUMN).answer == int(torch.argmax(column))
    assert q.key == int(torch.argmax(ref.weights[0, q.query]))


def test_the_unrenormalised_row_is_the_softmax_with_the_future_zeroed():
    q = find(Q.SKETCH_ROW, "causal", has(Q.NO_RENORMALISE))
    ref, future, scale = _causal_reference(q)
    expected = torch.softmax(ref.raw[0, q.query] / scale, -1).masked_fill(future[q.query], 0)
    wrong = misconception(q, Q.NO_RENORMALISE).answer
    assert wrong == pytest.approx(expected.tolist(), abs=1e-6)
    assert sum(wrong) < 1 - 2 * Q.TV_TOLERANCE  # it no longer sums to 1


def test_masking_with_zero_is_the_softmax_with_0_in_place_of_minus_infinity():
    q = find(Q.SKETCH_ROW, "causal", has(Q.MASK_WITH_ZERO))
    ref, future, scale = _causal_reference(q)
    expected = torch.softmax(ref.raw[0, q.query].masked_fill(future[q.query], 0) / scale, -1)
    wrong = misconception(q, Q.MASK_WITH_ZERO).answer
    assert wrong == pytest.approx(expected.tolist(), abs=1e-6)
    assert sum(wrong[q.query + 1 :]) > 0  # the future leaks in


def test_rows_sum_to_one_after_dropout_renormalises_the_survivors():
    q = find(Q.DROPOUT_SURVIVOR, "causal", has(Q.ROWS_SUM_TO_ONE))
    ref = reference(q.page, q.text, q.settings)
    w, d = ref.weights[0].double(), ref.dropped[0].double()
    kept = float(w[q.query][d[q.query] != 0].sum())
    wrong = misconception(q, Q.ROWS_SUM_TO_ONE).answer
    assert wrong == pytest.approx(float(w[q.query, q.other]) / kept, rel=1e-6)
    # that renormalised row would sum to 1; the real one does not have to
    assert float(w[q.query][d[q.query] != 0].sum()) / kept == pytest.approx(1.0)


def test_misconception_answers_are_apart_from_the_key_and_each_other():
    for kind, page in [(Q.SKETCH_ROW, "causal"), (Q.WEIGHT_RATIO, "trainable")]:
        q = find(kind, page, lambda q: len(q.misconceptions) >= 2)
        answers = [q.key, *(m.answer for m in q.misconceptions)]
        for i, a in enumerate(answers):
            for b in answers[i + 1 :]:
                if q.answer_format == Q.ROW:
                    assert Q.total_variation(a, b) > 2 * Q.TV_TOLERANCE
                else:
                    assert a != b


# --- grading ------------------------------------------------------------------------------
def _row_question() -> Q.Question:
    return find(Q.SKETCH_ROW, "simplified")


def test_a_sketch_within_total_variation_010_is_right_and_its_gap_is_returned():
    q = _row_question()
    key = list(q.key)
    top, low = key.index(max(key)), key.index(min(key))
    for moved in (0.09, 0.11):
        moved = min(moved, key[top])
        answer = key.copy()
        answer[top] -= moved
        answer[low] += moved
        g = Q.grade(q, answer)
        assert g.distance == pytest.approx(moved)
        assert g.right is (moved <= Q.TV_TOLERANCE)
        assert g.gap == pytest.approx([a - k for a, k in zip(answer, key, strict=True)])
        assert g.gap[top] == pytest.approx(-moved) and g.gap[low] == pytest.approx(moved)


def test_an_even_sketch_is_graded_wrong_when_the_question_is_posed():
    q = _row_question()
    n = len(q.key)
    assert not Q.grade(q, [1 / n] * n).right


def test_a_number_is_right_to_two_decimals():
    q = find(Q.SCORE, "trainable")
    assert Q.grade(q, round(q.key, 2)).right
    assert Q.grade(q, q.key + 0.0049).right
    assert not Q.grade(q, q.key + 0.0061).right
    assert not Q.grade(q, q.key - 0.0061).right


def test_a_token_is_right_only_at_the_key():
    q = find(Q.ARGMAX_KEY, "simplified")
    assert Q.grade(q, q.key).right
    assert all(not Q.grade(q, i).right for i in range(len(q.choices)) if i != q.key)


@pytest.mark.parametrize(
    ("kind", "page", "answer", "message"),
    [
        (Q.ARGMAX_KEY, "simplified", "three", "This question takes a token."),
        (Q.ARGMAX_KEY, "simplified", 99, "Pick one of the"),
        (Q.ARGMAX_KEY, "simplified", 1.5, "This question takes a token."),
        (Q.SCORE, "trainable", "nan", "This question takes a number."),
        (Q.SCORE, "trainable", None, "This question takes a number."),
        (Q.SKETCH_ROW, "simplified", [0.5], "values, one per key, none negative."),
        (Q.SPLIT_SHAPE, "multihead", (1, 2), "a shape of 4 whole numbers."),
        (Q.SPLIT_SHAPE, "multihead", (1, 2, 3.5, 4), "a shape of 4 whole numbers."),
        (Q.SCALING_ENTROPY, "trainable", "sharp", "Pick one of: "),
        (Q.MASKED_ZEROS, "causal", True, "This question takes a whole number."),
    ],
)
def test_a_malformed_answer_gets_a_sentence_not_a_traceback(kind, page, answer, message):
    q = find(kind, page)
    with pytest.raises(Q.AnswerError, match=message.replace(".", r"\.").replace("(", r"\(")):
        Q.grade(q, answer)


def test_the_score_counts_answers_right_answers_and_the_streak():
    q = find(Q.ARGMAX_KEY, "simplified")
    wrong = next(i for i in range(len(q.choices)) if i != q.key)
    score = Q.Score()
    for answer in (q.key, q.key, wrong, q.key):
        score = Q.scored(score, Q.grade(q, answer))
    assert score == Q.Score(answered=4, right=3, streak=1)
    assert Q.scored(Q.Score(), Q.grade(q, wrong)) == Q.Score(1, 0, 0)


# --- plain values, rebuilt from (kind, page, text, settings, seed) --------------------------
def _from_plain(d: dict) -> Q.Question:
    """The inverse of Q.to_plain (after a JSON round trip): that one exists shows to_plain keeps
    every value, so the question id the page makes of it names the question."""

    def tup(v):
        return tuple(tup(x) for x in v) if isinstance(v, list | tuple) else v

    fields = {k: tup(v) for k, v in d.items() if k not in ("settings", "misconceptions")}
    return Q.Question(
        **fields,
        settings=Settings(**d["settings"]),
        misconceptions=tuple(
            Q.Misconception(m["name"], tup(m["answer"]), m["explanation"])
            for m in d["misconceptions"]
        ),
    )


@pytest.mark.parametrize(("kind", "page"), [(k, p) for p, ks in Q.PAGE_KINDS.items() for k in ks])
def test_a_question_survives_json_and_rebuilds_from_its_plain_values(kind, page):
    q = find(kind, page)
    back = _from_plain(json.loads(json.dumps(Q.to_plain(q))))
    assert back == q
    assert Q.make(back.kind, back.page, back.text, back.settings, back.book, back.seed) == q
    assert Q.grade(back, q.key).right  # gradeable without any trace


def test_the_chooser_is_deterministic_and_varies_with_the_seed():
    s = Settings(dropout=0.5)
    picked = [Q.choose("causal", TEXT, s, False, seed) for seed in range(15)]
    assert picked == [Q.choose("causal", TEXT, s, False, seed) for seed in range(15)]
    kinds = {q.kind for q in picked if q is not None}
    assert len(kinds) >= 3, kinds


def test_the_chooser_asks_for_the_panel_a_presenter_step_hides():
    s = Settings(dropout=0.5)
    for seed in range(10):
        q = Q.choose("causal", TEXT, s, False, seed, hides="p3_dropped")
        assert q is not None and q.hides == "p3_dropped"
        assert q.kind in (Q.DROPOUT_SURVIVOR, Q.DROPOUT_ROW_SUM)
    assert Q.choose("causal", TEXT, s, False, 0, hides="p9_nothing") is None


def _lesson_panel_keys() -> set[str]:
    """Every panel key the lessons use: story.toml's entries and the keys the lesson modules
    name in code (p4_grid, p3_uniform, p3_batch0 ...)."""
    keys = set(tomllib.loads(STORY.read_text(encoding="utf-8")))
    for path in STORY.parent.glob("*.py"):
        keys |= set(re.findall(r'"(p\d_[a-z_]+)"', path.read_text(encoding="utf-8")))
    return keys | {"p3_batch0"}  # f"p3_batch{i}" for example 0


def test_every_hidden_panel_is_a_lesson_panel_key():
    keys = _lesson_panel_keys()
    for page, kinds in Q.PAGE_KINDS.items():
        for kind in kinds:
            # multi-head dropout only shows in training mode; the rest in both modes
            modes = (True,) if (page, kind) == ("multihead", Q.DROPOUT_SURVIVOR) else (False, True)
            for training in modes:
                q = find(kind, page, lambda q, t=training: q.settings.training is t)
                assert q.hides in keys, (kind, page, q.hides)
                assert q.conceals[0] == q.hides and set(q.conceals) <= keys, q.conceals
    # in training mode a multi-head question on the softmax hides the weights before dropout
    q = find(Q.ARGMAX_KEY, "multihead", lambda q: q.settings.training and q.settings.dropout > 0)
    assert q.hides == "p4_weights_before"


def test_prompts_name_tokens_by_their_0_based_labels():
    q = find(Q.ARGMAX_KEY, "causal")
    assert f"Which key does query {q.choices[q.query]} weigh most" in q.prompt
    # no colon but the token's own ("position: token"): once read "Query 0: Your: which key"
    assert q.prompt.count(":") == q.choices[q.query].count(":")
    assert q.choices[q.query].startswith(f"{q.query}: ")


# --- not posed when the answer is not clear -----------------------------------------------
@pytest.mark.parametrize(
    ("kind", "page", "text", "settings", "why"),
    [
        (Q.ARGMAX_KEY, "simplified", "Hello world", Settings(), "two keys: a guess is right 1/2"),
        (Q.SKETCH_ROW, "causal", "Hello world", Settings(), "two keys at most"),
        (Q.MASKED_ZEROS, "causal", "Hello", Settings(), "one token: no future key"),
        (Q.DROPOUT_SURVIVOR, "causal", TEXT, Settings(dropout=0.0), "dropout 0"),
        (Q.DROPOUT_ROW_SUM, "causal", TEXT, Settings(dropout=0.0), "dropout 0"),
        (Q.DROPOUT_SURVIVOR, "multihead", TEXT, Settings(dropout=0.5), "eval mode: no dropout"),
        (Q.SPLIT_SHAPE, "multihead", "a b", Settings(), "T = num_heads: transpose keeps it"),
        (Q.SCALING_ENTROPY, "trainable", TEXT, Settings(d_out=1), "d_k = 1: nothing changes"),
        (Q.SCORE, "multihead", TEXT, Settings(), "not a kind of this page"),
        (Q.SCORE, "causal", TEXT, Settings(), "page 3 draws no queries or keys"),
        (Q.SCORE, "trainable", TEXT, Settings(d_out=16), "16 products by hand"),
        (Q.SCALED_SCORE, "trainable", TEXT, Settings(d_out=1), "d_k = 1: nothing changes"),
        (Q.SKETCH_ROW, "simplified", " a" * 30, Settings(), "30 keys: too many sliders"),
        (Q.ARGMAX_KEY, "simplified", "", Settings(), "no tokens"),
        (Q.ARGMAX_KEY, "multihead", TEXT, Settings(d_out=9), "d_out not divisible by heads"),
    ],
)
def test_a_question_is_not_posed_where_its_answer_is_not_clear(kind, page, text, settings, why):
    for seed in range(5):
        assert Q.make(kind, page, text, settings, False, seed) is None, why


def test_every_posed_question_gives_a_uniform_guess_at_most_a_third():
    for page, kinds in Q.PAGE_KINDS.items():
        for kind in kinds:
            q = find(kind, page)
            chance = q.guess_chance
            assert chance is None or chance <= Q.MAX_GUESS_CHANCE, (kind, page, chance)
