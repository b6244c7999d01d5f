"""The model, the repeat task and the training loop: shapes, determinism, ablation, cancel."""

from __future__ import annotations

import threading

import pytest
import torch

from attnviz.core import modules as M
from attnviz.models.induction import model as induction_model
from attnviz.models.induction import train as IT

SMALL = IT.TrainConfig(steps=6, batch_size=8)


def test_the_model_is_the_chapters_module_stacked_with_embeddings_and_an_unembedding():
    model = induction_model.build_model(induction_model.ModelConfig(), seed=0)
    assert len(model.blocks) == 2
    for att in model.blocks:
        assert type(att) is M.MultiHeadAttention
        assert (att.num_heads, att.head_dim, att.d_out, att.dropout.p) == (4, 16, 64, 0.0)
        assert att.mask.shape == (24, 24) and att.W_query.bias is None
    assert model.tok_emb.weight.shape == (64, 64) and model.pos_emb.weight.shape == (24, 64)
    assert model.out_head.weight.shape == (64, 64) and model.out_head.bias is None
    names = {n for n, _ in model.named_parameters()}
    assert not any("norm" in n or "ff" in n for n in names)  # no LayerNorm, no MLP
    assert (
        induction_model.build_model(induction_model.ModelConfig(layers=1), seed=0).blocks.__len__()
        == 1
    )
    with pytest.raises(ValueError, match="not divisible by 3 heads"):
        induction_model.ModelConfig(num_heads=3)


def test_the_model_is_causal_no_later_token_changes_an_earlier_prediction():
    model = induction_model.build_model(induction_model.ModelConfig(), seed=1)
    ids = torch.randint(0, 64, (1, 24), generator=torch.Generator().manual_seed(0))
    changed = ids.clone()
    changed[0, 15:] = (changed[0, 15:] + 1) % 64
    with torch.no_grad():
        a, b = model(ids), model(changed)
    assert torch.equal(a[0, :15], b[0, :15])
    assert not torch.equal(a[0, 15:], b[0, 15:])


def test_sequences_end_in_a_repeat_whose_length_varies_from_4_to_12():
    batch = IT.repeat_batch(IT.TrainConfig(), torch.Generator().manual_seed(0), 500)
    T = 24
    assert batch.tokens.shape == (500, T) and int(batch.tokens.max()) < 64
    for row, L in zip(batch.tokens, batch.repeat.tolist(), strict=True):
        assert torch.equal(row[T - L :], row[T - 2 * L : T - L])
    assert set(batch.repeat.tolist()) == set(range(4, 13))
    again = IT.repeat_batch(IT.TrainConfig(), torch.Generator().manual_seed(0), 500)
    assert torch.equal(again.tokens, batch.tokens)


def test_the_first_copy_and_the_repeat_cover_the_right_predictions():
    first, again = IT.copy_masks(24, torch.tensor([4, 12]))
    # target index p-1 predicts token p
    assert [p + 1 for p in first[0].nonzero().flatten().tolist()] == [16, 17, 18, 19]
    assert [p + 1 for p in again[0].nonzero().flatten().tolist()] == [21, 22, 23]
    assert [p + 1 for p in first[1].nonzero().flatten().tolist()] == list(range(1, 12))
    assert [p + 1 for p in again[1].nonzero().flatten().tolist()] == list(range(13, 24))


def test_ablating_a_head_zeroes_its_slice_of_the_context_and_nothing_else():
    model = induction_model.build_model(induction_model.ModelConfig(), seed=2)
    model.eval()
    before = {n: p.clone() for n, p in model.named_parameters()}
    ids = torch.randint(0, 64, (3, 24), generator=torch.Generator().manual_seed(5))
    full = induction_model.run(model, ids)
    cut = induction_model.run(model, ids, ablate=[(0, 1)])
    # layer 0's weights are untouched; layer 0's output loses exactly head 1's share
    assert torch.equal(full.attn_weights[:, 0], cut.attn_weights[:, 0])
    att = model.blocks[0]
    with M.recording() as taps, torch.no_grad():
        att(full.layer_inputs[0])
    context = taps["context"][0]
    head = context[..., 16:32]
    with torch.no_grad():
        lost = head @ att.out_proj.weight[:, 16:32].T  # what head 1 added through out_proj
        expected = full.layer_inputs[1] - lost
    assert torch.allclose(cut.layer_inputs[1], expected, atol=1e-5)
    assert not torch.equal(full.attn_weights[:, 1], cut.attn_weights[:, 1])
    assert all(torch.equal(p, before[n]) for n, p in model.named_parameters())
    with pytest.raises(ValueError, match="no head 2.0"):
        induction_model.run(model, ids, ablate=[(2, 0)])


def test_training_is_deterministic_and_never_draws_from_the_global_generator():
    state = torch.random.get_rng_state()
    first = list(IT.train(SMALL, measure_every=3, checkpoint_every=6))
    assert torch.equal(torch.random.get_rng_state(), state)
    second = list(IT.train(SMALL, measure_every=3, checkpoint_every=6))
    assert [p.step for p in first] == [0, 3, 6]
    for a, b in zip(first, second, strict=True):
        assert a.measures.as_dict() == b.measures.as_dict()
    assert first[-1].params is not None and first[1].params is None
    for name, t in first[-1].params.items():
        assert torch.equal(t, second[-1].params[name])


def test_training_can_be_cancelled_by_an_event_or_by_closing_the_generator():
    cancel = threading.Event()
    steps = []
    for p in IT.train(IT.TrainConfig(steps=50, batch_size=4), measure_every=1, cancel=cancel):
        steps.append(p.step)
        if p.step == 3:
            cancel.set()
    assert steps == [0, 1, 2, 3]
    gen = IT.train(IT.TrainConfig(steps=50, batch_size=4), measure_every=1)
    assert [next(gen).step for _ in range(3)] == [0, 1, 2]
    gen.close()
    with pytest.raises(StopIteration):
        next(gen)


def test_a_time_budget_adds_reports_between_the_measured_steps():
    reports = list(
        IT.train(IT.TrainConfig(steps=4, batch_size=4), measure_every=100, report_seconds=0.0)
    )
    assert [p.step for p in reports] == [0, 1, 2, 3, 4]
    assert reports[-1].done and not reports[0].done
    assert all(set(p.measures.scores) == set(IT.SCORES) for p in reports)
    assert reports[0].measures.scores["induction"].shape == (2, 4)


def test_a_bad_configuration_is_refused_with_a_message():
    with pytest.raises(ValueError, match="a repeat of 13 twice exceeds 24"):
        IT.TrainConfig(max_repeat=13)
    with pytest.raises(ValueError, match="seed=-1"):
        IT.TrainConfig(seed=-1)


def test_the_induction_engine_never_imports_streamlit():
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import sys; import attnviz.models.detectors, attnviz.models.induction.api, attnviz.models.induction.passes; "
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] == 'streamlit'); "
        "assert not loaded, loaded"
    )
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
