"""The chapter's modules: names, signatures, buffers, and MultiHeadAttention as a GPT block."""

from __future__ import annotations

import inspect
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn as nn

from attnviz.core.modules import (
    CausalAttention,
    MultiHeadAttention,
    MultiHeadAttentionWrapper,
    SelfAttention_v1,
    SelfAttention_v2,
)

from .helpers import book_seed, random_x

# The chapter's classes draw their weights (and dropout masks) from torch's global generator, as
# the book's do; the engine's functions that build them do it inside seeded() instead.
pytestmark = pytest.mark.draws_global_rng


def _names(module):
    return [name for name, _ in module.named_parameters()]


def test_parameter_names_follow_the_chapter_in_creation_order():
    assert _names(SelfAttention_v1(3, 2)) == ["W_query", "W_key", "W_value"]
    linear = ["W_query.weight", "W_key.weight", "W_value.weight"]
    assert _names(SelfAttention_v2(3, 2)) == linear
    assert _names(CausalAttention(3, 2, 6, 0.0)) == linear
    assert _names(MultiHeadAttention(3, 2, 6, 0.0, 2)) == [
        *linear,
        "out_proj.weight",
        "out_proj.bias",
    ]
    assert _names(MultiHeadAttentionWrapper(3, 2, 6, 0.0, 2)) == [
        f"heads.{h}.{n}" for h in range(2) for n in linear
    ]


def test_qkv_bias_adds_a_bias_to_each_projection():
    assert _names(SelfAttention_v2(3, 2, qkv_bias=True)) == [
        "W_query.weight",
        "W_query.bias",
        "W_key.weight",
        "W_key.bias",
        "W_value.weight",
        "W_value.bias",
    ]
    mha = MultiHeadAttention(4, 4, 6, 0.0, 2, qkv_bias=True)
    assert mha.W_value.bias.shape == (4,)


def test_constructor_signatures_are_the_chapters():
    def params(cls):
        return list(inspect.signature(cls.__init__).parameters)[1:]

    assert params(SelfAttention_v1) == ["d_in", "d_out"]
    assert params(SelfAttention_v2) == ["d_in", "d_out", "qkv_bias"]
    assert params(CausalAttention) == ["d_in", "d_out", "context_length", "dropout", "qkv_bias"]
    for cls in (MultiHeadAttentionWrapper, MultiHeadAttention):
        assert params(cls) == [
            "d_in",
            "d_out",
            "context_length",
            "dropout",
            "num_heads",
            "qkv_bias",
        ]


def test_weight_shapes():
    v1 = SelfAttention_v1(3, 2)
    assert v1.W_query.shape == (3, 2)  # used as x @ W
    v2 = SelfAttention_v2(3, 2)
    assert v2.W_query.weight.shape == (2, 3)  # nn.Linear stores (d_out, d_in)
    mha = MultiHeadAttention(16, 8, 32, 0.1, 2)
    assert (mha.head_dim, mha.num_heads, mha.d_out) == (4, 2, 8)
    assert mha.out_proj.weight.shape == (8, 8)


def test_v1_weights_are_uniform_zero_to_one():
    v1 = SelfAttention_v1(8, 8)
    w = torch.cat([v1.W_query.flatten(), v1.W_key.flatten(), v1.W_value.flatten()]).detach()
    assert float(w.min()) >= 0.0 and float(w.max()) < 1.0


@pytest.mark.parametrize(
    "factory",
    [
        lambda: CausalAttention(3, 2, 6, 0.0),
        lambda: MultiHeadAttention(3, 2, 6, 0.0, 2),
    ],
    ids=["causal", "mha"],
)
def test_mask_is_a_buffer_not_a_parameter(factory):
    module = factory()
    assert "mask" in dict(module.named_buffers())
    assert "mask" in module.state_dict()
    assert all(p is not module.mask for p in module.parameters())
    assert "mask" not in dict(module.named_parameters())
    assert module.mask.requires_grad is False
    assert torch.equal(module.mask, torch.triu(torch.ones(6, 6), diagonal=1))


def test_wrapper_has_one_mask_per_head():
    wrapper = MultiHeadAttentionWrapper(3, 2, 6, 0.0, 3)
    assert [n for n, _ in wrapper.named_buffers()] == [f"heads.{h}.mask" for h in range(3)]


def test_mask_moves_with_the_module_state():
    a = CausalAttention(3, 2, 6, 0.0)
    b = CausalAttention(3, 2, 6, 0.0)
    with torch.no_grad():
        b.mask.zero_()
    b.load_state_dict(a.state_dict())
    assert torch.equal(b.mask, a.mask)


def test_indivisible_heads_are_refused():
    with pytest.raises(AssertionError, match="d_out must be divisible by num_heads"):
        MultiHeadAttention(4, 10, 6, 0.0, 4)


def test_wrapper_output_width_is_d_out_times_heads():
    out = MultiHeadAttentionWrapper(4, 3, 8, 0.0, num_heads=2)(random_x((2, 5, 4), 0))
    assert out.shape == (2, 5, 6)


def test_seed_fixes_weights_like_the_chapter():
    with book_seed(5):
        a = MultiHeadAttention(8, 8, 16, 0.0, 2)
    with book_seed(5):
        b = MultiHeadAttention(8, 8, 16, 0.0, 2)
    for (name, pa), (_, pb) in zip(a.named_parameters(), b.named_parameters(), strict=True):
        assert torch.equal(pa, pb), name


class _Block(nn.Module):
    """A pre-LayerNorm transformer block as in the next chapter, using our attention."""

    def __init__(self, emb: int, ctx: int, heads: int):
        super().__init__()
        self.norm1 = nn.LayerNorm(emb)
        self.att = MultiHeadAttention(emb, emb, ctx, 0.1, heads)
        self.norm2 = nn.LayerNorm(emb)
        self.ff = nn.Sequential(nn.Linear(emb, 4 * emb), nn.GELU(), nn.Linear(4 * emb, emb))

    def forward(self, x):
        x = x + self.att(self.norm1(x))
        return x + self.ff(self.norm2(x))


def test_multihead_attention_drops_into_a_tiny_gpt_and_trains():
    vocab, emb, ctx = 50, 16, 12
    with book_seed(0):
        model = nn.Sequential(
            nn.Embedding(vocab, emb),
            _Block(emb, ctx, 4),
            _Block(emb, ctx, 4),
            nn.LayerNorm(emb),
            nn.Linear(emb, vocab),
        )
    ids = torch.randint(0, vocab, (3, 8), generator=torch.Generator().manual_seed(1))
    model.train()
    with book_seed(2):
        logits = model(ids[:, :-1])
    assert logits.shape == (3, 7, vocab)
    loss = nn.functional.cross_entropy(logits.flatten(0, 1), ids[:, 1:].flatten())
    loss.backward()
    for block in (model[1], model[2]):
        for name in ("W_query", "W_key", "W_value", "out_proj"):
            grad = getattr(block.att, name).weight.grad
            assert grad is not None and grad.shape == (emb, emb), name
            assert float(grad.abs().sum()) > 0, name
    # One optimiser step lowers the loss on the same batch (eval: no dropout noise).
    model.eval()

    def loss_now():
        return nn.functional.cross_entropy(model(ids[:, :-1]).flatten(0, 1), ids[:, 1:].flatten())

    with torch.no_grad():
        before = float(loss_now())
    model.zero_grad()
    optimiser = torch.optim.SGD(model.parameters(), lr=0.5)
    loss_now().backward()
    optimiser.step()
    with torch.no_grad():
        assert float(loss_now()) < before


def test_causality_holds_inside_the_gpt_block():
    block = _Block(8, 10, 2).eval()
    x = random_x((1, 6, 8), 3)
    y = x.clone()
    y[:, 4:] += 5.0
    with torch.no_grad():
        assert torch.allclose(block(x)[:, :4], block(y)[:, :4], atol=1e-6)
        assert not torch.allclose(block(x)[:, 4:], block(y)[:, 4:])


def test_modules_accept_fewer_tokens_than_the_context():
    mha = MultiHeadAttention(4, 4, 32, 0.0, 2)
    assert mha(random_x((1, 3, 4), 0)).shape == (1, 3, 4)
    ca = CausalAttention(4, 2, 32, 0.0)
    assert ca(random_x((2, 1, 4), 0)).shape == (2, 1, 2)


# --- a student can copy the modules as they are -----------------------------------------------
MODULES_PY = Path(__file__).resolve().parents[2] / "attnviz" / "core" / "modules.py"
BOOK_SIGNATURES = {
    "SelfAttention_v1": ["d_in", "d_out"],
    "SelfAttention_v2": ["d_in", "d_out", "qkv_bias"],
    "CausalAttention": ["d_in", "d_out", "context_length", "dropout", "qkv_bias"],
    "MultiHeadAttentionWrapper": [
        "d_in",
        "d_out",
        "context_length",
        "dropout",
        "num_heads",
        "qkv_bias",
    ],
    "MultiHeadAttention": ["d_in", "d_out", "context_length", "dropout", "num_heads", "qkv_bias"],
}
STANDALONE = """
import inspect, json, sys
sys.path.insert(0, sys.argv[1])
import torch
import book_attention as ba

report = {"foreign": sorted(
    m for m in sys.modules if m.split(".")[0] in ("attnviz", "streamlit", "plotly")
)}
x = torch.randn(2, 4, 6)
report["classes"] = {}
for name, args in [
    ("SelfAttention_v1", (6, 4)),
    ("SelfAttention_v2", (6, 4)),
    ("CausalAttention", (6, 4, 8, 0.0)),
    ("MultiHeadAttentionWrapper", (6, 2, 8, 0.0, 2)),
    ("MultiHeadAttention", (6, 4, 8, 0.0, 2)),
]:
    cls = getattr(ba, name)
    module = cls(*args)
    out = module(x[0] if name.startswith("SelfAttention") else x)
    report["classes"][name] = {
        "init": list(inspect.signature(cls.__init__).parameters)[1:],
        "forward": list(inspect.signature(cls.forward).parameters)[1:],
        "out": list(out.shape),
    }
print(json.dumps(report))
"""


def test_a_copy_of_modules_py_runs_on_its_own(tmp_path):
    # Copied under another name into an empty folder, run in a fresh interpreter that cannot
    # see the project: it must import, build and run each module with torch alone.
    shutil.copy(MODULES_PY, tmp_path / "book_attention.py")
    result = subprocess.run(
        [sys.executable, "-I", "-c", STANDALONE, str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["foreign"] == []
    assert set(report["classes"]) == set(BOOK_SIGNATURES)
    for name, found in report["classes"].items():
        assert found["init"] == BOOK_SIGNATURES[name], name  # no flags beyond the book's
        assert found["forward"] == ["x"], name
    assert report["classes"]["MultiHeadAttention"]["out"] == [2, 4, 4]
    assert report["classes"]["MultiHeadAttentionWrapper"]["out"] == [2, 4, 4]  # 2 heads x 2
    assert report["classes"]["SelfAttention_v2"]["out"] == [4, 4]
