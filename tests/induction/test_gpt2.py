"""The same detectors label GPT-2's heads: mechanics on transformers' randomly initialised tiny
GPT-2, and the published induction heads of GPT-2 small when its weights are on this machine."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from attnviz.models import detectors as D
from attnviz.models import gpt2
from tests.pretrained.conftest import TINY, save_model

os.environ.setdefault("HF_HUB_OFFLINE", "1")

# Olsson et al. (2022) and the TransformerLens demos: GPT-2 small's strongest induction heads.
PUBLISHED_INDUCTION_HEADS = {(5, 1), (5, 5), (6, 9), (7, 2), (7, 10)}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gpt2-tiny-detectors")
    with torch.random.fork_rng(devices=[]):  # save_model seeds the global generator
        model = save_model(folder, "lm", seed=11)
    yield str(folder), model
    gpt2.clear_loaded()


def test_probe_scores_are_the_detectors_on_transformers_own_attention(tiny):
    folder, model = tiny
    probe = gpt2.probe_scores(folder, length=20, seed=4)
    assert len(probe.ids) == 40  # no <|endoftext|> in a 120-token vocabulary
    assert probe.ids[:20] == probe.ids[20:]
    with torch.no_grad():
        out = model(torch.tensor([probe.ids]), output_attentions=True)
    theirs = torch.stack([a[0] for a in out.attentions])  # (L, H, T, T)
    expected = D.all_scores(theirs, repeat=20)
    assert set(probe.scores) == {"previous", "current", "first", "induction"}
    for name, scores in probe.scores.items():
        assert scores.shape == (TINY["n_layer"], TINY["n_head"])
        assert scores == pytest.approx(expected[name], abs=1e-5)
    # the heads differ, so a score read from the wrong head would show
    assert float(probe.scores["current"].max() - probe.scores["current"].min()) > 0.05


def test_a_prefix_id_outside_the_vocabulary_is_left_out_and_one_inside_kept(tiny):
    folder, _ = tiny
    assert gpt2.probe_scores(folder, length=5, prefix=(50256,)).ids.__len__() == 10
    kept = gpt2.probe_scores(folder, length=5, prefix=(7,))
    assert kept.ids[0] == 7 and len(kept.ids) == 11


def _real_gpt2_folder() -> str | None:
    folder = gpt2.weights_folder()
    if folder is None or gpt2.missing_files(folder):
        return None
    return folder


@pytest.mark.skipif(
    _real_gpt2_folder() is None,
    reason="GPT-2 small's weights are not on this machine: set ATTNVIZ_GPT2_DIR to a folder "
    "fetched with scripts/fetch-gpt2 to run this check",
)
def test_gpt2_smalls_strongest_induction_heads_are_the_published_ones():
    folder = _real_gpt2_folder()
    assert folder is not None
    if (gpt2.read_config(folder).n_layers, gpt2.read_config(folder).n_heads) != (12, 12):
        pytest.skip(f"{folder} does not hold GPT-2 small (12 layers of 12 heads)")
    probe = gpt2.probe_scores(folder)  # <|endoftext|>, 50 random tokens, the same 50 again
    scores = probe.scores["induction"]
    order = np.argsort(-scores, axis=None, kind="stable")[:8]  # the 8 strongest, best first
    top = [divmod(int(i), scores.shape[1]) for i in order]
    assert PUBLISHED_INDUCTION_HEADS <= set(top), (top, probe.scores["induction"].round(2))
    for layer, head in PUBLISHED_INDUCTION_HEADS:
        assert probe.scores["induction"][layer, head] > 0.3
