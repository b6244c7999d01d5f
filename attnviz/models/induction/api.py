"""What the growing page calls: pure functions over the recorded run, and the live trainer.

Nothing here trains on the server except :func:`grow`, which a page runs only when a student
asks, inside the server's heavy-work budget. Everything else reads the shipped run
(:mod:`attnviz.models.induction.recorded`), loaded once and shared; results are immutable values.

"Induction score" of a model or a layer is its highest head's (:func:`layer_induction`). Heads
are named only from their measured scores (:func:`attnviz.models.detectors.name_of`).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import torch

from attnviz.models import detectors as D
from attnviz.models.induction import mechanism
from attnviz.models.induction import train as trainer
from attnviz.models.induction.model import ModelConfig, run
from attnviz.models.induction.recorded import RecordedRun, recorded

Tensor = torch.Tensor
RUNS = ("reference", "control")
# The live trainer reports after this many seconds of training, plus one step and one
# measurement of GROW_HELD_OUT sequences (scripts/train-induction --grow prints the gaps).
REPORT_SECONDS = 0.4
GROW_HELD_OUT = 64


def _run(name: str) -> RecordedRun:
    if name not in RUNS:
        raise ValueError(f"run must be one of {RUNS}, not {name!r}")
    return getattr(recorded(), name)


def steps(name: str = "reference") -> tuple[int, ...]:
    """The steps with a checkpoint (what the slider scrubs through)."""
    return _run(name).steps


def layer_induction(measures: trainer.Measures, layer: int = -1) -> float:
    """A layer's induction score: its highest head's (the last layer by default)."""
    return float(np.max(measures.scores["induction"][layer]))


# --- curves over the run --------------------------------------------------------------------
@dataclass(frozen=True)
class Curves:
    """The run's held-out measurements over steps: one row per logged step."""

    steps: tuple[int, ...]
    loss_first: tuple[float, ...]  # nats; chance is ln(vocab)
    loss_repeat: tuple[float, ...]
    chance: float  # ln(vocab)
    scores: Mapping[str, np.ndarray]  # detector -> (steps, layers, heads), read-only


@functools.cache
def curves(name: str = "reference") -> Curves:
    r = _run(name)
    stacked = {}
    for score in trainer.SCORES:
        array = np.stack([e.measures.scores[score] for e in r.log])
        array.setflags(write=False)
        stacked[score] = array
    return Curves(
        steps=r.log_steps,
        loss_first=tuple(e.measures.loss_first for e in r.log),
        loss_repeat=tuple(e.measures.loss_repeat for e in r.log),
        chance=float(np.log(r.config.model.vocab)),
        scores=MappingProxyType(stacked),
    )


def at_step(step: int, name: str = "reference") -> trainer.Measures:
    """The held-out losses and every head's scores logged at ``step``."""
    return _run(name).entry(step).measures


def head_names(measures: trainer.Measures) -> tuple[tuple[str | None, ...], ...]:
    """Per (layer, head): what its scores say it does, e.g. "previous-token head (score
    0.77)", or None when no score reaches :data:`attnviz.models.detectors.NAMED_AT`."""
    s = measures.scores
    layers, heads = s["induction"].shape
    return tuple(
        tuple(D.name_of({k: float(s[k][lay, h]) for k in trainer.SCORES}) for h in range(heads))
        for lay in range(layers)
    )


# --- the heads' maps on a given sequence ----------------------------------------------------
FILLER_SEED = 2**31 + 3  # the filler tokens in front of a student's text, the same every time


@dataclass(frozen=True)
class Probe:
    """A student's text laid out the way the model saw repeats in training: random filler
    tokens, then the text, then the text again, ending at the model's last position.

    The model only ever saw repeats that end at position 23 (the end of its context), after
    random tokens: its heads use the positions, and on a short sequence that starts at 0 its
    induction heads do not fire (measured at step 4000 on six distinct tokens twice: layer 1's
    best induction score 0.08 with no filler, 0.82 behind 12 filler tokens; tested in
    tests/induction/test_api.py). So the probe fills the front
    with distinct ids that the text does not use, drawn from a fixed private generator."""

    ids: tuple[int, ...]  # model ids, 0 … 63: filler, text, text
    labels: tuple[str, ...]  # one per position: "3: ·" for filler, "9: ␣step" for the text
    start: int  # where the text's first copy starts
    repeat: int  # L: the text's length; the last L tokens repeat the L before them
    messages: tuple[str, ...] = ()


def probe(model_ids: Sequence[int], displays: Sequence[str], context: int = 24) -> Probe:
    """Filler, then ``model_ids`` twice, ``context`` tokens in all. A text longer than
    ``context // 2`` tokens is cut to that, with a message. ``displays``: one per token."""
    if len(model_ids) != len(displays) or not model_ids:
        raise ValueError("need one display per token, and at least one token")
    messages = []
    half = context // 2
    if len(model_ids) > half:
        messages.append(
            f"The text has {len(model_ids)} tokens; twice that must fit the model's context of "
            f"{context}, so its first {half} are used."
        )
    text, shown = tuple(model_ids[:half]), tuple(displays[:half])
    fill = context - 2 * len(text)
    unused = [i for i in range(64) if i not in set(text)]
    gen = torch.Generator().manual_seed(FILLER_SEED)
    order = torch.randperm(len(unused), generator=gen)[:fill].tolist()
    filler = tuple(unused[i] for i in order)
    ids = filler + text + text
    labels = tuple(
        f"{i}: {'·' if i < fill else shown[(i - fill) % len(text)]}" for i in range(len(ids))
    )
    return Probe(ids, labels, fill, len(text), tuple(messages))


@dataclass(frozen=True)
class Maps:
    """Every head's attention weights on one sequence, at one step."""

    step: int
    ids: tuple[int, ...]  # model ids, 0 … 63
    weights: Tensor  # (layers, heads, T, T)
    scores: Mapping[str, np.ndarray]  # detector -> (layers, heads), on this sequence


def maps_at(
    step: int, ids: Sequence[int], repeat: int | None = None, name: str = "reference"
) -> Maps:
    """The attention of every head at checkpoint ``step`` on ``ids`` (model ids, at most the
    model's context), with every detector's score on it: induction from ``repeat`` when the
    last ``repeat`` tokens repeat the ones before (a :class:`Probe`), else from the ids."""
    r = _run(name)
    cfg = r.config.model
    ids = tuple(int(i) for i in ids)
    if not 1 <= len(ids) <= cfg.context or not all(0 <= i < cfg.vocab for i in ids):
        raise ValueError(f"need 1–{cfg.context} token ids in 0–{cfg.vocab - 1}")
    with torch.inference_mode():
        weights = run(r.model(step), torch.tensor([ids])).attn_weights[0].clone()
    if repeat is None:
        scores = D.all_scores(weights, token_ids=ids)
    else:
        scores = D.all_scores(weights, repeat=repeat)
    for a in scores.values():
        a.setflags(write=False)
    return Maps(step, ids, weights, MappingProxyType(scores))


# --- ablation ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class HeadAblation:
    head: int  # the layer-0 head zeroed
    induction: float  # the last layer's induction score with this head zeroed
    drop: float  # 1 - induction / base: the share of the induction score lost


@dataclass(frozen=True)
class Ablation:
    step: int
    base: float  # the last layer's induction score with every head on
    heads: tuple[HeadAblation, ...]  # one per layer-0 head

    @property
    def largest(self) -> HeadAblation:
        return max(self.heads, key=lambda h: h.drop)


@functools.lru_cache(maxsize=64)
def _ablation(step: int) -> Ablation:
    m = mechanism.mechanism_at(step)
    heads = []
    for h in range(m.heads):
        ablated = m.zeroed[(h,)]
        drop = 1.0 - ablated / m.base if m.base > 0 else 0.0
        heads.append(HeadAblation(h, ablated, drop))
    return Ablation(step, m.base, tuple(heads))


def ablation_at(step: int, name: str = "reference") -> Ablation:
    """Zero each layer-0 head in turn (its slice of the context, before ``out_proj``) and
    measure the last layer's induction score on the held-out sequences: read off
    :func:`attnviz.models.induction.mechanism.mechanism_at`, which zeroes every set of them.
    Needs two layers (the reference run)."""
    if _run(name).config.model.layers < 2:
        raise ValueError("ablating a layer-0 head needs a layer after it")
    return _ablation(step)


# --- the control --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Comparison:
    """The two-layer reference against the one-layer control at the same step budget."""

    steps: int
    reference: trainer.Measures
    control: trainer.Measures


def comparison() -> Comparison:
    """Both runs' last logged measurements."""
    ref, ctl = recorded().reference, recorded().control
    return Comparison(ctl.log[-1].step, ref.log[-1].measures, ctl.log[-1].measures)


# --- grow your own ------------------------------------------------------------------------------
GROW_STEPS = 4000


def grow(
    seed: int,
    steps: int = GROW_STEPS,
    layers: int = 2,
    cancel: threading.Event | None = None,
) -> Iterator[trainer.Progress]:
    """Train a model of the reference's design from ``seed``, live: yields :class:`Progress`
    (step, losses, every head's scores, measured on :data:`GROW_HELD_OUT` held-out sequences)
    after every :data:`REPORT_SECONDS` seconds of training and every 25 steps. Cancel by
    closing the generator or setting ``cancel``; a bad seed or step count raises ValueError
    with a message (:class:`TrainConfig`)."""
    cfg = trainer.TrainConfig(model=ModelConfig(layers=layers), steps=steps, seed=seed)
    return trainer.train(
        cfg,
        measure_every=25,
        report_seconds=REPORT_SECONDS,
        cancel=cancel,
        held_out_size=GROW_HELD_OUT,
    )
