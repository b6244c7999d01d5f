"""bench/pair.py: two classes at once. Its parts that need no server, then one small live pair."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench import pair

ROOT = Path(__file__).resolve().parents[2]


def test_environment_pairs_are_read_and_a_malformed_one_is_refused():
    assert pair.parse_env(["A=1", "B=x=y", "C="]) == {"A": "1", "B": "x=y", "C": ""}
    for bad in (["A"], ["=1"]):
        with pytest.raises(ValueError, match="KEY=VALUE"):
            pair.parse_env(bad)


def test_a_server_s_switches_are_at_their_defaults_whatever_the_shell_exports(monkeypatch):
    monkeypatch.setenv("ATTNVIZ_PAGE_TURNS", "0")
    env = pair.server_env({})
    assert env["ATTNVIZ_PAGE_TURNS"] == "1"
    assert pair.server_env({"ATTNVIZ_PAGE_TURNS": "2"})["ATTNVIZ_PAGE_TURNS"] == "2"  # B's own


def row(label: str, cpu_ms: float) -> dict:
    return {"label": label, "cpu_ms": cpu_ms, "errors": []}


def test_the_summary_states_each_round_and_the_median_ratio_of_a_to_b():
    pairs = [
        (row("attnviz", 20.0), row("trivial app", 25.0)),
        (row("attnviz", 30.0), row("trivial app", 30.0)),
        (row("attnviz", 18.0), row("trivial app", 36.0)),
    ]
    lines = pair.summary(pairs)
    assert lines[0] == (
        "- round 1: trivial app 25.0 ms, attnviz 20.0 ms a page run: attnviz is 0.80x trivial app"
    )
    assert lines[1].endswith("attnviz is 1.00x trivial app")
    assert lines[2].endswith("attnviz is 0.50x trivial app")
    assert lines[3] == "- attnviz / trivial app: median 0.80, from 0.50 to 1.00 over 3 rounds"


def test_a_revision_tree_holds_that_commit_s_files(tmp_path):
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    with pair.revision_tree(head) as tree:
        assert (tree / "app.py").read_text() == subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{head}:app.py"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert not (tree / ".venv").exists()
    assert not tree.exists()  # removed after use


@pytest.mark.slow
def test_a_small_pair_runs_both_classes_and_writes_the_table(tmp_path):
    out = tmp_path / "pair.md"
    done = subprocess.run(
        [sys.executable, "bench/pair.py", "--env", "ATTNVIZ_PAGE_TURNS=2", "--rounds", "1"]
        + ["--sessions", "3", "--output", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    text = out.read_text()
    assert "# Two classes at once: attnviz beside attnviz with ATTNVIZ_PAGE_TURNS=2" in text
    table = [line for line in text.splitlines() if line.startswith("| attnviz")]
    assert len(table) == 2
    assert all("| 3 | 18 |" in line for line in table)  # 3 sessions, 6 page runs each
    assert "over 1 rounds" in text and "Errors: none." in text
