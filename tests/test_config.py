""".streamlit/config.toml: the settings that keep the app safe and private."""

from __future__ import annotations

import tomllib
from pathlib import Path

CONFIG = Path(__file__).resolve().parents[1] / ".streamlit" / "config.toml"


def _config() -> dict:
    with CONFIG.open("rb") as f:
        return tomllib.load(f)


def test_xsrf_protection_stays_on():
    assert _config()["server"]["enableXsrfProtection"] is True


def test_no_usage_statistics_are_sent():
    assert _config()["browser"]["gatherUsageStats"] is False


def test_the_upload_limit_is_the_smallest_allowed():
    # The app takes no uploads; 1 MB is the smallest value Streamlit accepts.
    assert _config()["server"]["maxUploadSize"] == 1


def test_there_is_a_theme_section():
    theme = _config()["theme"]
    assert theme and theme.get("base") == "light"


def test_every_table_is_one_streamlit_knows():
    # A misspelt table is ignored silently by Streamlit: catch it here.
    assert set(_config()) <= {"server", "browser", "theme", "client", "runner", "global", "logger"}


def test_the_post_run_full_collection_is_off():
    # Streamlit's gc.collect(2) after every run cost ~85% of a live page run (bench/live.py);
    # bench/soak.py shows memory stays bounded without it.
    assert _config()["runner"]["postScriptGC"] is False
