"""The task, the measurements and the training loop that grows an induction head.

The task: random token sequences of ``context`` tokens whose last ``L`` tokens repeat the ``L``
before them, ``L`` drawn from ``min_repeat … max_repeat`` for each sequence. The model predicts
every next token. The tokens before the repeat are random, so no model can beat ln(vocab) on
them; the repeat is predictable by a model that finds where the current token occurred before
and copies the token that followed it: an induction head. ``L`` varies so that where the repeat
starts is not a fixed position (with a fixed ``L`` a one-layer model scores well by position
alone).

Randomness: the model is built inside :func:`attnviz.core.seeding.seeded`; training batches come
from a private ``torch.Generator`` seeded with the run's seed; the held-out sequences, on which
every score is measured, from their own generator with a fixed seed, the same for every run.
Training never draws from torch's global generator. Same :class:`TrainConfig`, same number of
threads: the same numbers, bit for bit.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np
import torch
import torch.nn.functional as F

from attnviz.models import detectors as D
from attnviz.models import recording
from attnviz.models.induction.model import (
    InductionModel,
    ModelConfig,
    build_model,
    parameters_of,
    run,
)

Tensor = torch.Tensor

# Above the students' seed range (0 … 2**31 - 1), below 2**32: no training seed draws these.
HELD_OUT_SEED = 2**31 + 2024
HELD_OUT_SIZE = 256
SCORES = tuple(D.DETECTORS)  # "previous", "current", "first", "induction"


@dataclass(frozen=True)
class TrainConfig:
    """One training run: the model's sizes, the task, the optimiser and the seed."""

    model: ModelConfig = ModelConfig()
    min_repeat: int = 4
    max_repeat: int = 12
    lr: float = 1e-3
    batch_size: int = 64
    steps: int = 4000
    seed: int = 0

    def __post_init__(self) -> None:
        problems = []
        if not 1 <= self.min_repeat <= self.max_repeat:
            problems.append("need 1 <= min_repeat <= max_repeat")
        if 2 * self.max_repeat > self.model.context:
            problems.append(f"a repeat of {self.max_repeat} twice exceeds {self.model.context}")
        problems += recording.config_problems(
            lr=self.lr, batch_size=self.batch_size, steps=self.steps, seed=self.seed
        )
        if problems:
            raise ValueError("; ".join(problems))


# --- the task -------------------------------------------------------------------------------
@dataclass(frozen=True)
class RepeatBatch:
    """tokens (b, T); repeat (b,): each sequence's L (its last L tokens repeat the L before)."""

    tokens: Tensor
    repeat: Tensor


def repeat_batch(cfg: TrainConfig, gen: torch.Generator, size: int) -> RepeatBatch:
    """``size`` random sequences, each ending in a repeat of length L in min_repeat … max_repeat."""
    T, vocab = cfg.model.context, cfg.model.vocab
    tokens = torch.randint(0, vocab, (size, T), generator=gen)
    lengths = torch.randint(cfg.min_repeat, cfg.max_repeat + 1, (size,), generator=gen)
    i = torch.arange(T)
    source = torch.where(i >= T - lengths[:, None], i - lengths[:, None], i)  # (b, T)
    return RepeatBatch(tokens.gather(1, source), lengths)


def held_out(cfg: TrainConfig, size: int = HELD_OUT_SIZE) -> RepeatBatch:
    """Sequences never trained on, the same for every run of these sizes."""
    return repeat_batch(cfg, torch.Generator().manual_seed(HELD_OUT_SEED), size)


def copy_masks(num_tokens: int, repeat: Tensor) -> tuple[Tensor, Tensor]:
    """Which next-token predictions count as "the first copy" and "the repeat": two boolean
    (b, T-1) masks over the targets ``tokens[:, 1:]`` (target p-1 is token p).

    First copy: the tokens at ``T-2L … T-L-1`` (position 0 has no prediction). Repeat: the
    tokens at ``T-L+1 … T-1``, the ones the earlier copy predicts (the repeat's first token
    follows a random one, so nothing predicts it).
    """
    p = torch.arange(1, num_tokens)[None, :]  # the target's position
    L = repeat[:, None]
    first = (p >= num_tokens - 2 * L) & (p < num_tokens - L)
    again = p >= num_tokens - L + 1
    return first, again


def token_losses(logits: Tensor, tokens: Tensor) -> Tensor:
    """(b, T-1): cross-entropy of each next-token prediction, in nats."""
    return F.cross_entropy(
        logits[:, :-1].flatten(0, 1), tokens[:, 1:].flatten(), reduction="none"
    ).view(tokens.shape[0], -1)


# --- what is measured -----------------------------------------------------------------------
@dataclass(frozen=True)
class Measures:
    """Held-out measurements of one model: losses in nats and every head's scores."""

    loss_first: float  # mean loss on the first copy (chance: ln vocab)
    loss_repeat: float  # mean loss on the predictable tokens of the repeat
    scores: Mapping[str, np.ndarray]  # detector -> (layers, heads)

    @property
    def induction(self) -> float:
        """The model's induction score: its highest head's."""
        return float(np.max(self.scores["induction"]))

    def as_dict(self) -> dict:
        return {
            "loss_first": self.loss_first,
            "loss_repeat": self.loss_repeat,
            **{name: np.round(self.scores[name], 6).tolist() for name in SCORES},
        }


def measure(
    model: InductionModel,
    batch: RepeatBatch,
    ablate: tuple[tuple[int, int], ...] = (),
    where: Tensor | None = None,
) -> Measures:
    """Losses on the two copies and every detector's per-head scores, over ``batch``
    (``ablate``, ``where``: heads zeroed, and where, as :func:`attnviz.models.induction.model.run`
    takes them)."""
    result = run(model, batch.tokens, ablate, where)
    losses = token_losses(result.logits, batch.tokens)
    first, again = copy_masks(batch.tokens.shape[1], batch.repeat)
    scores = D.all_scores(result.attn_weights, repeat=batch.repeat, batch=True)
    frozen = {k: _readonly(v) for k, v in scores.items()}
    return Measures(
        loss_first=float(losses[first].mean()),
        loss_repeat=float(losses[again].mean()),
        scores=MappingProxyType(frozen),
    )


def _readonly(array: np.ndarray) -> np.ndarray:
    array = np.array(array, dtype=np.float64)
    array.setflags(write=False)
    return array


# --- training -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Progress:
    """Where a run stands: yielded by :func:`train` as it goes."""

    step: int  # optimiser steps taken
    steps: int  # of this many
    train_loss: float  # mean loss of the last batch (nan at step 0)
    measures: Measures  # on the held-out sequences
    seconds: float  # wall time since the run started
    cpu_seconds: float  # CPU time of this thread since the run started
    params: Mapping[str, Tensor] | None = field(default=None, repr=False)  # a checkpoint

    @property
    def done(self) -> bool:
        return self.step >= self.steps


def train(
    cfg: TrainConfig,
    *,
    measure_every: int = 25,
    checkpoint_every: int | None = None,
    report_seconds: float | None = None,
    cancel: threading.Event | None = None,
    held_out_size: int = HELD_OUT_SIZE,
) -> Iterator[Progress]:
    """Train ``cfg``'s model with Adam, yielding :class:`Progress` as it goes.

    A progress report (held-out measures included) comes at step 0, every ``measure_every``
    steps, at the last step, and, when ``report_seconds`` is given, whenever that many seconds
    passed since the last report (so a page hears at least that often; the steps of those
    extra reports depend on the machine's speed). Reports at multiples of ``checkpoint_every``
    carry a copy of the parameters. Cancel by closing the generator, by leaving the loop that
    reads it, or by setting ``cancel``: the run stops before its next step. ``held_out_size``:
    how many held-out sequences each report measures (drawn from the same fixed generator).
    """
    started, cpu_started = time.perf_counter(), time.thread_time()
    model = build_model(cfg.model, cfg.seed)
    model.train()  # no dropout: training mode draws nothing
    batches = torch.Generator().manual_seed(cfg.seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    test = held_out(cfg, held_out_size)
    last_report = started

    def report(step: int, loss: float) -> Progress:
        nonlocal last_report
        model.eval()
        measures = measure(model, test)
        model.train()
        keep = checkpoint_every is not None and step % checkpoint_every == 0
        last_report = time.perf_counter()
        return Progress(
            step=step,
            steps=cfg.steps,
            train_loss=loss,
            measures=measures,
            seconds=last_report - started,
            cpu_seconds=time.thread_time() - cpu_started,
            params=MappingProxyType(parameters_of(model)) if keep else None,
        )

    yield report(0, math.nan)
    for step in range(1, cfg.steps + 1):
        if cancel is not None and cancel.is_set():
            return
        batch = repeat_batch(cfg, batches, cfg.batch_size)
        logits = model(batch.tokens)  # (b, T, vocab)
        loss = token_losses(logits, batch.tokens).mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        due = step % measure_every == 0 or step == cfg.steps
        if checkpoint_every is not None and step % checkpoint_every == 0:
            due = True
        late = report_seconds is not None and time.perf_counter() - last_report >= report_seconds
        if due or late:
            yield report(step, float(loss.detach()))
