""".streamlit/config.toml: the settings that keep the app safe and private, each with its reason."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

CONFIG = Path(__file__).resolve().parents[1] / ".streamlit" / "config.toml"
SETTING = re.compile(r"^\s*[A-Za-z_][\w.-]*\s*=")


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


def test_each_setting_has_a_one_line_reason_beside_it():
    lines = CONFIG.read_text().splitlines()
    settings = [i for i, line in enumerate(lines) if SETTING.match(line)]
    assert len(settings) >= 8  # every setting in the file is found
    for i in settings:
        inline = "#" in lines[i].split("=", 1)[1]
        above = i > 0 and lines[i - 1].lstrip().startswith("#")
        assert inline or above, f"line {i + 1} has no reason beside it: {lines[i]!r}"


def test_every_table_is_one_streamlit_knows():
    # A misspelt table is ignored silently by Streamlit: catch it here.
    assert set(_config()) <= {"server", "browser", "theme", "client", "runner", "global", "logger"}


def test_the_post_run_full_collection_is_off():
    # Streamlit's gc.collect(2) after every run cost ~85% of a live page run (bench/live.py);
    # bench/soak.py shows memory stays bounded without it.
    assert _config()["runner"]["postScriptGC"] is False
