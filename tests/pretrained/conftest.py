"""Small GPT-2 models made here with transformers and random weights, saved in the Hugging Face
layout (config.json + model.safetensors) in each key layout the loader accepts."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch

from attnviz.models import gpt2

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

TINY = dict(n_layer=3, n_head=4, n_embd=32, n_positions=64, vocab_size=120)
LAYOUTS = ("lm", "bare", "published", "untied")
# For the page: GPT-2's vocabulary size, since the page feeds the model tiktoken's ids.
PAGE_MODEL = dict(n_layer=2, n_head=4, n_embd=32, n_positions=64, vocab_size=50257)


def _tiny_config(**changes):
    from transformers import GPT2Config

    # A wide initialisation makes the heads sharp, so a wrong split, transpose or scale shows.
    return GPT2Config(**{**TINY, **changes}, initializer_range=0.5, attn_implementation="eager")


def _randomise_norms(model) -> None:
    """LayerNorms start at scale 1, shift 0: give them random values so a swap would show."""
    with torch.no_grad():
        for name, param in model.named_parameters():
            if ".ln_" in name or "ln_f" in name:
                param.add_(0.3 * torch.randn_like(param))


def save_model(folder: Path, layout: str, seed: int = 0):
    """A random GPT-2 in ``folder``; returns the transformers model (eval) to compare against."""
    from safetensors.torch import load_file, save_file
    from transformers import GPT2LMHeadModel, GPT2Model

    torch.manual_seed(seed)
    if layout == "bare" or layout == "published":
        model = GPT2Model(_tiny_config())
    elif layout == "untied":
        model = GPT2LMHeadModel(_tiny_config(tie_word_embeddings=False))
    else:
        model = GPT2LMHeadModel(_tiny_config())
    _randomise_norms(model)
    model.eval()
    model.save_pretrained(folder)
    weights = folder / gpt2.WEIGHTS_FILE
    if layout == "published":
        # The files published for gpt2 also carry each layer's causal mask buffer.
        tensors = load_file(str(weights))
        n = TINY["n_positions"]
        mask = torch.tril(torch.ones(n, n)).view(1, 1, n, n)
        for i in range(TINY["n_layer"]):
            tensors[f"h.{i}.attn.bias"] = mask.clone()
        save_file(tensors, str(weights), metadata={"format": "pt"})
    return model


@pytest.fixture(scope="session")
def models(tmp_path_factory) -> dict[str, tuple[str, object]]:
    """layout -> (folder, transformers model)."""
    out = {}
    for layout in LAYOUTS:
        folder = tmp_path_factory.mktemp(f"gpt2-{layout}")
        out[layout] = (str(folder), save_model(folder, layout, seed=LAYOUTS.index(layout)))
    return out


@pytest.fixture(scope="session")
def page_folder(tmp_path_factory) -> str:
    """A random GPT-2 with GPT-2's vocabulary size (the page feeds it tiktoken's ids)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    folder = tmp_path_factory.mktemp("gpt2-page")
    torch.manual_seed(3)
    config = GPT2Config(**PAGE_MODEL, initializer_range=0.5, attn_implementation="eager")
    GPT2LMHeadModel(config).save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="session")
def small_folder(tmp_path_factory) -> str:
    """GPT-2 small's shape (12 layers, 12 heads, 768 wide, 50,257 tokens) with random weights,
    saved as the bare GPT2Model the published files hold."""
    from transformers import GPT2Config, GPT2Model

    folder = tmp_path_factory.mktemp("gpt2-small-shape")
    torch.manual_seed(0)
    GPT2Model(GPT2Config()).save_pretrained(folder)
    config = json.loads((folder / gpt2.CONFIG_FILE).read_text())
    assert (config["n_layer"], config["n_head"], config["n_embd"]) == (12, 12, 768)
    return str(folder)


@pytest.fixture(autouse=True)
def _forget_loaded_model():
    yield
    gpt2.clear_loaded()
