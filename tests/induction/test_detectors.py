"""The one set of head detectors, on hand-made attention patterns whose answer is known."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnviz.models import detectors as D


def causal_uniform(T: int) -> torch.Tensor:
    """Each query spreads its weight evenly over the keys it sees."""
    w = torch.tril(torch.ones(T, T))
    return w / w.sum(-1, keepdim=True)


def on_keys(keys: torch.Tensor, T: int) -> torch.Tensor:
    """Weight 1 on each query's key; queries without one attend to themselves."""
    w = torch.zeros(T, T)
    for i, k in enumerate(keys.tolist()):
        w[i, k if k >= 0 else i] = 1.0
    return w


def test_expected_keys_follow_their_definitions():
    assert D.previous_keys(4).tolist() == [-1, 0, 1, 2]
    assert D.current_keys(4).tolist() == [-1, 1, 2, 3]
    assert D.first_keys(4).tolist() == [-1, 0, 0, 0]
    # last 3 of 8 repeat the 3 before: queries 5, 6, 7 look at 3, 4, 5
    assert D.repeat_keys(8, 3).tolist() == [-1, -1, -1, -1, -1, 3, 4, 5]
    assert D.repeat_keys(6, torch.tensor([2, 3])).tolist() == [
        [-1, -1, -1, -1, 3, 4],
        [-1, -1, -1, 1, 2, 3],
    ]
    # from ids: the token after the most recent earlier occurrence
    assert D.induction_keys([5, 6, 7, 5, 6, 7]).tolist() == [-1, -1, -1, 1, 2, 3]
    assert D.induction_keys([4, 4, 4]).tolist() == [-1, 1, 2]


def test_a_perfect_previous_token_head_scores_one_and_nothing_else():
    T = 10
    w = on_keys(D.previous_keys(T), T)
    scores = D.all_scores(w[None], repeat=3)
    assert scores["previous"].tolist() == [1.0]
    assert scores["current"].tolist() == [0.0]
    assert scores["first"].tolist() == pytest.approx([1 / 9])  # query 1's previous is token 0
    assert scores["induction"].tolist() == [0.0]


def test_current_and_first_token_heads_score_one_on_their_own_detector():
    T = 7
    current = torch.eye(T)
    first = torch.zeros(T, T)
    first[:, 0] = 1.0
    assert D.current_token_score(current[None]).tolist() == [1.0]
    assert D.previous_token_score(current[None]).tolist() == [0.0]
    assert D.first_token_score(first[None]).tolist() == [1.0]
    assert D.current_token_score(first[None]).tolist() == [0.0]


def test_an_induction_head_scores_one_and_uniform_attention_scores_low():
    T, L = 16, 6
    induction = on_keys(D.repeat_keys(T, L), T)
    uniform = causal_uniform(T)
    scores = D.induction_score(torch.stack([induction, uniform]), repeat=L)
    assert scores[0] == 1.0
    # uniform: query i puts 1/(i+1) on its key; the mean over the repeat's queries 10..15
    assert scores[1] == pytest.approx(np.mean([1 / (i + 1) for i in range(T - L, T)]))
    assert scores[1] < 0.1
    ids = torch.randperm(50, generator=torch.Generator().manual_seed(1))[:L].repeat(2)
    ids = torch.cat([torch.tensor([60, 61, 62, 63]), ids])  # 4 distinct tokens first
    assert D.induction_score(induction[None], token_ids=ids).tolist() == [1.0]


def test_uniform_attention_scores_the_mean_even_share_on_every_position_rule():
    T = 12
    w = causal_uniform(T)[None]
    even = np.mean([1 / (i + 1) for i in range(1, T)])
    for score in (D.previous_token_score, D.current_token_score, D.first_token_score):
        assert score(w)[0] == pytest.approx(even)


def test_scores_keep_layers_and_heads_and_average_over_a_batch():
    T = 8
    prev = on_keys(D.previous_keys(T), T)
    cur = torch.eye(T)
    w = torch.stack([torch.stack([prev, cur, prev]), torch.stack([cur, cur, prev])])  # (2, 3)
    s = D.previous_token_score(w)
    assert s.shape == (2, 3)
    assert s.tolist() == [[1.0, 0.0, 1.0], [0.0, 0.0, 1.0]]
    # a batch of two sequences with different repeats: each head scored over both
    lengths = torch.tensor([2, 4])
    keys = D.repeat_keys(T, lengths)
    good = torch.stack([on_keys(k, T) for k in keys])  # (b, T, T)
    bad = torch.stack([torch.eye(T), torch.eye(T)])
    batch = torch.stack([good, bad], dim=1)  # (b, heads=2, T, T)
    assert D.induction_score(batch, repeat=lengths, batch=True).tolist() == [1.0, 0.0]
    # pooled over every query: 2 + 4 queries, the first sequence's 2 weigh less
    half = torch.stack([on_keys(keys[0], T), torch.eye(T)])[:, None]  # good only in seq 0
    assert D.induction_score(half, repeat=lengths, batch=True)[0] == pytest.approx(2 / 6)


def test_bad_keys_and_shapes_are_refused_with_a_message():
    w = torch.eye(4)[None]
    with pytest.raises(ValueError, match="must lie in 0"):
        D.expected_key_score(w, torch.tensor([0, 1, 2, 4]))
    with pytest.raises(ValueError, match="weights end in"):
        D.expected_key_score(w, torch.tensor([0, 1, 2]))
    with pytest.raises(ValueError, match="exactly one of"):
        D.induction_score(w)
    with pytest.raises(ValueError, match="L <= T/2"):
        D.repeat_keys(4, 3)
    assert np.isnan(D.previous_token_score(torch.ones(2, 1, 1))).all()  # T = 1: no query


def test_head_distances_are_zero_for_alike_heads_and_one_for_disjoint_ones():
    T = 6
    prev = on_keys(D.previous_keys(T), T)
    cur = torch.eye(T)
    d = D.head_distances(torch.stack([prev, prev, cur]))
    assert d[0, 1] == 0.0
    assert d[0, 2] == pytest.approx(5 / 6)  # row 0 is the same (all on token 0)
    assert d[1:, 1:][1, 0] == d[2, 1]  # symmetric
    assert D.head_distances(torch.stack([prev, cur])[:, 1:])[0, 1] == 1.0
    assert D.row_peaks(causal_uniform(3)).tolist() == pytest.approx([1.0, 0.5, 1 / 3])


def test_a_head_is_named_only_when_its_score_says_so():
    assert D.name_of({"previous": 0.77, "current": 0.1}) == "previous-token head (score 0.77)"
    assert D.name_of({"previous": 0.2, "induction": 0.61}) == "induction head (score 0.61)"
    assert D.name_of({"previous": 0.49, "current": 0.3}) is None
    assert D.name_of({"first": float("nan")}) is None


def test_random_repeated_tokens_repeat_and_come_from_a_private_generator():
    before = torch.random.get_rng_state()
    ids = D.random_repeated_tokens(5, 100, seed=3, low=10)
    assert torch.equal(torch.random.get_rng_state(), before)
    assert ids.shape == (10,) and torch.equal(ids[:5], ids[5:])
    assert int(ids.min()) >= 10
    assert torch.equal(ids, D.random_repeated_tokens(5, 100, seed=3, low=10))
