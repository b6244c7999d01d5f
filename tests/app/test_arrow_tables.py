"""Lesson tables go to st.dataframe as Arrow tables made once and shared (ui/cache.arrow_table):
a DataFrame would be converted again on every run, warm or cold."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa

from ui import cache

from .conftest import exceptions, open_app


def test_a_table_is_converted_once_per_key_and_keeps_its_values_without_the_index():
    cache.clear_all()
    calls = []

    def make() -> pd.DataFrame:
        calls.append(1)
        return pd.DataFrame({"step": ["a", "b"], "n": [3, 4]}, index=[10, 11])

    first = cache.arrow_table(("test", 1), "t", make)
    again = cache.arrow_table(("test", 1), "t", make)
    other = cache.arrow_table(("test", 2), "t", make)
    assert isinstance(first, pa.Table) and again is first and other is not first
    assert len(calls) == 2  # one conversion per key, not per call
    assert first.column_names == ["step", "n"]  # no index column
    assert first.to_pydict() == {"step": ["a", "b"], "n": [3, 4]}


def test_two_sessions_on_page_4_get_the_same_tables_built_once():
    cache.clear_all()
    a = open_app({"reshape": "true"}, page="multihead")
    b = open_app({"reshape": "true"}, page="multihead")
    for at in (a, b):  # the presets box builds its table once opened
        at.session_state["presets"] = True
        at.run()
    assert not exceptions(a) and not exceptions(b)
    tables = [[t.value for t in at.dataframe] for at in (a, b)]
    assert len(tables[0]) == len(tables[1]) == 2  # the presets and the reshape walk
    for x, y in zip(*tables, strict=True):
        pd.testing.assert_frame_equal(x, y)
    # one Arrow table per table for both sessions (each opened the home page first)
    held = [k for k in list(cache.derived._values) if k[0] == "arrow"]
    # (the home page's: its word-by-word example, the picked sentence's outputs, its passes
    # and tokens)
    assert sorted(k[-1] for k in held) == [
        "example",
        "outputs",
        "passes",
        "presets",
        "strides",
        "tokens",
    ]
