"""The trained-heads page's memory is counted in the server's bound (attnviz.server.budget)."""

from __future__ import annotations

import pytest

from attnviz.models import gpt2
from attnviz.server import budget


@pytest.mark.parametrize("layout", ["lm", "bare"])
def test_the_bound_counts_the_model_as_loading_measures_it(models, layout):
    folder = models[layout][0]
    assert gpt2.model_bytes_of(gpt2.read_config(folder)) == gpt2.model_bytes(gpt2.load(folder))


def test_the_server_bound_adds_gpt2_only_when_its_weights_are_there(models, tmp_path):
    folder = next(iter(models.values()))[0]
    without = budget.server_bound(gpt2_folder=str(tmp_path))  # an empty folder: page says how
    with_model = budget.server_bound(gpt2_folder=folder)
    assert not [k for k in without if k.startswith("GPT-2")]
    gpt2_rows = {k: v for k, v in with_model.items() if k.startswith("GPT-2")}
    assert gpt2_rows["GPT-2: model"] == gpt2.model_bytes(gpt2.load(folder))
    assert gpt2_rows["GPT-2: attention and figure caches"] == (
        gpt2.ATTENTION_CACHE_BYTES + gpt2.FIGURE_CACHE_BYTES
    )
    assert with_model["total"] == without["total"] + sum(gpt2_rows.values())


def test_gpt2_small_adds_about_a_gigabyte_at_256_tokens(small_folder):
    parts = gpt2.memory_bound(small_folder, 256)
    model_mb = parts["GPT-2: model"] / 2**20
    assert 500 < model_mb < 560  # 124M weights in float32 and twelve 1024 x 1024 masks
    forwards_mb = parts["GPT-2: forwards at once"] / 2**20
    assert 150 < forwards_mb < 200  # two forwards of ~90 MB (measured), 36 MB of weights kept
