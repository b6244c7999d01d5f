"""Page 3's "The mask is a buffer": where the module's names are listed, as a list a phone reads
whole (a table of them ran wider than a 390 px screen), with the module's own names."""

from __future__ import annotations

from attnviz.core.modules import CausalAttention
from attnviz.core.seeding import seeded
from attnviz.core.settings import Settings

from .conftest import exceptions, open_app


def test_the_buffer_list_names_what_the_module_lists():
    at = open_app({"bias": "true"}, page="causal")
    assert not exceptions(at)
    # the list is the paragraph after the sentence about the mask, in the same element
    paragraphs = [p for m in at.markdown for p in str(m.value).split("\n\n")]
    lists = [p for p in paragraphs if p.startswith("- `buffers()`")]
    assert len(lists) == 1, [m.value[:60] for m in at.markdown]
    lines = lists[0].splitlines()
    s = Settings()
    with seeded(0):  # construction draws weights; only the names are read
        built = CausalAttention(s.d_in, s.d_out, s.context_length, 0.0, True)
    want = {
        "buffers()": [n for n, _ in built.named_buffers()],
        "state_dict()": list(built.state_dict()),
        "parameters()": [n for n, _ in built.named_parameters()],
    }
    assert lines == [f"- `{k}`: " + ", ".join(f"`{n}`" for n in names) for k, names in want.items()]
    assert "`mask`" in lines[1] and "`mask`" not in lines[2]  # saved, but never trained
    assert not [d for d in at.dataframe if "listed by" in list(d.value.columns)]
