"""The tasks, the expected patterns, the masked loss and the attention share, on small cases."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from attnviz.models import toy_tasks


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_shift_targets_are_the_token_k_earlier_and_the_first_k_have_none():
    b = toy_tasks.shift_batch(gen(), 8, vocab=10, seq_len=12, k=3)
    assert b.tokens.shape == b.targets.shape == b.expected_key.shape == (8, 12)
    assert (b.targets[:, :3] == toy_tasks.IGNORE).all()
    assert torch.equal(b.targets[:, 3:], b.tokens[:, :-3])
    assert (b.expected_key[:, :3] == toy_tasks.NO_KEY).all()
    assert torch.equal(b.expected_key[0, 3:], torch.arange(9))
    assert int(b.tokens.max()) < 10  # plain symbols only


def test_marked_sequences_hold_exactly_one_mark_and_output_it_from_there_on():
    vocab, T = 10, 12
    b = toy_tasks.marked_batch(gen(1), 200, vocab=vocab, seq_len=T)
    is_mark = b.tokens >= vocab
    assert (is_mark.sum(dim=1) == 1).all()
    mark = is_mark.int().argmax(dim=1)
    assert len(set(mark.tolist())) > 6  # the mark moves around
    for row in range(200):
        p = int(mark[row])
        symbol = int(b.tokens[row, p]) - vocab  # the marked copy of this symbol
        assert (b.targets[row, :p] == vocab).all()  # "none" before the mark
        assert (b.targets[row, p:] == symbol).all()
        assert (b.expected_key[row, :p] == toy_tasks.NO_KEY).all()
        assert (b.expected_key[row, p:] == p).all()


def test_expected_pattern_for_shift_is_the_off_diagonal():
    b = toy_tasks.shift_batch(gen(), 1, vocab=4, seq_len=5, k=2)
    pattern = toy_tasks.expected_pattern(b.expected_key[0], 5)
    want = torch.zeros(5, 5)
    want[2, 0] = want[3, 1] = want[4, 2] = 1.0
    assert torch.equal(pattern, want)


def test_expected_pattern_for_marked_is_the_mark_column_from_the_mark_on():
    b = toy_tasks.marked_batch(gen(), 1, vocab=4, seq_len=5, mark_at=2)
    pattern = toy_tasks.expected_pattern(b.expected_key[0], 5)
    want = torch.zeros(5, 5)
    want[2:, 2] = 1.0
    assert torch.equal(pattern, want)


def test_expected_pattern_respects_the_causal_mask_and_has_one_key_per_row_with_a_target():
    cfg = toy_tasks.LearnConfig(task="shift", k=4)
    ex = toy_tasks.example(cfg)
    pattern = toy_tasks.expected_pattern(ex.expected_key[0], cfg.seq_len)
    assert torch.equal(pattern, torch.tril(pattern))  # never a future key
    has_target = ex.targets[0] != toy_tasks.IGNORE
    assert torch.equal(pattern.sum(dim=1), has_target.float())


def test_fixed_example_is_the_same_every_time_and_marked_at_its_stated_position():
    cfg = toy_tasks.LearnConfig(task="marked")
    a, b = toy_tasks.example(cfg), toy_tasks.example(cfg)
    assert torch.equal(a.tokens, b.tokens)
    labels = toy_tasks.token_labels(cfg, a.tokens[0])
    assert labels[toy_tasks.EXAMPLE_MARK].endswith("*")
    assert sum(lab.endswith("*") for lab in labels) == 1
    assert [lab.split(":")[0] for lab in labels] == [str(i) for i in range(cfg.seq_len)]


def test_loss_and_accuracy_ignore_positions_without_a_target():
    logits = torch.randn(3, 6, 11, generator=gen(2))
    targets = torch.randint(0, 11, (3, 6), generator=gen(3))
    targets[:, :2] = toy_tasks.IGNORE
    targets[1, 4] = toy_tasks.IGNORE
    keep = targets != toy_tasks.IGNORE
    manual = F.cross_entropy(logits[keep], targets[keep])  # only the positions with a target
    assert math.isclose(float(toy_tasks.masked_loss(logits, targets)), float(manual), rel_tol=1e-6)

    # Anything at an ignored position changes neither the loss nor the accuracy.
    changed = logits.clone()
    changed[~keep] = 100.0 * torch.randn(int((~keep).sum()), 11, generator=gen(4))
    assert float(toy_tasks.masked_loss(changed, targets)) == float(
        toy_tasks.masked_loss(logits, targets)
    )
    assert toy_tasks.masked_accuracy(changed, targets) == toy_tasks.masked_accuracy(logits, targets)
    correct = (logits.argmax(-1) == targets)[keep].float().mean()
    assert math.isclose(toy_tasks.masked_accuracy(logits, targets), float(correct))


def test_expected_share_averages_the_weight_on_the_expected_key_over_positions_that_have_one():
    T = 3
    expected_key = torch.tensor([[toy_tasks.NO_KEY, 0, 1]])  # (b=1, T)
    weights = torch.zeros(1, 2, T, T)  # two heads
    weights[0, 0] = torch.tensor([[1.0, 0, 0], [0.8, 0.2, 0], [0.1, 0.6, 0.3]])
    weights[0, 1] = torch.tensor([[1.0, 0, 0], [0.5, 0.5, 0], [0.0, 0.0, 1.0]])
    share = toy_tasks.expected_share(weights, expected_key)
    assert share == pytest.approx(((0.8 + 0.6) / 2, (0.5 + 0.0) / 2))


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(task="copy"), "task must be one of"),
        (dict(num_heads=3), "not divisible"),
        (dict(steps=0), "steps=0 is outside"),
        (dict(lr=float("nan")), "lr=nan is outside"),
        (dict(k=12, seq_len=12), "k=12 is outside"),
        (dict(seed=1.5), "seed must be a whole number"),
    ],
)
def test_config_rejects_bad_values_with_a_reason(changes, message):
    with pytest.raises(ValueError, match=message):
        toy_tasks.LearnConfig(**changes)


def test_inputs_are_one_hot_token_beside_one_hot_position():
    cfg = toy_tasks.LearnConfig()
    model = toy_tasks.build_model(cfg)
    tokens = torch.tensor([[0, 3, cfg.vocab + 3] + [1] * (cfg.seq_len - 3)])
    x = model.encode(tokens)
    assert x.shape == (1, cfg.seq_len, cfg.d_in) == (1, 12, 32)
    assert torch.equal(x.sum(dim=-1), torch.full((1, cfg.seq_len), 2.0))
    assert x[0, 2, cfg.vocab + 3] == 1 and x[0, 2, 3] == 0  # marked 3 is its own symbol
    assert torch.equal(x[0, :, 2 * cfg.vocab :], torch.eye(cfg.seq_len))
    assert not any(p is x for p in model.parameters())
    assert model.attention.dropout.p == 0.0


def test_pattern_share_reads_one_example_the_same_way():
    expected = torch.zeros(3, 3)
    expected[1, 0] = expected[2, 1] = 1.0
    weights = torch.tensor([[[1.0, 0, 0], [0.8, 0.2, 0], [0.1, 0.6, 0.3]]])  # one head
    assert toy_tasks.pattern_share(weights, expected) == pytest.approx(((0.8 + 0.6) / 2,))
    key = torch.tensor([[toy_tasks.NO_KEY, 0, 1]])
    assert toy_tasks.pattern_share(weights, expected) == pytest.approx(
        toy_tasks.expected_share(weights[None], key)
    )


def test_example_rows_spell_out_the_fixed_example():
    rows = toy_tasks.example_rows(toy_tasks.LearnConfig(task="shift", k=2))
    assert rows["target"][:2] == ("—", "—")
    assert rows["target"][2:] == rows["input"][:-2]
    marked = toy_tasks.example_rows(toy_tasks.LearnConfig(task="marked"))
    symbol = marked["input"][toy_tasks.EXAMPLE_MARK]
    assert symbol.endswith("*")
    assert marked["target"] == ("none",) * toy_tasks.EXAMPLE_MARK + (symbol[:-1],) * (
        12 - toy_tasks.EXAMPLE_MARK
    )
