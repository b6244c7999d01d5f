"""The chapter's modules with GPT-2's weights compute what transformers' GPT-2 computes."""

from __future__ import annotations

import threading

import pytest
import torch

from attnviz.core import modules as M
from attnviz.models import gpt2

from .conftest import LAYOUTS, TINY

TOL = dict(atol=2e-5, rtol=1e-4)  # float32 round-off through three layers of sharp heads


def _ids(seed: int, n: int = 23) -> list[int]:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, TINY["vocab_size"], (n,), generator=g).tolist()


def _reference(model, ids):
    with torch.no_grad():
        out = model(torch.tensor([ids]), output_attentions=True)
    attentions = torch.stack([a[0] for a in out.attentions])  # (L, H, T, T)
    logits = out.logits[0, -1] if hasattr(out, "logits") else None
    return attentions, logits


@pytest.mark.parametrize("layout", LAYOUTS)
def test_attention_weights_equal_transformers_output_attentions(models, layout):
    folder, model = models[layout]
    ids = _ids(1)
    ours = gpt2.attention_weights(folder, ids)
    theirs, _ = _reference(model, ids)
    assert ours.shape == (TINY["n_layer"], TINY["n_head"], 23, 23) == theirs.shape
    assert ours.dtype == torch.float32
    for layer in range(TINY["n_layer"]):
        for head in range(TINY["n_head"]):
            torch.testing.assert_close(ours[layer, head], theirs[layer, head], **TOL)
    # The comparison can fail: these heads are far from an even share.
    assert float(theirs.max(dim=-1).values[:, :, 5:].mean()) > 0.5


@pytest.mark.parametrize("layout", LAYOUTS)
def test_next_token_logits_match_transformers(models, layout):
    from transformers import GPT2LMHeadModel

    folder, model = models[layout]
    ids = _ids(2, 17)
    if not isinstance(model, GPT2LMHeadModel):  # a bare GPT2Model: its head is the tied wte
        head = GPT2LMHeadModel(model.config).eval()
        head.transformer.load_state_dict(model.state_dict())
        head.tie_weights()
        model = head
    _, theirs = _reference(model, ids)
    loaded = gpt2.load(folder)  # the model the page loads, its head applied here
    with torch.inference_mode():
        last = loaded.model.final_norm(loaded.model.hidden_states(torch.tensor([ids]))[:, -1])
        ours = (last @ loaded.model.out_head_weight.T)[0]
    assert ours.shape == (TINY["vocab_size"],)
    torch.testing.assert_close(ours, theirs, atol=2e-5, rtol=1e-5)
    assert int(ours.argmax()) == int(theirs.argmax())


def test_the_key_layouts_are_read_as_such(models):
    seen = {layout: gpt2.load(models[layout][0]) for layout in LAYOUTS}
    assert {k: v.layout for k, v in seen.items()} == {
        "lm": "prefixed",
        "bare": "bare",
        "published": "bare",
        "untied": "prefixed",
    }
    assert [seen[k].own_lm_head for k in LAYOUTS] == [False, False, False, True]


def test_c_attn_is_split_in_three_and_transposed(models):
    from safetensors import safe_open

    folder, _ = models["bare"]
    att = gpt2.load(folder).model.trf_blocks[1].att
    assert isinstance(att, M.MultiHeadAttention)
    with safe_open(f"{folder}/{gpt2.WEIGHTS_FILE}", framework="pt") as f:
        c_attn = f.get_tensor("h.1.attn.c_attn.weight")  # (in, 3 x out)
        c_bias = f.get_tensor("h.1.attn.c_attn.bias")
    d = TINY["n_embd"]
    assert c_attn.shape == (d, 3 * d)
    for i, linear in enumerate((att.W_query, att.W_key, att.W_value)):
        assert torch.equal(linear.weight, c_attn[:, i * d : (i + 1) * d].T)
        assert torch.equal(linear.bias, c_bias[i * d : (i + 1) * d])
    assert att.num_heads == TINY["n_head"] and att.head_dim == d // TINY["n_head"]


def test_the_recorded_weights_are_the_ones_the_forward_used(models):
    """Context = weights @ values, merged and projected, gives the module's own output."""
    att = gpt2.load(models["bare"][0]).model.trf_blocks[0].att
    x = torch.randn(1, 9, TINY["n_embd"])
    with torch.inference_mode():
        output, weights = gpt2.attention_with_weights(att, x)
        assert torch.equal(output, att(x))
        values = att.W_value(x).view(1, 9, att.num_heads, att.head_dim).transpose(1, 2)
        context = (weights @ values).transpose(1, 2).reshape(1, 9, att.d_out)
        torch.testing.assert_close(att.out_proj(context), output, **TOL)
    assert weights.shape == (1, att.num_heads, 9, 9)
    torch.testing.assert_close(weights.sum(-1), torch.ones(1, att.num_heads, 9))
    assert torch.all(weights.triu(diagonal=1) == 0)  # causal: no future key gets weight


def test_concurrent_sessions_get_their_own_weights(models):
    folder, model = models["lm"]
    texts = [_ids(seed, 11 + seed) for seed in range(6)]
    expected = [_reference(model, ids)[0] for ids in texts]
    gpt2.load(folder)
    results: dict[int, torch.Tensor] = {}
    errors = []

    def work(i):
        try:
            for _ in range(5):
                results[i] = gpt2.attention_weights(folder, texts[i])
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(texts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for i, want in enumerate(expected):
        torch.testing.assert_close(results[i], want, **TOL)


def test_the_model_is_loaded_once_per_process_even_when_asked_at_once(models, monkeypatch):
    folder, _ = models["bare"]
    builds = []
    real = gpt2._build

    def counting(path):
        builds.append(path)
        return real(path)

    monkeypatch.setattr(gpt2, "_build", counting)
    gpt2.clear_loaded()
    got = []
    threads = [threading.Thread(target=lambda: got.append(gpt2.load(folder))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(builds) == 1 and len({id(g) for g in got}) == 1
    loaded = got[0]
    assert not loaded.model.training
    assert not any(p.requires_grad for p in loaded.model.parameters())
