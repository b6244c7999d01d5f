"""GPT-2's published weights, loaded into the chapter's own ``MultiHeadAttention``.

The model is rebuilt from the book's parts: token and position embeddings, then per layer a
chapter-4 ``LayerNorm``, the chapter-3 ``MultiHeadAttention`` (``qkv_bias=True``), a residual
connection, a second ``LayerNorm``, the GELU feed-forward network and another residual; a final
``LayerNorm`` and the output head. The weights come from a folder in the Hugging Face layout
(``config.json`` + ``model.safetensors``) read with ``safetensors`` alone: no ``transformers``
at run time.

GPT-2 stores each projection as a ``Conv1D``, whose weight is (input, output); ``nn.Linear``
keeps (output, input). Copying one into the other is a transposition, exactly as in the
chapter's Exercise 3.1; GPT-2 also packs W_query, W_key and W_value side by side in one
``c_attn`` matrix, so it is split in three first (:func:`split_c_attn`).

Loading happens once per process (:func:`load`): the model is shared read-only by every
session, in eval mode, and every forward runs under ``torch.inference_mode``.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch
import torch.nn as nn

from attnviz.core import modules as M
from attnviz.core.seeding import seeded
from attnviz.models import detectors as D
from attnviz.server import gate

ENV = "ATTNVIZ_GPT2_DIR"
CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
PREFIX = "transformer."  # what transformers writes for GPT2LMHeadModel; bare GPT2Model: none
# Keys the published files may carry that hold no weights: the causal mask buffers.
_BUFFER_KEY = re.compile(r"^h\.\d+\.attn\.(bias|masked_bias)$")
# GPT-2's activation names: "gelu_new" is the tanh approximation the book's GELU uses.
_GELU = {"gelu_new": "tanh", "gelu_pytorch_tanh": "tanh", "gelu_fast": "tanh", "gelu": "none"}


class WeightsError(ValueError):
    """The folder does not hold GPT-2 weights this loader can use; the message says why."""


# --- where the weights are ------------------------------------------------------------------
def weights_folder(environ=None) -> str | None:
    """The folder ``ATTNVIZ_GPT2_DIR`` names, or None when it is not set."""
    value = (environ if environ is not None else os.environ).get(ENV, "").strip()
    return value or None


def missing_files(folder: str) -> list[str]:
    """The files of the Hugging Face layout that ``folder`` lacks (empty when complete)."""
    return [name for name in (CONFIG_FILE, WEIGHTS_FILE) if not (Path(folder) / name).is_file()]


# --- the configuration ----------------------------------------------------------------------
@dataclass(frozen=True)
class GPT2Config:
    """The sizes in ``config.json``, with the book's names (chapter 4's GPT_CONFIG_124M)."""

    vocab_size: int
    context_length: int  # n_positions
    emb_dim: int  # n_embd
    n_layers: int  # n_layer
    n_heads: int  # n_head
    hidden_dim: int  # n_inner, 4 x emb_dim when null
    eps: float = 1e-5  # layer_norm_epsilon
    gelu: str = "tanh"  # GELU's approximation, torch's name

    @property
    def head_dim(self) -> int:
        return self.emb_dim // self.n_heads

    @classmethod
    def from_json(cls, data: dict) -> GPT2Config:
        """Read a transformers GPT-2 ``config.json``; refuse what the rebuilt model differs on."""
        try:
            emb, heads = int(data["n_embd"]), int(data["n_head"])
            config = cls(
                vocab_size=int(data["vocab_size"]),
                context_length=int(data["n_positions"]),
                emb_dim=emb,
                n_layers=int(data["n_layer"]),
                n_heads=heads,
                hidden_dim=int(data.get("n_inner") or 4 * emb),
                eps=float(data.get("layer_norm_epsilon", 1e-5)),
                gelu=_GELU.get(data.get("activation_function", "gelu_new"), ""),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise WeightsError(f"{CONFIG_FILE} is not a GPT-2 configuration ({exc!r})") from None
        problems = []
        if data.get("model_type", "gpt2") != "gpt2":
            problems.append(f"model_type is {data.get('model_type')!r}, not 'gpt2'")
        if not config.gelu:
            problems.append(f"activation_function {data.get('activation_function')!r}")
        if min(emb, heads, config.n_layers, config.vocab_size, config.context_length) < 1:
            problems.append("a size below 1")
        elif emb % heads:
            problems.append(f"n_embd={emb} is not divisible by n_head={heads}")
        if not data.get("scale_attn_weights", True) or data.get("scale_attn_by_inverse_layer_idx"):
            problems.append("attention scores not scaled by 1/sqrt(head_dim) alone")
        if problems:
            raise WeightsError(
                f"{CONFIG_FILE} describes a model this page cannot rebuild: " + "; ".join(problems)
            )
        return config


def read_config(folder: str) -> GPT2Config:
    try:
        text = (Path(folder) / CONFIG_FILE).read_text(encoding="utf-8")
        data = json.loads(text)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise WeightsError(f"{CONFIG_FILE} could not be read ({type(exc).__name__})") from None
    if not isinstance(data, dict):
        raise WeightsError(f"{CONFIG_FILE} is not a JSON object")
    return GPT2Config.from_json(data)


# --- the chapter's parts (chapter 4) ----------------------------------------------------------
class LayerNorm(nn.Module):
    """Each token's vector to mean 0 and variance 1, then a learned scale and shift."""

    def __init__(self, emb_dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.scale = nn.Parameter(torch.ones(emb_dim))
        self.shift = nn.Parameter(torch.zeros(emb_dim))

    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, keepdim=True, unbiased=False)
        norm_x = (x - mean) / torch.sqrt(var + self.eps)
        return self.scale * norm_x + self.shift


class FeedForward(nn.Module):
    """Widen to hidden_dim, GELU, back to emb_dim: the same for every token on its own."""

    def __init__(self, cfg: GPT2Config):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(cfg.emb_dim, cfg.hidden_dim),
            nn.GELU(approximate=cfg.gelu),
            nn.Linear(cfg.hidden_dim, cfg.emb_dim),
        )

    def forward(self, x):
        return self.layers(x)


def attention_with_weights(att: M.MultiHeadAttention, x: torch.Tensor):
    """One forward of the chapter's ``MultiHeadAttention`` and the attention weights it used.

    Returns ``(output (b, T, d_out), attn_weights (b, num_heads, T, T))``: the module's own
    forward runs once, and the one softmax it computes is kept as it was (in eval mode dropout
    changes nothing after it), read off the forward's own ``tap`` recording point: the same
    code path every other page traces.
    """
    with M.recording() as recorded:  # the module's own recording points (attnviz/core/modules.py)
        output = att(x)
    if len(recorded["attn_weights"]) != 1:
        raise RuntimeError(f"expected one attention forward, saw {len(recorded['attn_weights'])}")
    return output, recorded["attn_weights"][0]


class TransformerBlock(nn.Module):
    """Pre-LayerNorm block: x + attention(LayerNorm(x)), then x + feed_forward(LayerNorm(x))."""

    def __init__(self, cfg: GPT2Config):
        super().__init__()
        self.att = M.MultiHeadAttention(
            d_in=cfg.emb_dim,
            d_out=cfg.emb_dim,
            context_length=cfg.context_length,
            dropout=0.0,
            num_heads=cfg.n_heads,
            qkv_bias=True,
        )
        self.ff = FeedForward(cfg)
        self.norm1 = LayerNorm(cfg.emb_dim, cfg.eps)
        self.norm2 = LayerNorm(cfg.emb_dim, cfg.eps)

    def forward(self, x, weights_out: list | None = None):
        shortcut = x
        x = self.norm1(x)  # (b, T, emb_dim): attention reads normalized vectors
        if weights_out is None:
            x = self.att(x)  # (b, T, emb_dim)
        else:
            x, attn_weights = attention_with_weights(self.att, x)
            weights_out.append(attn_weights)  # (b, H, T, T)
        x = x + shortcut  # the residual: attention adds to the token's vector

        shortcut = x
        x = self.ff(self.norm2(x))  # (b, T, emb_dim)
        return x + shortcut


class GPTModel(nn.Module):
    """Chapter 4's GPT model without dropout (inference only)."""

    def __init__(self, cfg: GPT2Config):
        super().__init__()
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.emb_dim)
        self.pos_emb = nn.Embedding(cfg.context_length, cfg.emb_dim)
        self.trf_blocks = nn.ModuleList([TransformerBlock(cfg) for _ in range(cfg.n_layers)])
        self.final_norm = LayerNorm(cfg.emb_dim, cfg.eps)
        # The output head shares the token embedding's matrix (GPT-2 ties them) unless the file
        # holds its own lm_head; no second vocab x emb_dim matrix is allocated for nothing.
        self.out_head_weight = self.tok_emb.weight

    def hidden_states(self, in_idx, weights_out: list | None = None):
        """(b, T) token ids -> (b, T, emb_dim) after the last block (before final_norm)."""
        _, num_tokens = in_idx.shape
        positions = torch.arange(num_tokens, device=in_idx.device)
        x = self.tok_emb(in_idx) + self.pos_emb(positions)  # (b, T, emb_dim)
        for block in self.trf_blocks:
            x = block(x, weights_out)
        return x

    def forward(self, in_idx):
        x = self.final_norm(self.hidden_states(in_idx))
        return x @ self.out_head_weight.T  # (b, T, vocab_size)


# --- loading ----------------------------------------------------------------------------------
def split_c_attn(weight: torch.Tensor, bias: torch.Tensor, att: M.MultiHeadAttention) -> None:
    """Copy GPT-2's packed c_attn (emb_dim, 3 x emb_dim) into W_query, W_key and W_value."""
    for linear, w, b in zip(
        (att.W_query, att.W_key, att.W_value),
        weight.chunk(3, dim=-1),
        bias.chunk(3, dim=-1),
        strict=True,
    ):
        # Conv1D keeps (in, out), nn.Linear (out, in): Exercise 3.1's transposition.
        linear.weight.copy_(w.T)
        linear.bias.copy_(b)


def _linear_from_conv1d(linear: nn.Linear, weight: torch.Tensor, bias: torch.Tensor) -> None:
    linear.weight.copy_(weight.T)
    linear.bias.copy_(bias)


def expected_shapes(cfg: GPT2Config) -> dict[str, tuple[int, ...]]:
    """Every weight a GPT-2 file must hold, by its bare name, with its shape."""
    e, h = cfg.emb_dim, cfg.hidden_dim
    shapes = {
        "wte.weight": (cfg.vocab_size, e),
        "wpe.weight": (cfg.context_length, e),
        "ln_f.weight": (e,),
        "ln_f.bias": (e,),
    }
    for i in range(cfg.n_layers):
        for name, shape in {
            "ln_1.weight": (e,),
            "ln_1.bias": (e,),
            "attn.c_attn.weight": (e, 3 * e),
            "attn.c_attn.bias": (3 * e,),
            "attn.c_proj.weight": (e, e),
            "attn.c_proj.bias": (e,),
            "ln_2.weight": (e,),
            "ln_2.bias": (e,),
            "mlp.c_fc.weight": (e, h),
            "mlp.c_fc.bias": (h,),
            "mlp.c_proj.weight": (h, e),
            "mlp.c_proj.bias": (e,),
        }.items():
            shapes[f"h.{i}.{name}"] = shape
    return shapes


@dataclass(frozen=True)
class Loaded:
    """A loaded model and what its file looked like. Shared by every session: never mutated."""

    folder: str
    config: GPT2Config
    model: GPTModel
    layout: str  # "bare" (GPT2Model, the published files) or "prefixed" (GPT2LMHeadModel)
    own_lm_head: bool  # the file held an lm_head.weight of its own


def _key_map(keys: list[str]) -> tuple[dict[str, str], str, str | None]:
    """bare name -> name in the file; the layout; the lm_head key if any."""
    prefixed = any(k.startswith(PREFIX) for k in keys)
    names, lm_head, unknown = {}, None, []
    for key in keys:
        if key == "lm_head.weight":
            lm_head = key
            continue
        bare = key[len(PREFIX) :] if prefixed and key.startswith(PREFIX) else key
        if prefixed and not key.startswith(PREFIX):
            unknown.append(key)
        elif not _BUFFER_KEY.match(bare):
            names[bare] = key
    if unknown:
        raise WeightsError(f"{WEIGHTS_FILE} mixes key layouts: {', '.join(unknown[:3])}")
    return names, ("prefixed" if prefixed else "bare"), lm_head


def _build(folder: str) -> Loaded:
    from safetensors import SafetensorError, safe_open

    cfg = read_config(folder)
    path = str(Path(folder) / WEIGHTS_FILE)
    try:
        handle = safe_open(path, framework="pt")
    except (OSError, SafetensorError) as exc:
        raise WeightsError(f"{WEIGHTS_FILE} could not be opened ({exc})") from None
    with handle as f:
        names, layout, lm_head = _key_map(list(f.keys()))
        expected = expected_shapes(cfg)
        missing = [k for k in expected if k not in names]
        extra = [k for k in names if k not in expected]
        if missing or extra:
            raise WeightsError(
                f"{WEIGHTS_FILE} does not match {CONFIG_FILE}: "
                + (f"missing {', '.join(missing[:3])}" if missing else "")
                + ("; " if missing and extra else "")
                + (f"unexpected {', '.join(extra[:3])}" if extra else "")
            )

        def tensor(bare: str) -> torch.Tensor:
            value = f.get_tensor(names[bare])
            if tuple(value.shape) != expected[bare]:
                raise WeightsError(
                    f"{names[bare]} has shape {tuple(value.shape)}, the configuration says "
                    f"{expected[bare]}"
                )
            return value.to(torch.float32)

        with seeded(None):  # construction draws random weights, overwritten just below
            model = GPTModel(cfg)
        with torch.no_grad():
            model.tok_emb.weight.copy_(tensor("wte.weight"))
            model.pos_emb.weight.copy_(tensor("wpe.weight"))
            for i in range(cfg.n_layers):
                block = cast(TransformerBlock, model.trf_blocks[i])
                p = f"h.{i}."
                block.norm1.scale.copy_(tensor(p + "ln_1.weight"))
                block.norm1.shift.copy_(tensor(p + "ln_1.bias"))
                split_c_attn(
                    tensor(p + "attn.c_attn.weight"), tensor(p + "attn.c_attn.bias"), block.att
                )
                _linear_from_conv1d(
                    block.att.out_proj,
                    tensor(p + "attn.c_proj.weight"),
                    tensor(p + "attn.c_proj.bias"),
                )
                block.norm2.scale.copy_(tensor(p + "ln_2.weight"))
                block.norm2.shift.copy_(tensor(p + "ln_2.bias"))
                _linear_from_conv1d(
                    cast(nn.Linear, block.ff.layers[0]),
                    tensor(p + "mlp.c_fc.weight"),
                    tensor(p + "mlp.c_fc.bias"),
                )
                _linear_from_conv1d(
                    cast(nn.Linear, block.ff.layers[2]),
                    tensor(p + "mlp.c_proj.weight"),
                    tensor(p + "mlp.c_proj.bias"),
                )
            model.final_norm.scale.copy_(tensor("ln_f.weight"))
            model.final_norm.shift.copy_(tensor("ln_f.bias"))
            own_head = False
            if lm_head is not None:
                head = f.get_tensor(lm_head).to(torch.float32)
                if tuple(head.shape) != expected["wte.weight"]:
                    raise WeightsError(f"lm_head.weight has shape {tuple(head.shape)}")
                own_head = not torch.equal(head, model.tok_emb.weight)
                if own_head:
                    model.out_head_weight = nn.Parameter(head, requires_grad=False)
    model.eval()
    model.requires_grad_(False)
    return Loaded(folder, cfg, model, layout, own_head)


_LOAD_LOCK = threading.Lock()


_loaded: list[str] = []  # the folder _load_cached holds (read without the lock: a hint only)


@functools.lru_cache(maxsize=1)
def _load_cached(folder: str) -> Loaded:
    return _build(folder)


def load(folder: str) -> Loaded:
    """The model in ``folder``, built once per process and shared (one folder at a time).

    The lock makes concurrent first calls wait for one load instead of each building a copy."""
    real = os.path.realpath(folder)
    if _loaded != [real]:
        gate.give_up()  # building GPT-2 takes seconds (attnviz/server/gate.py)
    with _LOAD_LOCK:
        loaded = _load_cached(real)
        _loaded[:] = [real]
        return loaded


def clear_loaded() -> None:
    """Forget the loaded model (tests)."""
    with _LOAD_LOCK:
        _load_cached.cache_clear()
        _loaded.clear()


# --- what the page asks for -----------------------------------------------------------------
def _ids(loaded: Loaded, token_ids) -> torch.Tensor:
    ids = torch.as_tensor(list(token_ids), dtype=torch.long)
    if ids.dim() != 1 or ids.numel() == 0:
        raise ValueError("token_ids must be a non-empty sequence of token ids")
    if ids.numel() > loaded.config.context_length:
        raise ValueError(
            f"{ids.numel()} tokens exceed the model's context of {loaded.config.context_length}"
        )
    if int(ids.min()) < 0 or int(ids.max()) >= loaded.config.vocab_size:
        raise ValueError(f"token ids must lie in 0–{loaded.config.vocab_size - 1}")
    return ids.unsqueeze(0)  # (1, T)


def attention_weights(folder: str, token_ids) -> torch.Tensor:
    """The causal softmax weights of every layer and head for one sequence, in eval mode:
    ``(layers, heads, T, T)``, float32. Only the weights are kept from the forward."""
    loaded = load(folder)
    ids = _ids(loaded, token_ids)
    weights: list[torch.Tensor] = []
    with torch.inference_mode():
        loaded.model.hidden_states(ids, weights)
        return torch.stack([w[0] for w in weights])  # (L, H, T, T)


def model_bytes(loaded: Loaded) -> int:
    """Bytes the loaded model holds: parameters and buffers (the masks), each storage once."""
    seen, total = set(), 0
    tensors = [*loaded.model.parameters(), *loaded.model.buffers(), loaded.model.out_head_weight]
    for t in tensors:
        key = t.untyped_storage().data_ptr()
        if key not in seen:
            seen.add(key)
            total += t.untyped_storage().nbytes()
    return total


# --- what the page may hold in memory (attnviz.server.budget.server_bound adds it) -----------------
MB = 2**20
# One attention entry holds layers x heads x T^2 float32 weights: 36 MB for GPT-2 small at 256
# tokens, so this keeps the three most recent long texts (and many short ones).
ATTENTION_CACHE_BYTES = 128 * MB
FIGURE_CACHE_BYTES = 16 * MB
# Forwards of different texts at once (one per core): the rest queue.
FORWARD_SLOTS = 2
# A forward's peak above the loaded model, over the attention weights it keeps: measured 90 MB
# against 36 MB for GPT-2 small at 256 tokens.
FORWARD_PEAK_FACTOR = 2.5


def model_bytes_of(cfg: GPT2Config) -> int:
    """What :func:`model_bytes` will measure once ``cfg``'s model is loaded, read off the config:
    every weight (the output head shares the token embedding; a file with its own lm_head adds
    one more vocabulary x width matrix) and one causal mask per layer."""
    weights = sum(math.prod(shape) for shape in expected_shapes(cfg).values())
    masks = cfg.n_layers * cfg.context_length**2
    return 4 * (weights + masks)


def memory_bound(folder: str, tokens: int) -> dict[str, int]:
    """Bytes the trained-heads page may add to the server for the model in ``folder``: the model
    (once per process), its two caches at their caps, and the forwards that may run at once at
    ``tokens`` tokens."""
    cfg = read_config(folder)
    kept = 4 * cfg.n_layers * cfg.n_heads * tokens**2
    return {
        "GPT-2: model": model_bytes_of(cfg),
        "GPT-2: attention and figure caches": ATTENTION_CACHE_BYTES + FIGURE_CACHE_BYTES,
        "GPT-2: forwards at once": int(FORWARD_SLOTS * FORWARD_PEAK_FACTOR * kept),
    }


# --- reading the heads ----------------------------------------------------------------------
# Each criterion is measured over the queries 1 .. T-1 (query 0 sees only itself).
HEAD_TYPES: dict[str, str] = {
    "previous-token": "mean weight on the previous token (i − 1) above 0.5",
    "first-token": "mean weight on token 0 above 0.5",
    "current-token": "mean weight on itself (i) above 0.5",
    "broad": "mean row entropy above 0.9 of an even share's (log of the keys it sees)",
}
THRESHOLD = 0.5
BROAD = 0.9


def head_measures(weights: torch.Tensor) -> dict[str, np.ndarray]:
    """Per head (layers, heads) arrays: mean weight on i−1, on token 0, on i (the detectors of
    :mod:`attnviz.models.detectors`), and the mean normalized entropy, over queries 1 .. T−1. NaN when
    T < 2."""
    w = weights.detach().to(torch.float64)
    T = w.shape[-1]
    shape = w.shape[:-2]
    if T < 2:
        nan = np.full(tuple(shape), np.nan)
        return {"previous": nan, "first": nan.copy(), "current": nan.copy(), "entropy": nan.copy()}
    rows = torch.arange(1, T)
    plogp = torch.where(w > 0, w * torch.log(w.clamp_min(1e-300)), torch.zeros_like(w))
    entropy = -plogp[..., 1:, :].sum(-1)  # (..., T-1)
    visible = torch.log(rows.to(torch.float64) + 1)  # query i sees i + 1 keys
    spread = (entropy / visible).mean(-1)
    return {
        "previous": D.previous_token_score(w),
        "first": D.first_token_score(w),
        "current": D.current_token_score(w),
        "entropy": spread.numpy(),
    }


def head_types(measures: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """For each type in :data:`HEAD_TYPES`, a boolean (layers, heads) array: the heads that
    meet its criterion (a head may meet several, or none)."""
    return {
        "previous-token": measures["previous"] > THRESHOLD,
        "first-token": measures["first"] > THRESHOLD,
        "current-token": measures["current"] > THRESHOLD,
        "broad": measures["entropy"] > BROAD,
    }


# --- the detectors on a repeated random sequence ----------------------------------------------
PROBE_LENGTH = 50  # random tokens, then the same tokens again: 100 positions (+ the prefix)
PROBE_SEED = 0


@dataclass(frozen=True)
class ProbeScores:
    """Every head's detector scores on random tokens repeated once (attnviz.models.detectors)."""

    ids: tuple[int, ...]  # prefix, then ``length`` random tokens, then the same tokens again
    length: int  # L: the last L tokens repeat the L before them
    scores: dict[str, np.ndarray]  # detector -> (layers, heads)


def probe_scores(
    folder: str, length: int = PROBE_LENGTH, seed: int = PROBE_SEED, prefix=(50256,)
) -> ProbeScores:
    """Run the model in ``folder`` on ``prefix`` + A + A, with A ``length`` random token ids drawn
    from a private generator, and score every layer and head with the detectors (induction from
    the known repeat: query i of the second A on key i − length + 1). ``prefix`` defaults to
    GPT-2's ``<|endoftext|>``; it is left out for a model whose vocabulary lacks that id."""
    loaded = load(folder)
    vocab = loaded.config.vocab_size
    prefix = tuple(int(p) for p in prefix if 0 <= int(p) < vocab)
    repeated = D.random_repeated_tokens(length, vocab, seed)
    ids = prefix + tuple(int(t) for t in repeated)
    weights = attention_weights(folder, ids)  # (L, H, T, T)
    return ProbeScores(ids, length, D.all_scores(weights, repeat=length))


# --- the overview ---------------------------------------------------------------------------
THUMB = 16  # thumbnail side: 12 x 12 heads x 16^2 cells go to the browser, not 144 x T^2


def pool(weights: torch.Tensor, side: int = THUMB) -> torch.Tensor:
    """(…, T, T) -> (…, s, s) with s = min(T, side): the tokens cut into s consecutive blocks;
    each cell is the weight a block of queries gives a block of keys, summed over the keys and
    averaged over the queries, so every pooled row still sums to 1."""
    T = weights.shape[-1]
    s = min(T, side)
    block = torch.div(torch.arange(T) * s, T, rounding_mode="floor")  # block of each position
    onehot = torch.nn.functional.one_hot(block, s).to(weights.dtype)  # (T, s)
    queries_per_block = onehot.sum(0)  # (s,)
    summed = onehot.T @ weights @ onehot  # (…, s, s): sums over query and key blocks
    return summed / queries_per_block[:, None]


def block_shapes(cfg: GPT2Config, tokens: int) -> list[dict[str, str]]:
    """Where attention sits in one block, with each step's shape for ``tokens`` tokens."""
    e, H, hd, T = cfg.emb_dim, cfg.n_heads, cfg.head_dim, tokens
    return [
        {"step": "x: the block's input (a token's vector)", "shape": f"(1, {T}, {e})"},
        {"step": "norm1 = LayerNorm(x)", "shape": f"(1, {T}, {e})"},
        {
            "step": "queries, keys, values = W_query, W_key, W_value (norm1)",
            "shape": f"(1, {T}, {e})",
        },
        {"step": "split into heads", "shape": f"(1, {H}, {T}, {hd})"},
        {"step": "attn_weights = softmax(mask(QKᵀ) / √head_dim)", "shape": f"(1, {H}, {T}, {T})"},
        {"step": "context = attn_weights @ values, heads merged", "shape": f"(1, {T}, {e})"},
        {"step": "out_proj(context)", "shape": f"(1, {T}, {e})"},
        {"step": "x = x + attention: the residual", "shape": f"(1, {T}, {e})"},
        {"step": "x = x + FeedForward(LayerNorm(x))", "shape": f"(1, {T}, {e})"},
    ]


def grid_figure(thumbs: torch.Tensor, shown: np.ndarray, *, title: str, selected=None):
    """Every head's pooled weights as one tiled heatmap: layers down, heads across (a
    :class:`attnviz.figures.Chart`, its spec built directly).

    ``thumbs``: (layers, heads, s, s) pooled weights; ``shown``: a boolean (layers, heads)
    array, heads left blank when False (the filter); ``selected``: (layer, head) outlined.
    """
    from attnviz import figures

    L, H, s, _ = thumbs.shape
    gap = 1 if s > 2 else 0
    step = s + gap
    z = np.full((L * step - gap, H * step - gap), np.nan, dtype=np.float32)
    index = np.int8 if max(L, H) < 128 else np.int16  # hover only: the smallest that fits
    layer_of = np.full(z.shape, -1, dtype=index)
    head_of = np.full(z.shape, -1, dtype=index)
    t = thumbs.detach().to(torch.float32).numpy()
    for layer in range(L):
        for head in range(H):
            r, c = layer * step, head * step
            layer_of[r : r + s, c : c + s] = layer
            head_of[r : r + s, c : c + s] = head
            if shown[layer, head]:
                z[r : r + s, c : c + s] = t[layer, head]
    centres = [i * step + (s - 1) / 2 for i in range(max(L, H))]
    trace = {
        "type": "heatmap",
        "z": figures.packed(z),
        "customdata": figures.packed(np.stack([layer_of, head_of], axis=-1)),
        "colorscale": figures.SEQUENTIAL,
        "zmin": 0.0,
        "zmax": 1.0,
        "hovertemplate": "layer %{customdata[0]}, head %{customdata[1]}<br>"
        "pooled weight %{z:.3f}<extra></extra>",
        "colorbar": {
            "title": {"text": "weight"},
            "thickness": figures.COLOURBAR_THICKNESS,
            "tickfont": {"size": figures.TICK_SIZE, "color": figures.AXIS_COLOUR},
        },
    }
    shapes = []
    if selected is not None:
        layer, head = selected
        shapes.append(
            {
                "type": "rect",
                "name": "selected head",
                "x0": head * step - 0.5 - gap / 2,
                "x1": head * step + s - 0.5 + gap / 2,
                "y0": layer * step - 0.5 - gap / 2,
                "y1": layer * step + s - 0.5 + gap / 2,
                "line": {"color": "#ff2b2b", "width": 2},
            }
        )
    axes: dict[str, Any] = {
        "xaxis": {
            "tickvals": centres[:H],
            "ticktext": [f"head {h}" for h in range(H)],
            "tickangle": -45,
            "showgrid": False,
            "zeroline": False,
            "automargin": True,
            "tickfont": {"size": figures.TICK_SIZE, "color": figures.AXIS_COLOUR},
        },
        "yaxis": {
            "tickvals": centres[:L],
            "ticktext": [f"layer {layer}" for layer in range(L)],
            "autorange": "reversed",
            "showgrid": False,
            "zeroline": False,
            "automargin": True,
            "tickfont": {"size": figures.TICK_SIZE, "color": figures.AXIS_COLOUR},
        },
    }
    spec = {
        "data": [trace],
        "layout": figures.base_layout(title, height=640, shapes=shapes, **axes),
    }
    label = f"Heatmap: {figures.one_line(title)}, {L} layers × {H} heads of {s} × {s}"
    return figures.Chart(spec, label, (), "")
