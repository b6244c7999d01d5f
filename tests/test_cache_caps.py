"""Every shared cache is capped in bytes, and the server's memory bound counts each cap
(``attnviz.server.budget.server_bound``)."""

from __future__ import annotations

import re
from pathlib import Path

from attnviz.models import gpt2
from attnviz.models import implementations as impl
from attnviz.server import budget
from attnviz.teach.lessons import multihead as ML
from tests.support.torch_threads import single_intra_op_thread  # noqa: F401
from ui import cache
from ui.memo import Memo
from ui.models import comparison, trained
from ui.models import watch as learn

ROOT = Path(__file__).resolve().parents[1]
UI_MODULES = (cache, comparison, learn, trained)
GPT2_CACHES = {
    "gpt2 attention": gpt2.ATTENTION_CACHE_BYTES,
    "gpt2 figures": gpt2.FIGURE_CACHE_BYTES,
}


def app_memos() -> dict[str, Memo]:
    """Every memo the app's glue holds, by name."""
    found = {}
    for module in UI_MODULES:
        for value in vars(module).values():
            if isinstance(value, Memo):
                found[value.name] = value
    return found


def test_every_memo_has_a_byte_cap_that_the_server_bound_counts():
    memos = app_memos()
    assert {"inputs", "light traces", "heavy traces", "derived", "learn runs"} <= set(memos)
    assert set(GPT2_CACHES) <= set(memos)
    bound = budget.server_bound()
    for name, memo in memos.items():
        assert memo.max_bytes is not None, name
        if name in GPT2_CACHES:  # counted with the GPT-2 model, when its weights are set
            assert memo.max_bytes == GPT2_CACHES[name]
        else:
            assert bound[f"cache: {name}"] == memo.max_bytes == budget.CACHE_BYTES[name]
    assert bound["total"] == sum(v for k, v in bound.items() if k != "total")


def test_every_st_cache_resource_is_bounded_and_counted():
    """The app's st.cache_resource caches: the tokenizer (one object, loaded with the server),
    page 6's benchmark and page 4's timing, each capped in entries with its bytes counted."""
    sources = [*ROOT.joinpath("ui").rglob("*.py"), *ROOT.joinpath("pages").glob("*.py")]
    sources.append(ROOT / "app.py")
    found = {
        path.relative_to(ROOT).as_posix(): len(
            re.findall(r"@st\.cache_resource\(", path.read_text())
        )
        for path in sources
    }
    assert {path: n for path, n in found.items() if n} == {
        "ui/cache.py": 1,  # the tokenizer: part of the warm server, not of the bound
        "ui/models/comparison.py": 1,
        "pages/multi-head-attention.py": 1,
    }
    page_4 = (ROOT / "pages/multi-head-attention.py").read_text()
    assert "max_entries=budget.SPEED_REPORTS" in page_4
    assert comparison.RESULT_ENTRIES == budget.BENCH_RESULTS
    bound = budget.server_bound()
    assert bound["cache: benchmark results"] == budget.BENCH_RESULTS * budget.BENCH_RESULT_BYTES
    assert bound["cache: wrapper timings"] == budget.SPEED_REPORTS * budget.SPEED_REPORT_BYTES


def test_a_benchmark_result_and_a_timing_report_fit_their_per_entry_bound():
    for shape in ((1, 6, 16, 16, 2, True), (1, 6, 16, 8, 2, False)):  # all seven; two n/a
        result = impl.benchmark(shape, seconds_per_impl=0.01, min_rounds=2, max_rounds=3)
        assert budget.size_of(result) <= budget.BENCH_RESULT_BYTES / 2, shape
    heads = 32  # the most heads the settings allow: the longest sentences
    timing = {
        "median": {"wrapper": 0.030, "weight split": 0.010},
        "runs": 200,
        "parts": {
            "wrapper projections": 0.02,
            "split projections": 0.001,
            "split out_proj": 0.001,
            "split merge": 0.001,
        },
    }
    report = ML.speed_report(timing, (1, 1024, 1600, 1600, heads, 1024, True))
    assert budget.size_of(report) <= budget.SPEED_REPORT_BYTES / 2


def test_learn_runs_hold_64_of_the_largest_runs_the_page_allows():
    # 126 kB measured for 1,000 steps and 4 heads (attnviz/server/budget.py); 64 runs fit the cap.
    assert learn.runs.max_entries == 64
    assert 64 * 126_000 <= learn.runs.max_bytes == budget.CACHE_BYTES["learn runs"]
