"""Training the two encoder–decoders, and what is measured on them.

Every step draws one sentence length from ``min_length … max_length`` and a batch of sentences
of that length from a private ``torch.Generator`` seeded with the run's seed, and takes one
Adam step on the teacher-forced cross-entropy (gradient norm clipped; the learning rate falls
from ``lr`` to ``lr * final_lr`` on a cosine over the run). The model's initial
weights come through :func:`attnviz.core.seeding.seeded`; nothing draws from torch's global
generator during training. One torch thread, the same configuration: the same weights, bit for
bit.

Token accuracy is measured with greedy decoding (each step feeds back the word the model chose,
as it would translate a new sentence) on held-out sentences of each length, the same for every
run: the share of target words that are right at their place.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import torch
import torch.nn.functional as F

from attnviz.models import recording
from attnviz.models.bottleneck import encoder_decoder, toy_language

Tensor = torch.Tensor
CURVE_LENGTHS = (5, 10, 20, 30, 40)  # lengths measured during training
MEASURED_LENGTHS = tuple(range(5, 41))  # lengths measured at the end


@dataclass(frozen=True)
class TrainConfig:
    """One training run."""

    model: encoder_decoder.Seq2SeqConfig
    min_length: int = 4
    max_length: int = 40
    lr: float = 3e-3
    clip: float = 1.0
    final_lr: float = 0.05  # the last step's learning rate, as a share of ``lr``
    batch_size: int = 64
    steps: int = 1500
    seed: int = 0

    def __post_init__(self) -> None:
        problems = []
        if (
            not toy_language.MIN_LENGTH
            <= self.min_length
            <= self.max_length
            <= toy_language.MAX_LENGTH
        ):
            problems.append(
                f"need {toy_language.MIN_LENGTH} <= min_length <= max_length <= {toy_language.MAX_LENGTH}"
            )
        if not 0 <= self.final_lr <= 1:
            problems.append(f"final_lr={self.final_lr} is outside 0–1")
        if not 0 < self.clip:
            problems.append(f"clip={self.clip} must be positive")
        problems += recording.config_problems(
            lr=self.lr, batch_size=self.batch_size, steps=self.steps, seed=self.seed
        )
        if problems:
            raise ValueError("; ".join(problems))


def learning_rate(cfg: TrainConfig, step: int) -> float:
    """The learning rate of step ``step`` (1 … steps): a cosine from ``lr`` to ``lr * final_lr``."""
    done = (step - 1) / max(cfg.steps - 1, 1)
    share = cfg.final_lr + (1 - cfg.final_lr) * 0.5 * (1 + math.cos(math.pi * done))
    return cfg.lr * share


def token_accuracy(model: encoder_decoder.EncoderDecoder, source: Tensor) -> float:
    """The share of target words greedy decoding gets right, at their place."""
    decoded = model.greedy(source)
    return float((decoded.ids == toy_language.target_ids(source)).float().mean())


def accuracy_by_length(
    model: encoder_decoder.EncoderDecoder, lengths: tuple[int, ...], size: int
) -> dict[int, float]:
    was = model.training
    model.eval()
    try:
        return {n: token_accuracy(model, toy_language.held_out(n, size)) for n in lengths}
    finally:
        model.train(was)


def alignment_hits(
    model: encoder_decoder.EncoderDecoder, lengths: tuple[int, ...], size: int
) -> float:
    """The share of target words whose largest attention weight falls on the source word they
    translate (greedy decoding of held-out sentences), over every length in ``lengths``."""
    hits = total = 0
    for n in lengths:
        decoded = model.greedy(toy_language.held_out(n, size))
        assert decoded.weights is not None, "a bottleneck model has no alignment"
        truth = torch.tensor(toy_language.true_source_position(n))
        hits += int((decoded.weights.argmax(-1) == truth).sum())
        total += decoded.weights.shape[0] * n
    return hits / total


@dataclass(frozen=True)
class Progress:
    step: int
    steps: int
    train_loss: float  # the last batch's mean loss (nan at step 0)
    accuracy: Mapping[int, float]  # held-out token accuracy at CURVE_LENGTHS
    seconds: float
    cpu_seconds: float
    params: Mapping[str, Tensor] | None = field(default=None, repr=False)  # at the end only

    @property
    def done(self) -> bool:
        return self.step >= self.steps


def train(
    cfg: TrainConfig,
    *,
    measure_every: int = 50,
    curve_size: int = 64,
    cancel: threading.Event | None = None,
) -> Iterator[Progress]:
    """Train ``cfg``'s model, yielding progress at step 0, every ``measure_every`` steps and at
    the end (which carries the parameters). Stop early by closing the generator or setting
    ``cancel``."""
    started, cpu_started = time.perf_counter(), time.thread_time()
    model = encoder_decoder.build(cfg.model, cfg.seed)
    model.train()
    batches = torch.Generator().manual_seed(cfg.seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr)

    def report(step: int, loss: float) -> Progress:
        accuracy = accuracy_by_length(model, CURVE_LENGTHS, curve_size)
        done = step >= cfg.steps
        return Progress(
            step=step,
            steps=cfg.steps,
            train_loss=loss,
            accuracy=MappingProxyType(accuracy),
            seconds=time.perf_counter() - started,
            cpu_seconds=time.thread_time() - cpu_started,
            params=MappingProxyType(encoder_decoder.parameters_of(model)) if done else None,
        )

    yield report(0, math.nan)
    for step in range(1, cfg.steps + 1):
        if cancel is not None and cancel.is_set():
            return
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(cfg, step)
        length = int(torch.randint(cfg.min_length, cfg.max_length + 1, (1,), generator=batches))
        source = toy_language.sentences(length, cfg.batch_size, batches)
        target = toy_language.target_ids(source)
        logits = model(source, target)
        loss = F.cross_entropy(logits.flatten(0, 1), target.flatten())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip)
        optimizer.step()
        if step % measure_every == 0 or step == cfg.steps:
            yield report(step, float(loss.detach()))
