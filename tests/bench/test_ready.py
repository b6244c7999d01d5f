"""bench/ready.py: a class arriving the moment a fresh server says it is ready. Its parts that
need no server (the live runs are the benchmark itself, bench/ready-results.md)."""

from __future__ import annotations

from bench import measure, ready
from bench.support.server import HEALTH, READY


def test_the_class_shares_five_sentences_and_each_student_changes_its_own_values():
    plans = measure.app_class_plan(50, seed=3, shared=5)
    first = [dict(p.split("=", 1) for p in plan[0].query.split("&")) for plan in plans]
    texts = [f["text"] for f in first]
    assert len(set(texts)) == 5
    assert all(texts[i] == texts[i % 5] for i in range(50))
    # Each student still moves its own values after its first run (d_out, heads, ...).
    assert len({plan[1].query for plan in plans}) > 5
    # Without sharing, every student has a sentence of their own.
    own = measure.app_class_plan(50, seed=3)
    assert len({plan[0].query for plan in own}) == 50


def test_each_readiness_names_the_check_both_servers_get():
    assert ready.CHECK == {"health": HEALTH, "script": READY, "students": HEALTH}
    assert READY == "/_stcore/script-health-check"
    # The trivial app answers the same check: its script health check is turned on too.
    assert ready.SCRIPT_CHECK_ON == {"STREAMLIT_SERVER_SCRIPT_HEALTH_CHECK_ENABLED": "true"}


def row(label: str, cpu_ms: float, p95: float) -> dict:
    return {
        "label": label,
        "sessions": 50,
        "runs": 300,
        "runs_per_s": 10.0,
        "p50": p95 / 2,
        "p95": p95,
        "cpu_ms": cpu_ms,
        "cores_busy": 0.5,
        "errors": [],
        "loadavg": (1.0, 2.0),
    }


def test_the_report_states_each_round_and_the_ratios_to_the_trivial_app():
    rounds = [
        {
            "ready_s": {"attnviz": 8.0, "trivial app": 0.5},
            "rows": [row("attnviz", 30.0, 4.0), row("trivial app", 50.0, 8.0)],
        },
        {
            "ready_s": {"attnviz": 9.0, "trivial app": 0.4},
            "rows": [row("attnviz", 45.0, 6.0), row("trivial app", 50.0, 5.0)],
        },
    ]
    text = ready.markdown(rounds, "script", seed=1, wall=60.0, load_start=1.5)
    assert "readiness `script` (/_stcore/script-health-check)" in text
    assert (
        "round 1: attnviz 30.0 ms a run, trivial app 50.0 ms: 0.60x; p95 4.00 s against 8.00 s: 0.50x"
        in text
    )
    assert (
        "round 2: attnviz 45.0 ms a run, trivial app 50.0 ms: 0.90x; p95 6.00 s against 5.00 s: 1.20x"
        in text
    )
    assert (
        "CPU per page run: median 0.75, 0.60-0.90; p95: median 0.85, 0.50-1.20 over 2 rounds"
        in text
    )
    assert "50 students on each" in text and "Errors: none." in text
