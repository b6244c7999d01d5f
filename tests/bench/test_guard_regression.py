"""bench/guard.py --regress: the deliberate regression reaches the server it starts, and only it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from bench import guard

ROOT = Path(__file__).resolve().parents[2]


def _encoded_name(pythonpath: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    code = "from ui import charts; print(charts.encoded.__name__)"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_regression_replaces_the_chart_json_only_where_its_folder_is_on_the_path():
    assert guard.REGRESSION.is_dir()
    assert (guard.REGRESSION / "sitecustomize.py").is_file()
    assert _encoded_name(str(guard.REGRESSION)) == "_validated_every_run"
    assert _encoded_name(None) == "encoded"


def test_the_guard_takes_the_regress_switch(monkeypatch):
    seen = {}

    def fake_server(gc, extra_env=None, **_):
        seen["gc"], seen["env"] = gc, extra_env
        raise RuntimeError("stop here")

    monkeypatch.setattr(guard.live, "attnviz_server", fake_server)
    for argv, env in ((["--regress"], {"PYTHONPATH": str(guard.REGRESSION)}), ([], None)):
        try:
            guard.main(argv)
        except RuntimeError as stop:
            assert str(stop) == "stop here"
        assert seen == {"gc": "config", "env": env}
