"""The trained-heads page's memory is counted in the server's bound (attnviz.server.budget)."""

from __future__ import annotations

import pytest

from attnviz.models import gpt2 as P
from attnviz.server import budget


@pytest.mark.parametrize("layout", ["lm", "bare"])
def test_the_bound_counts_the_model_as_loading_measures_it(models, layout):
    folder = models[layout][0]
    assert P.model_bytes_of(P.read_config(folder)) == P.model_bytes(P.load(folder))


def test_the_server_bound_adds_gpt2_only_when_its_weights_are_there(models, tmp_path):
    folder = next(iter(models.values()))[0]
    without = budget.server_bound(gpt2_folder=str(tmp_path))  # an empty folder: page says how
    with_model = budget.server_bound(gpt2_folder=folder)
    assert not [k for k in without if k.startswith("GPT-2")]
    gpt2 = {k: v for k, v in with_model.items() if k.startswith("GPT-2")}
    assert gpt2["GPT-2: model"] == P.model_bytes(P.load(folder))
    assert gpt2["GPT-2: attention and figure caches"] == (
        P.ATTENTION_CACHE_BYTES + P.FIGURE_CACHE_BYTES
    )
    assert with_model["total"] == without["total"] + sum(gpt2.values())


def test_gpt2_small_adds_about_a_gigabyte_at_256_tokens(small_folder):
    parts = P.memory_bound(small_folder, 256)
    model_mb = parts["GPT-2: model"] / 2**20
    assert 500 < model_mb < 560  # 124M weights in float32 and twelve 1024 x 1024 masks
    forwards_mb = parts["GPT-2: forwards at once"] / 2**20
    assert 150 < forwards_mb < 200  # two forwards of ~90 MB (measured), 36 MB of weights kept
