"""The recorded reference run, shipped in the repository, read once and shared read-only.

``attnviz/models/induction/data/`` holds two runs, each as a pair of files:

- ``NAME.safetensors``: checkpoints, every parameter stored as float16 under
  ``"<step, 5 digits>.<parameter name>"`` (for example ``"01500.blocks.1.W_query.weight"``);
- ``NAME.json``: the run's configuration, the held-out measurements logged during training
  (from the float32 weights, every ``measure_every`` steps), and for each checkpoint the same
  measurements recomputed from the stored float16 weights (what this loader's models give).

``reference`` is the two-layer model at :data:`REFERENCE_SEED`; ``control`` the one-layer model at
the same seed with a few checkpoints. ``SHA256SUMS`` lists the four files' hashes, and
``training-log.txt`` is the script's printout (with the machine's timings, so it is not hashed).
``scripts/train-induction`` writes them all; ``scripts/train-induction --check`` retrains and
compares the hashes.

Float16: the stored weights round each parameter to 11 significant bits; every score moves by
less than 0.01 (``checkpoint_measures`` against the log, tested).
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import numpy as np
import torch

from attnviz.models import recording
from attnviz.models.induction.model import InductionModel, ModelConfig, model_from
from attnviz.models.induction.train import (
    SCORES,
    Measures,
    Progress,
    TrainConfig,
    held_out,
    measure,
)

DATA = Path(__file__).resolve().parent / "data"
REFERENCE_SEED = 0
STORED_DTYPE = torch.float16
HASHED = ("reference.safetensors", "reference.json", "control.safetensors", "control.json")
LOG = "training-log.txt"
REFERENCE = TrainConfig(seed=REFERENCE_SEED)
CONTROL = TrainConfig(model=ModelConfig(layers=1), seed=REFERENCE_SEED)
MEASURE_EVERY = 25
CHECKPOINT_EVERY = {"reference": 100, "control": 1000}


# --- writing ----------------------------------------------------------------------------------
def _config_dict(cfg: TrainConfig) -> dict:
    m = cfg.model
    return {
        "model": {
            "layers": m.layers,
            "vocab": m.vocab,
            "context": m.context,
            "d_model": m.d_model,
            "num_heads": m.num_heads,
        },
        "min_repeat": cfg.min_repeat,
        "max_repeat": cfg.max_repeat,
        "lr": cfg.lr,
        "batch_size": cfg.batch_size,
        "steps": cfg.steps,
        "seed": cfg.seed,
    }


def _config_from(data: dict) -> TrainConfig:
    return TrainConfig(**{**data, "model": ModelConfig(**data["model"])})


def _entry(p: Progress) -> dict:
    loss = None if np.isnan(p.train_loss) else round(p.train_loss, 6)
    return {"step": p.step, "train_loss": loss, **p.measures.as_dict()}


def stored(params: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The parameters as they are kept on disk, and back as float32 (rounded to float16)."""
    return {k: v.to(STORED_DTYPE).to(torch.float32) for k, v in params.items()}


def write_run(folder: Path, name: str, cfg: TrainConfig, reports: list[Progress]) -> None:
    """Write ``NAME.safetensors`` and ``NAME.json`` from a run's reports."""
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    tensors: dict[str, torch.Tensor] = {}
    checkpoints: dict[str, dict] = {}
    held = None
    for p in reports:
        if p.params is None:
            continue
        for key, value in p.params.items():
            tensors[f"{p.step:05d}.{key}"] = value.to(STORED_DTYPE).contiguous()
        model = model_from(cfg.model, stored(p.params))
        if held is None:
            held = held_out(cfg)
        checkpoints[str(p.step)] = measure(model, held).as_dict()
    save_file(tensors, str(folder / f"{name}.safetensors"), metadata={"format": "pt"})
    data = {
        "name": name,
        "config": _config_dict(cfg),
        "stored_dtype": str(STORED_DTYPE).removeprefix("torch."),
        "measure_every": MEASURE_EVERY,
        "checkpoint_every": CHECKPOINT_EVERY[name],
        "log": [_entry(p) for p in reports],
        "checkpoints": checkpoints,
    }
    text = json.dumps(data, indent=1, sort_keys=True, allow_nan=False) + "\n"
    (folder / f"{name}.json").write_text(text, encoding="utf-8")


SHIPPED = recording.Shipped(DATA, HASHED)  # its files and their SHA256SUMS


# --- reading ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class LogEntry:
    """One held-out measurement during training."""

    step: int
    train_loss: float  # the last training batch's mean loss (nan at step 0)
    measures: Measures


@dataclass(frozen=True)
class RecordedRun:
    """One recorded run: its configuration, its log and its checkpoints as frozen models."""

    name: str
    config: TrainConfig
    log: tuple[LogEntry, ...]
    models: Mapping[int, InductionModel]  # step -> model (eval, frozen): share, never train
    checkpoint_measures: Mapping[int, Measures]  # from the stored float16 weights

    @property
    def steps(self) -> tuple[int, ...]:
        """The steps with a checkpoint, in order."""
        return tuple(sorted(self.models))

    @property
    def log_steps(self) -> tuple[int, ...]:
        return tuple(e.step for e in self.log)

    def entry(self, step: int) -> LogEntry:
        for e in self.log:
            if e.step == step:
                return e
        raise KeyError(f"step {step} is not in the {self.name} run's log")

    def model(self, step: int) -> InductionModel:
        if step not in self.models:
            raise KeyError(f"no checkpoint at step {step}; recorded: {self.steps}")
        return self.models[step]


def _frozen_array(values) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)
    array.setflags(write=False)
    return array


def _measures(d: dict) -> Measures:
    return Measures(
        loss_first=float(d["loss_first"]),
        loss_repeat=float(d["loss_repeat"]),
        scores=MappingProxyType({k: _frozen_array(d[k]) for k in SCORES}),
    )


def read_run(folder: Path, name: str) -> RecordedRun:
    from safetensors.torch import load_file

    data = json.loads((folder / f"{name}.json").read_text(encoding="utf-8"))
    cfg = _config_from(data["config"])
    tensors = load_file(str(folder / f"{name}.safetensors"))
    by_step: dict[int, dict[str, torch.Tensor]] = {}
    for key, value in tensors.items():
        step, param = key.split(".", 1)
        by_step.setdefault(int(step), {})[param] = value.to(torch.float32)
    models = {step: model_from(cfg.model, params) for step, params in sorted(by_step.items())}
    log = tuple(
        LogEntry(
            e["step"],
            float("nan") if e["train_loss"] is None else e["train_loss"],
            _measures(e),
        )
        for e in data["log"]
    )
    checks = {int(k): _measures(v) for k, v in data["checkpoints"].items()}
    return RecordedRun(name, cfg, log, MappingProxyType(models), MappingProxyType(checks))


@dataclass(frozen=True)
class Recorded:
    """The shipped runs: the two-layer reference and its one-layer control."""

    reference: RecordedRun
    control: RecordedRun


_LOCK = threading.Lock()


@functools.lru_cache(maxsize=1)
def _load(folder: str) -> Recorded:
    path = Path(folder)
    return Recorded(read_run(path, "reference"), read_run(path, "control"))


def recorded(folder: Path = DATA) -> Recorded:
    """The shipped runs, read once per process and shared by every session."""
    with _LOCK:
        return _load(str(folder))
