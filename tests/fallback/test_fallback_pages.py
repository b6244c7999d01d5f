"""A dependency fails: with the vocabulary missing or corrupt and the network dead (the
blackhole proxy), the app runs on the fallback tokenizer and says so on every page."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from attnviz.core import tokens
from bench.support.pages import app_pages
from ui import cache

APP = str(Path(__file__).resolve().parents[2] / "app.py")
SHARED = Path(__file__).resolve().parents[3] / "shared" / "tiktoken_cache"


@pytest.fixture
def fresh_tokenizer(monkeypatch):
    """Forget the loaded tokenizer before and after, so the test loads it from its own cache."""
    monkeypatch.setattr(tokens, "_TOKENIZER", None)
    st.cache_resource.clear()
    cache.clear_all()
    yield
    st.cache_resource.clear()
    cache.clear_all()


def _corrupt_cache(folder: Path) -> None:
    for f in SHARED.iterdir():
        if f.name != "README.md":
            shutil.copy(f, folder / f.name)
    victim = folder / "6c7ea1a7e38e3a7f062df639a5b80947f075ffe6"  # encoder.json
    victim.write_bytes(victim.read_bytes()[:1000])


@pytest.mark.parametrize("cache_state", ["missing", "corrupt"])
def test_every_page_runs_on_the_fallback_and_says_so(
    cache_state, tmp_path, monkeypatch, fresh_tokenizer, blackhole
):
    if cache_state == "corrupt":
        if not SHARED.is_dir():
            pytest.skip("the shared vocabulary cache is not beside the project")
        _corrupt_cache(tmp_path)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    before = len(blackhole.snapshot())
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    # The download was tried through the (dead) proxy, with a bounded timeout.
    assert len(blackhole.snapshot()) > before
    for page in app_pages():
        at.switch_page(page.path).run()
        assert not at.exception, (page.path, [e.message for e in at.exception])
        warnings = [w.value for w in at.warning]
        assert any("Tokenizer: fallback (GPT-2 vocabulary unavailable)" in w for w in warnings), (
            page.path,
            warnings,
        )
        reason = "is not in the cache" if cache_state == "missing" else "is corrupt"
        assert any(reason in w for w in warnings), warnings
    assert tokens.get_tokenizer().status.name == "fallback"


def test_the_fallback_still_draws_the_passes(tmp_path, monkeypatch, fresh_tokenizer):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["text"] = "the cat sat on the mat"
    at.run()
    at.switch_page("pages/simplified-attention.py").run()
    assert not at.exception
    assert len(at.get("plotly_chart")) >= 4
