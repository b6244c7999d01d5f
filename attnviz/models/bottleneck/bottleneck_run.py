"""The recorded runs, shipped in the repository, read once and shared read-only.

``attnviz/models/bottleneck/data/`` holds:

- ``bottleneck.safetensors`` and ``attention.safetensors``: each model's final weights (float32);
- ``runs.json``: for each run its configuration, parameter count, training curve (the batch loss
  and the held-out accuracy at a few lengths every ``measure_every`` steps), its token accuracy
  at every length 5–40 on ``FINAL_SIZE`` held-out sentences each, and a fingerprint (the SHA-256
  of its weights after its first ``FINGERPRINT_STEPS`` steps, which a quick test retrains);
  for the attention run also how often its alignment's argmax falls on the right source word;
- ``SHA256SUMS`` (the three files' hashes) and ``training-log.txt`` (the script's printout, with
  this machine's timings, not hashed).

``scripts/train-bottleneck`` writes them all; ``scripts/train-bottleneck --check`` retrains into
a temporary folder and compares the hashes.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import torch

from attnviz.models import recording
from attnviz.models.bottleneck import bottleneck_training, encoder_decoder

DATA = Path(__file__).resolve().parent / "data"
RUNS_JSON = "runs.json"
HASHED = ("bottleneck.safetensors", "attention.safetensors", RUNS_JSON)
LOG = "training-log.txt"
SEED = 0
STEPS = 4000
MEASURE_EVERY = 50
CURVE_SIZE = 64
FINAL_SIZE = 256
FINGERPRINT_STEPS = 20
CONFIGS = {
    kind: bottleneck_training.TrainConfig(
        model=encoder_decoder.Seq2SeqConfig(attention=kind == "attention"), steps=STEPS, seed=SEED
    )
    for kind in encoder_decoder.KINDS
}


def fingerprint(params: Mapping[str, torch.Tensor]) -> str:
    """SHA-256 of the parameters' float32 bytes, in name order."""
    digest = hashlib.sha256()
    for name in sorted(params):
        digest.update(name.encode())
        digest.update(params[name].detach().to(torch.float32).contiguous().numpy().tobytes())
    return digest.hexdigest()


def early_fingerprint(cfg: bottleneck_training.TrainConfig, steps: int = FINGERPRINT_STEPS) -> str:
    """The fingerprint of ``cfg``'s run after its first ``steps`` steps (a few seconds)."""
    short = dataclasses.replace(cfg, steps=steps)
    last = None
    for p in bottleneck_training.train(short, measure_every=steps + 1, curve_size=1):
        last = p
    assert last is not None and last.params is not None
    return fingerprint(last.params)


def _config_dict(cfg: bottleneck_training.TrainConfig) -> dict:
    return {**dataclasses.asdict(cfg), "model": dataclasses.asdict(cfg.model)}


def _config_from(data: dict) -> bottleneck_training.TrainConfig:
    return bottleneck_training.TrainConfig(
        **{**data, "model": encoder_decoder.Seq2SeqConfig(**data["model"])}
    )


def run_entry(
    cfg: bottleneck_training.TrainConfig, reports: list[bottleneck_training.Progress]
) -> dict:
    """What ``runs.json`` keeps of one run (the final report carries the weights)."""
    final = reports[-1]
    assert final.params is not None
    model = encoder_decoder.model_from(cfg.model, final.params)
    entry = {
        "config": _config_dict(cfg),
        "parameters": encoder_decoder.parameter_count(model),
        "curve": [
            {
                "step": p.step,
                "train_loss": None if p.step == 0 else round(p.train_loss, 6),
                "accuracy": {str(n): round(a, 6) for n, a in p.accuracy.items()},
            }
            for p in reports
        ],
        "accuracy": {
            str(n): round(a, 6)
            for n, a in bottleneck_training.accuracy_by_length(
                model, bottleneck_training.MEASURED_LENGTHS, FINAL_SIZE
            ).items()
        },
        "fingerprint": {"steps": FINGERPRINT_STEPS, "sha256": early_fingerprint(cfg)},
    }
    if cfg.model.attention:
        entry["alignment_hits"] = round(
            bottleneck_training.alignment_hits(model, bottleneck_training.MEASURED_LENGTHS, 32), 6
        )
    return entry


def write(
    folder: Path,
    runs: Mapping[str, tuple[bottleneck_training.TrainConfig, list[bottleneck_training.Progress]]],
) -> None:
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    entries: dict[str, dict] = {}
    data = {
        "measure_every": MEASURE_EVERY,
        "curve_size": CURVE_SIZE,
        "final_size": FINAL_SIZE,
        "runs": entries,
    }
    for kind, (cfg, reports) in runs.items():
        params = reports[-1].params
        assert params is not None
        tensors = {k: v.to(torch.float32).contiguous() for k, v in params.items()}
        save_file(tensors, str(folder / f"{kind}.safetensors"), metadata={"format": "pt"})
        entries[kind] = run_entry(cfg, reports)
    text = json.dumps(data, indent=1, sort_keys=True, allow_nan=False) + "\n"
    (folder / RUNS_JSON).write_text(text, encoding="utf-8")


SHIPPED = recording.Shipped(DATA, HASHED)  # its files and their SHA256SUMS


# --- reading ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class CurvePoint:
    step: int
    train_loss: float  # nan at step 0
    accuracy: Mapping[int, float]


@dataclass(frozen=True)
class RecordedRun:
    kind: str
    config: bottleneck_training.TrainConfig
    parameters: int
    curve: tuple[CurvePoint, ...]
    accuracy: Mapping[int, float]  # length -> held-out token accuracy (FINAL_SIZE sentences)
    fingerprint_steps: int
    fingerprint: str
    alignment_hits: float | None
    model: encoder_decoder.EncoderDecoder  # eval, frozen: share, never train


def read_run(folder: Path, kind: str, entry: dict) -> RecordedRun:
    from safetensors.torch import load_file

    cfg = _config_from(entry["config"])
    model = encoder_decoder.model_from(cfg.model, load_file(str(folder / f"{kind}.safetensors")))
    curve = tuple(
        CurvePoint(
            int(c["step"]),
            float("nan") if c["train_loss"] is None else float(c["train_loss"]),
            MappingProxyType({int(k): float(v) for k, v in c["accuracy"].items()}),
        )
        for c in entry["curve"]
    )
    return RecordedRun(
        kind=kind,
        config=cfg,
        parameters=int(entry["parameters"]),
        curve=curve,
        accuracy=MappingProxyType(
            {
                int(k): float(v)
                for k, v in sorted(entry["accuracy"].items(), key=lambda kv: int(kv[0]))
            }
        ),
        fingerprint_steps=int(entry["fingerprint"]["steps"]),
        fingerprint=str(entry["fingerprint"]["sha256"]),
        alignment_hits=entry.get("alignment_hits"),
        model=model,
    )


@dataclass(frozen=True)
class Recorded:
    bottleneck: RecordedRun
    attention: RecordedRun
    final_size: int  # held-out sentences of each length behind ``accuracy``
    measure_every: int  # steps between two points of a curve
    curve_size: int  # held-out sentences of each length behind a curve's point

    def run(self, kind: str) -> RecordedRun:
        if kind not in encoder_decoder.KINDS:
            raise KeyError(f"no run {kind!r}; recorded: {encoder_decoder.KINDS}")
        return self.bottleneck if kind == "bottleneck" else self.attention


_LOCK = threading.Lock()


def read(path: Path) -> Recorded:
    """The runs in ``path``, read afresh (the app reads them once, through :func:`recorded`)."""
    data = json.loads((path / RUNS_JSON).read_text(encoding="utf-8"))
    runs = {kind: read_run(path, kind, data["runs"][kind]) for kind in encoder_decoder.KINDS}
    return Recorded(
        runs["bottleneck"],
        runs["attention"],
        int(data["final_size"]),
        int(data["measure_every"]),
        int(data["curve_size"]),
    )


@functools.lru_cache(maxsize=1)
def _load(folder: str) -> Recorded:
    return read(Path(folder))


def recorded(folder: Path = DATA) -> Recorded:
    """The shipped runs, read once per process and shared by every session."""
    with _LOCK:
        return _load(str(folder))
