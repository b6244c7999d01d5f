"""Watch attention learn: train one causal attention layer on a task whose answer is known.

The chapter's weights are random, so its attention rows are nearly uniform. Here one
``MultiHeadAttention`` layer (the engine's own module, causal, dropout 0) plus a small output
layer is trained on synthetic sequences where the right attention pattern is known in advance:

- ``shift``: output the token ``k`` positions earlier. Position ``i`` should attend to key
  ``i - k`` (one off-diagonal); positions before ``k`` have no target.
- ``marked``: each sequence holds exactly one marked token (a marked copy of a vocabulary item).
  Every position at or after it outputs that token's symbol, earlier positions output "none".
  Positions at or after the mark should attend to the mark's column.

Inputs are fixed, not learnt: one-hot token (plain and marked symbols) beside one-hot position,
so one layer can learn both tasks (at the book's width of 3 neither is learnable).

Randomness: the module is built inside :func:`attnviz.core.seeding.seeded` (construction only, so
the chapter's seeding conventions hold); batches come from a private ``torch.Generator``, the
held-out set from another one. Training never draws from torch's global generator and never
holds the seeding lock, so other students' seeded blocks run while it trains. The same
:class:`LearnConfig` gives bit-identical results.

The result is an immutable :class:`LearnResult`: tuples and read-only inference tensors, safe to
cache and share between sessions.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import torch
import torch.nn as nn
import torch.nn.functional as F

from attnviz.core import modules as M
from attnviz.core.seeding import seeded
from attnviz.core.trace import record

IGNORE = -100  # target of a position that has nothing to predict (cross_entropy's ignore_index)
NO_KEY = -1  # expected key of a position that has none

TASKS = {
    "shift": "Output the token k positions earlier",
    "marked": "Output the marked token seen so far",
}
SYMBOLS = tuple("ABCDEFGHIJKLMNOP")
# Seeds above the students' range (0 to 2**31 - 1) and below 2**32 (torch's CPU generator keeps
# only the low 32 bits), so no training seed draws the same sequences. The held-out set is the
# same for every run, and so is the fixed example.
HELD_OUT_SEED = 2**31 + 17
EXAMPLE_SEED = 2**31 + 7  # the fixed example whose attention the snapshots show
EXAMPLE_MARK = 4  # where the fixed example's mark sits (the marked task)
HELD_OUT_SIZE = 1000

# The defaults (Adam, one head, batches of 64): measured to reach 100% held-out accuracy and
# >= 0.96 of the attention on the expected key for both tasks over seeds 0-29
# (bench/learn_defaults.py; tests/learn checks six seeds). Both are solved by about step 40. At smaller rates the loss still reaches
# ~0 but the attention stays blurry: once the read-out is confident the gradients vanish, and
# nothing pushes the weights to sharpen further (try 0.01 on the shift task).
DEFAULT_LR = 0.05
DEFAULT_STEPS = 120
LR_CHOICES = (0.003, 0.01, 0.02, 0.05, 0.1)
HEAD_CHOICES = (1, 2, 4)

# (lowest, highest) for every number a student can set.
BOUNDS: dict[str, tuple[float, float]] = {
    "k": (1, 4),
    "num_heads": (1, 4),
    "lr": (1e-4, 0.3),
    "steps": (1, 1000),
    "seed": (0, 2**31 - 1),
    "vocab": (2, len(SYMBOLS)),
    "seq_len": (4, 32),
    "d_out": (4, 128),
    "batch_size": (1, 512),
    "snapshots": (2, 40),
}


@dataclass(frozen=True)
class LearnConfig:
    """Everything that shapes one training run; validated here, once."""

    task: str = "shift"
    k: int = 2  # the shift task's distance (ignored by the marked task)
    num_heads: int = 1
    lr: float = DEFAULT_LR
    steps: int = DEFAULT_STEPS
    seed: int = 123
    vocab: int = 10
    seq_len: int = 12
    d_out: int = 32
    batch_size: int = 64
    snapshots: int = 16

    def __post_init__(self) -> None:
        problems = []
        if self.task not in TASKS:
            problems.append(f"task must be one of {', '.join(TASKS)}")
        for name, (low, high) in BOUNDS.items():
            value = getattr(self, name)
            wanted = float if name == "lr" else int
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                problems.append(f"{name} must be a number")
            elif wanted is int and not isinstance(value, int):
                problems.append(f"{name} must be a whole number")
            elif not low <= value <= high:
                problems.append(f"{name}={value} is outside {low:g}–{high:g}")
        if not problems:
            if self.d_out % self.num_heads:
                problems.append(f"d_out={self.d_out} is not divisible by {self.num_heads} heads")
            if self.task == "shift" and self.k >= self.seq_len:
                problems.append(f"k={self.k} leaves nothing to predict in {self.seq_len} tokens")
        if problems:
            raise ValueError("; ".join(problems))

    @property
    def d_in(self) -> int:
        """One-hot plain symbol, one-hot marked symbol, one-hot position."""
        return 2 * self.vocab + self.seq_len

    @property
    def num_classes(self) -> int:
        """Every symbol, plus "none" (class ``vocab``)."""
        return self.vocab + 1


# --- the tasks ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Batch:
    """Sequences with their targets and the key each position should attend to.

    tokens (b, T): 0..vocab-1 plain symbols, vocab..2*vocab-1 marked ones.
    targets (b, T): the class to output, or ``IGNORE``.
    expected_key (b, T): the position to attend to, or ``NO_KEY``.
    """

    tokens: torch.Tensor
    targets: torch.Tensor
    expected_key: torch.Tensor


def shift_batch(gen: torch.Generator, size: int, vocab: int, seq_len: int, k: int) -> Batch:
    """Random symbols; position i's target is the token at i - k (none for i < k)."""
    tokens = torch.randint(0, vocab, (size, seq_len), generator=gen)
    targets = torch.full_like(tokens, IGNORE)
    targets[:, k:] = tokens[:, :-k]
    positions = torch.arange(seq_len)
    expected = torch.where(positions >= k, positions - k, NO_KEY).expand(size, seq_len)
    return Batch(tokens, targets, expected.clone())


def marked_batch(
    gen: torch.Generator, size: int, vocab: int, seq_len: int, mark_at: int | None = None
) -> Batch:
    """Random symbols with one marked copy at a random position (or ``mark_at``).

    Positions at or after the mark output its symbol and should attend to it; earlier positions
    output "none" (class ``vocab``) and have no expected key.
    """
    symbols = torch.randint(0, vocab, (size, seq_len), generator=gen)
    if mark_at is None:
        mark = torch.randint(0, seq_len, (size,), generator=gen)
    else:
        mark = torch.full((size,), mark_at)
    rows = torch.arange(size)
    tokens = symbols.clone()
    tokens[rows, mark] += vocab  # the marked copy of the same symbol
    after = torch.arange(seq_len)[None, :] >= mark[:, None]  # (b, T)
    targets = torch.where(after, symbols[rows, mark][:, None], vocab)
    expected = torch.where(after, mark[:, None], NO_KEY)
    return Batch(tokens, targets, expected)


def make_batch(cfg: LearnConfig, gen: torch.Generator, size: int) -> Batch:
    if cfg.task == "shift":
        return shift_batch(gen, size, cfg.vocab, cfg.seq_len, cfg.k)
    return marked_batch(gen, size, cfg.vocab, cfg.seq_len)


def example(cfg: LearnConfig) -> Batch:
    """The fixed held-out example the snapshots show (one sequence; the marked task puts the
    mark at position ``EXAMPLE_MARK`` so both sides of it are visible)."""
    gen = torch.Generator().manual_seed(EXAMPLE_SEED)
    if cfg.task == "shift":
        return shift_batch(gen, 1, cfg.vocab, cfg.seq_len, cfg.k)
    return marked_batch(gen, 1, cfg.vocab, cfg.seq_len, min(EXAMPLE_MARK, cfg.seq_len - 1))


def held_out(cfg: LearnConfig, size: int = HELD_OUT_SIZE) -> Batch:
    """Fresh sequences from their own generator, never used for training."""
    return make_batch(cfg, torch.Generator().manual_seed(HELD_OUT_SEED), size)


def token_labels(cfg: LearnConfig, tokens: torch.Tensor) -> tuple[str, ...]:
    """One label per position: ``"3: C"``, and ``"4: C*"`` for a marked symbol."""
    out = []
    for i, t in enumerate(tokens.tolist()):
        symbol = SYMBOLS[t % cfg.vocab] + ("*" if t >= cfg.vocab else "")
        out.append(f"{i}: {symbol}")
    return tuple(out)


def class_names(cfg: LearnConfig) -> tuple[str, ...]:
    return (*SYMBOLS[: cfg.vocab], "none")


def example_rows(cfg: LearnConfig) -> dict[str, tuple[str, ...]]:
    """The fixed example as text: each position's input symbol and its target ("—": none)."""
    fixed = example(cfg)
    names = class_names(cfg)
    return {
        "input": tuple(label.split(": ", 1)[1] for label in token_labels(cfg, fixed.tokens[0])),
        "target": tuple("—" if t == IGNORE else names[t] for t in fixed.targets[0].tolist()),
    }


def expected_pattern(expected_key: torch.Tensor, seq_len: int) -> torch.Tensor:
    """(T, T): 1 where query i should attend (key ``expected_key[i]``), 0 elsewhere.

    Rows without an expected key are all zeros. ``expected_key``: (T,) for one sequence.
    """
    pattern = torch.zeros(seq_len, seq_len)
    rows = torch.nonzero(expected_key >= 0).flatten()
    pattern[rows, expected_key[rows]] = 1.0
    return pattern


# --- the model ----------------------------------------------------------------------------
class AttentionLearner(nn.Module):
    """Fixed one-hot inputs -> the chapter's ``MultiHeadAttention`` -> a linear read-out.

    There is no residual path: every prediction has to come through the attention weights, so
    the task can only be solved by attending to the right key.
    """

    def __init__(self, vocab: int, seq_len: int, d_out: int, num_heads: int):
        super().__init__()
        self.vocab = vocab
        self.seq_len = seq_len
        d_in = 2 * vocab + seq_len
        self.attention = M.MultiHeadAttention(
            d_in, d_out, context_length=seq_len, dropout=0.0, num_heads=num_heads
        )
        self.classifier = nn.Linear(d_out, vocab + 1)

    def encode(self, tokens: torch.Tensor) -> torch.Tensor:
        """(b, T) token ids -> (b, T, 2*vocab + T): one-hot token beside one-hot position."""
        b, num_tokens = tokens.shape
        token_part = F.one_hot(tokens, 2 * self.vocab).float()  # (b, T, 2*vocab)
        position_part = torch.eye(self.seq_len)[:num_tokens].expand(b, -1, -1)  # (b, T, T)
        return torch.cat([token_part, position_part], dim=-1)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.encode(tokens)  # (b, T, d_in)
        context_vec = self.attention(x)  # (b, T, d_out)
        return self.classifier(context_vec)  # (b, T, classes)


def build_model(cfg: LearnConfig) -> AttentionLearner:
    """Construction draws the initial weights: inside the seeding helper, and nothing else."""
    with seeded(cfg.seed):
        return AttentionLearner(cfg.vocab, cfg.seq_len, cfg.d_out, cfg.num_heads)


def masked_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over the positions that have a target (``IGNORE`` ones drop out)."""
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=IGNORE)


def masked_accuracy(logits: torch.Tensor, targets: torch.Tensor) -> float:
    """Share of positions with a target whose highest logit is the target."""
    has_target = targets != IGNORE
    correct = (logits.argmax(dim=-1) == targets) & has_target
    return float(correct.sum()) / max(1, int(has_target.sum()))


def attention_weights(model: AttentionLearner, tokens: torch.Tensor) -> torch.Tensor:
    """(b, H, T, T) weights, read off the module's own forward (its ``tap`` points)."""
    with torch.no_grad():
        _, taps = record(lambda: model(tokens))
    return taps["attn_weights"][0]


def expected_share(weights: torch.Tensor, expected_key: torch.Tensor) -> tuple[float, ...]:
    """Per head: the mean weight on the expected key, over positions that have one.

    weights (b, H, T, T), expected_key (b, T).
    """
    has_key = expected_key >= 0  # (b, T)
    index = expected_key.clamp(min=0)[:, None, :, None].expand(-1, weights.shape[1], -1, 1)
    on_key = weights.gather(-1, index).squeeze(-1)  # (b, H, T)
    per_head = (on_key * has_key[:, None, :]).sum(dim=(0, 2)) / has_key.sum()
    return tuple(float(v) for v in per_head)


def pattern_share(weights: torch.Tensor, expected: torch.Tensor) -> tuple[float, ...]:
    """Per head: the mean weight on the expected key of one example, over rows that have one.

    weights (H, T, T), expected (T, T) as from :func:`expected_pattern`.
    """
    rows = expected.sum(dim=-1) > 0
    on_key = (weights * expected).sum(dim=-1)  # (H, T)
    return tuple(float(v) for v in on_key[:, rows].mean(dim=-1))


# --- training -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Snapshot:
    step: int
    weights: torch.Tensor  # (H, T, T): every head's weights on the fixed example


@dataclass(frozen=True)
class LearnResult:
    """One finished run, immutable. Curves have one entry per step (step 1..steps)."""

    config: LearnConfig
    loss: tuple[float, ...]
    accuracy: tuple[float, ...]  # on each training batch
    snapshots: tuple[Snapshot, ...]  # step 0 (the untrained layer) through the last step
    labels: tuple[str, ...]  # the fixed example's positions, "3: C"
    expected: torch.Tensor  # (T, T) the pattern that solves the task, on the example
    held_out_accuracy: float
    held_out_loss: float
    head_share: tuple[float, ...]  # per head: attention mass on the expected key (held out)
    state: Mapping[str, torch.Tensor]  # the final weights
    seconds: float = field(default=0.0, compare=False)  # wall time of the run

    @property
    def final_weights(self) -> torch.Tensor:
        return self.snapshots[-1].weights


def snapshot_steps(steps: int, count: int) -> tuple[int, ...]:
    """``count`` steps spread evenly over 0..steps (fewer when there are fewer steps)."""
    return tuple(sorted({round(i * steps / (count - 1)) for i in range(count)}))


def _frozen(tensor: torch.Tensor) -> torch.Tensor:
    with torch.inference_mode():
        return tensor.detach().clone()


def train(cfg: LearnConfig, on_progress: Callable[[int, int], None] | None = None) -> LearnResult:
    """Train one causal attention layer on ``cfg.task`` and record how its attention changes.

    Adam at ``cfg.lr`` on fresh batches of ``cfg.batch_size`` sequences each step.
    ``on_progress(step, total)`` is called after every step.
    """
    started = time.perf_counter()
    model = build_model(cfg)  # the only draw from the global generator, inside seeded()
    model.train()  # dropout is 0, so training mode draws nothing
    batches = torch.Generator().manual_seed(cfg.seed)  # private: batch sampling
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    fixed = example(cfg)
    wanted = set(snapshot_steps(cfg.steps, cfg.snapshots))
    snapshots: list[Snapshot] = []
    losses: list[float] = []
    accuracies: list[float] = []

    def snap(step: int) -> None:
        snapshots.append(Snapshot(step, _frozen(attention_weights(model, fixed.tokens)[0])))

    snap(0)
    for step in range(1, cfg.steps + 1):
        batch = make_batch(cfg, batches, cfg.batch_size)
        logits = model(batch.tokens)  # (b, T, classes)
        loss = masked_loss(logits, batch.targets)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
        accuracies.append(masked_accuracy(logits.detach(), batch.targets))
        if step in wanted:
            snap(step)
        if on_progress is not None:
            on_progress(step, cfg.steps)

    model.eval()
    test = held_out(cfg)
    with torch.no_grad():
        logits, taps = record(lambda: model(test.tokens))
        test_loss = float(masked_loss(logits, test.targets))
        test_accuracy = masked_accuracy(logits, test.targets)
        share = expected_share(taps["attn_weights"][0], test.expected_key)
    return LearnResult(
        config=cfg,
        loss=tuple(losses),
        accuracy=tuple(accuracies),
        snapshots=tuple(snapshots),
        labels=token_labels(cfg, fixed.tokens[0]),
        expected=_frozen(expected_pattern(fixed.expected_key[0], cfg.seq_len)),
        held_out_accuracy=test_accuracy,
        held_out_loss=test_loss,
        head_share=share,
        state=MappingProxyType({n: _frozen(t) for n, t in model.state_dict().items()}),
        seconds=time.perf_counter() - started,
    )
