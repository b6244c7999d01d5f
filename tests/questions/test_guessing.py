"""Not guessable: over posed questions (random pages, texts, sizes, seeds, eval and training),
an oracle that answers the key scores 100% and a uniform random guesser at most 35%.

The guesser is generous: it clicks one of the tokens the query can see (causal pages: keys
0..q), sketches a row uniformly from the simplex over those keys, draws a number or a whole
number uniformly from the question's range, picks a choice, or arranges the four sizes of the
right shape in a random order."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from attnviz.teach import questions as Q

from .settings import random_case

QUESTIONS_FULL = 1000
QUESTIONS_FAST = 100
GUESSER_AT_MOST = 0.35


def uniform_guess(q: Q.Question, rng: random.Random):
    causal = q.page in ("causal", "multihead")
    if q.answer_format == Q.TOKEN:
        return rng.randrange(q.query + 1 if causal else len(q.choices))
    if q.answer_format == Q.ROW:
        keys = range(q.query + 1) if causal else range(len(q.choices))
        draws = [rng.expovariate(1.0) for _ in keys]  # normalised: uniform on the simplex
        total = sum(draws)
        row = [0.0] * len(q.choices)
        for k, d in zip(keys, draws, strict=True):
            row[k] = d / total
        return row
    if q.answer_format == Q.INTEGER:
        return rng.randint(int(q.low), int(q.high))
    if q.answer_format == Q.NUMBER:
        return rng.uniform(q.low, q.high)
    if q.answer_format == Q.CHOICE:
        return rng.choice(q.choices)
    if q.answer_format == Q.SHAPE:
        dims = list(q.key)
        rng.shuffle(dims)
        return tuple(dims)
    raise AssertionError(q.answer_format)


def simulate(count: int) -> dict:
    rng = random.Random(25)
    posed, oracle, guesser = [], 0, 0
    i = 0
    while len(posed) < count:
        i += 1
        text, s = random_case(rng)
        page = rng.choice(Q.PAGES)
        q = Q.choose(page, text, s, False, seed=i)
        if q is None:
            continue
        posed.append(q)
        oracle += Q.grade(q, q.key).right
        guesser += Q.grade(q, uniform_guess(q, rng)).right
        chance = q.guess_chance
        assert chance is None or chance <= Q.MAX_GUESS_CHANCE, q
    kinds = Counter(q.kind for q in posed)
    return {
        "oracle": oracle / count,
        "guesser": guesser / count,
        "kinds": kinds,
        "tried": i,
    }


def _report(result: dict, count: int) -> None:
    print(
        f"{count} posed questions ({result['tried']} settings tried, {len(result['kinds'])} "
        f"kinds): oracle {result['oracle']:.1%}, uniform guesser {result['guesser']:.1%}; "
        f"per kind: {dict(result['kinds'])}"
    )


def test_an_oracle_scores_all_and_a_uniform_guesser_little():
    result = simulate(QUESTIONS_FAST)
    _report(result, QUESTIONS_FAST)
    assert result["oracle"] == 1.0
    assert result["guesser"] <= GUESSER_AT_MOST


@pytest.mark.slow
def test_over_1000_questions_an_oracle_scores_100_and_a_guesser_at_most_35_percent():
    result = simulate(QUESTIONS_FULL)
    _report(result, QUESTIONS_FULL)
    assert result["oracle"] == 1.0
    assert result["guesser"] <= GUESSER_AT_MOST
    assert set(result["kinds"]) == set(Q.KINDS)
