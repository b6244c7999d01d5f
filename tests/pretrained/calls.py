"""One call of each public function of attnviz.models.gpt2, for the engine's RNG-state and thread
tests (tests/engine/engine_calls.py merges them). The model is a tiny GPT-2 written here with
safetensors and a private generator: no transformers, and no draw from torch's global one."""

from __future__ import annotations

import atexit
import functools
import json
import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch

from attnviz.core import modules as M
from attnviz.core.seeding import seeded
from attnviz.models import gpt2

CONFIG = {
    "model_type": "gpt2",
    "n_layer": 2,
    "n_head": 2,
    "n_embd": 8,
    "n_positions": 16,
    "vocab_size": 40,
    "n_inner": None,
    "activation_function": "gelu_new",
    "layer_norm_epsilon": 1e-5,
}
IDS = [3, 1, 4, 1, 5, 9, 2, 6]


@functools.lru_cache(maxsize=1)
def tiny_folder() -> str:
    from safetensors.torch import save_file

    cfg = gpt2.GPT2Config.from_json(CONFIG)
    g = torch.Generator().manual_seed(5)
    tensors = {
        name: torch.randn(shape, generator=g) * 0.5
        for name, shape in gpt2.expected_shapes(cfg).items()
    }
    folder = Path(tempfile.mkdtemp(prefix="attnviz-tiny-gpt2-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    save_file(tensors, str(folder / gpt2.WEIGHTS_FILE))
    (folder / gpt2.CONFIG_FILE).write_text(json.dumps(CONFIG))
    return str(folder)


def pretrained_calls() -> dict:
    folder = tiny_folder()
    weights = gpt2.attention_weights(folder, IDS)
    cfg = gpt2.read_config(folder)

    def reload():
        gpt2.clear_loaded()
        return gpt2.load(folder).config

    def attention_of_one_module():
        att = gpt2.load(folder).model.trf_blocks[0].att
        x = torch.linspace(-1, 1, 5 * 8).view(1, 5, 8)
        with torch.inference_mode():
            return gpt2.attention_with_weights(att, x)

    def split():
        with seeded(0):  # construction draws random weights: through the helper
            att = M.MultiHeadAttention(8, 8, 16, 0.0, 2, qkv_bias=True)
        g = torch.Generator().manual_seed(1)
        weight, bias = torch.randn(8, 24, generator=g), torch.randn(24, generator=g)
        with torch.no_grad():
            gpt2.split_c_attn(weight, bias, att)
        return att.W_query.weight, att.W_key.weight, att.W_value.bias

    return {
        "pretrained.weights_folder": lambda: gpt2.weights_folder({gpt2.ENV: folder}) == folder,
        "pretrained.missing_files": lambda: gpt2.missing_files(folder),
        "pretrained.read_config": lambda: gpt2.read_config(folder),
        "pretrained.expected_shapes": lambda: gpt2.expected_shapes(cfg),
        "pretrained.load[cold]": reload,
        "pretrained.clear_loaded": lambda: (gpt2.clear_loaded(), gpt2.load(folder).layout)[1],
        "pretrained.attention_weights": lambda: gpt2.attention_weights(folder, IDS),
        "pretrained.next_token_logits": lambda: gpt2.next_token_logits(folder, IDS),
        "pretrained.attention_with_weights": attention_of_one_module,
        "pretrained.split_c_attn": split,
        "pretrained.model_bytes": lambda: gpt2.model_bytes(gpt2.load(folder)),
        "pretrained.head_measures": lambda: gpt2.head_measures(weights),
        "pretrained.head_types": lambda: gpt2.head_types(gpt2.head_measures(weights)),
        "pretrained.pool": lambda: gpt2.pool(weights, 4),
        "pretrained.block_shapes": lambda: gpt2.block_shapes(cfg, 8),
        "pretrained.grid_figure": lambda: gpt2.grid_figure(
            gpt2.pool(weights, 4), np.ones((2, 2), dtype=bool), title="grid", selected=(1, 0)
        ),
    }
