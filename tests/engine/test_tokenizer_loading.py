"""Loading GPT-2's tokenizer: the cache, a bounded network attempt, then the fallback."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

import attnviz.core.tokens as tokens_module
from attnviz.core.tokens import cache_dir, cache_problems, get_tokenizer, load_tokenizer, tokenize

SHARED_CACHE = Path(__file__).resolve().parents[3] / "shared" / "tiktoken_cache"
ENCODER_JSON = "6c7ea1a7e38e3a7f062df639a5b80947f075ffe6"  # sha1 of encoder.json's URL
VOCAB_BPE = "6d1cbeee0f20b3d9449abfede4726ed8212e3aee"  # sha1 of vocab.bpe's URL
LIVENESS_S = 30.0
GPT2_HOST = "openaipublic.blob.core.windows.net"

pytestmark = pytest.mark.skipif(
    not SHARED_CACHE.is_dir(), reason="the shared GPT-2 cache is not on this machine"
)


@pytest.fixture
def copied_cache(tmp_path) -> Path:
    """The shared cache's files copied (writable) into a temp folder; the shared one is never
    touched and nothing is copied into the project."""
    folder = tmp_path / "cache"
    folder.mkdir()
    for name in os.listdir(SHARED_CACHE):
        if (SHARED_CACHE / name).is_file() and name != "README.md":
            shutil.copyfile(SHARED_CACHE / name, folder / name)
    return folder


def _new_requests(blackhole, before: int, wait_s: float = 3.0) -> list[str]:
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        new = blackhole.snapshot()[before:]
        if new:
            return new
        time.sleep(0.05)
    return blackhole.snapshot()[before:]


def test_tests_route_every_request_to_the_blackhole(blackhole):
    assert os.environ["HTTPS_PROXY"] == blackhole.url
    assert blackhole.url.startswith("http://127.0.0.1:")


def test_real_cache_loads_gpt2_from_the_cache_without_touching_the_network(blackhole):
    assert cache_problems() == []  # whichever valid cache the run points at
    before = len(blackhole.snapshot())
    tok = load_tokenizer()
    assert tok.status.is_real is True
    assert tok.status.name == "gpt2"
    assert tok.status.source == "cache"
    assert tok.status.headline == "Tokenizer: GPT-2 BPE (tiktoken)"
    assert cache_problems() == []
    assert blackhole.snapshot()[before:] == []


def test_get_tokenizer_loads_once_and_shares_the_result():
    assert get_tokenizer() is get_tokenizer()


def test_empty_cache_without_network_falls_back_in_bounded_time(monkeypatch, tmp_path, blackhole):
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(empty))
    before = len(blackhole.snapshot())

    started = time.monotonic()
    tok = load_tokenizer()  # the app's own timeout
    elapsed = time.monotonic() - started

    assert elapsed < LIVENESS_S
    assert tok.status.is_real is False
    assert tok.status.name == "fallback"
    assert tok.status.source == "unavailable"
    assert "download failed" in tok.status.detail
    assert "vocab.bpe is not in the cache" in tok.status.detail
    assert tok.status.headline == "Tokenizer: fallback (GPT-2 vocabulary unavailable)"
    # The network was tried, through the proxy: the blackhole saw the request.
    assert any(GPT2_HOST in line for line in _new_requests(blackhole, before))
    # A failed download leaves nothing half-written in the cache folder.
    assert list(empty.iterdir()) == []
    # And the fallback works.
    assert tokenize("Your journey starts", tokenizer=tok).tokenizer == "fallback"


def test_allow_network_false_falls_back_without_any_request(monkeypatch, tmp_path, blackhole):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    before = len(blackhole.snapshot())
    started = time.monotonic()
    tok = load_tokenizer(allow_network=False)
    assert time.monotonic() - started < 5
    assert (tok.status.name, tok.status.is_real) == ("fallback", False)
    time.sleep(0.2)
    assert blackhole.snapshot()[before:] == []


def test_missing_cache_never_lets_tiktoken_download_on_its_own(monkeypatch, tmp_path):
    import tiktoken

    def refuse(name):
        raise AssertionError(f"tiktoken.get_encoding({name!r}) called without a valid cache")

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(tiktoken, "get_encoding", refuse)
    tok = load_tokenizer(allow_network=False)
    assert tok.status.name == "fallback"


def test_cache_problems_lists_both_missing_files(tmp_path):
    assert cache_problems(str(tmp_path)) == [
        "vocab.bpe is not in the cache",
        "encoder.json is not in the cache",
    ]


def test_a_copied_cache_is_valid_and_loads_gpt2(monkeypatch, copied_cache):
    assert cache_problems(str(copied_cache)) == []
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(copied_cache))
    tok = load_tokenizer(allow_network=False)
    assert (tok.status.name, tok.status.source) == ("gpt2", "cache")


def test_corrupt_cache_file_is_named_and_loading_falls_back(monkeypatch, copied_cache):
    target = copied_cache / ENCODER_JSON
    data = target.read_bytes()
    target.write_bytes(data[: len(data) // 2])  # truncated

    assert cache_problems(str(copied_cache)) == [
        "encoder.json in the cache is corrupt (SHA-256 mismatch)"
    ]
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(copied_cache))
    tok = load_tokenizer(allow_network=False)
    assert (tok.status.name, tok.status.is_real) == ("fallback", False)
    assert "encoder.json in the cache is corrupt" in tok.status.detail


def test_corrupt_cache_with_network_tries_the_download_then_falls_back(
    monkeypatch, copied_cache, blackhole
):
    target = copied_cache / ENCODER_JSON
    target.write_bytes(b"{}")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(copied_cache))
    before = len(blackhole.snapshot())
    started = time.monotonic()
    tok = load_tokenizer(timeout=0.5)
    assert time.monotonic() - started < LIVENESS_S
    assert tok.status.name == "fallback"
    assert "download failed" in tok.status.detail
    assert any(GPT2_HOST in line for line in _new_requests(blackhole, before))
    # The valid file was not fetched again or damaged; the corrupt one was not replaced.
    assert (copied_cache / VOCAB_BPE).read_bytes() == (SHARED_CACHE / VOCAB_BPE).read_bytes()
    assert target.read_bytes() == b"{}"


def test_a_missing_file_is_named_as_missing(copied_cache):
    (copied_cache / VOCAB_BPE).unlink()
    assert cache_problems(str(copied_cache)) == ["vocab.bpe is not in the cache"]


def test_cache_dir_follows_tiktoken_rules(monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "/somewhere/tk")
    monkeypatch.setenv("DATA_GYM_CACHE_DIR", "/somewhere/dg")
    assert cache_dir() == "/somewhere/tk"
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR")
    assert cache_dir() == "/somewhere/dg"
    monkeypatch.delenv("DATA_GYM_CACHE_DIR")
    import tempfile

    assert cache_dir() == os.path.join(tempfile.gettempdir(), "data-gym-cache")


def test_network_timeout_is_bounded():
    # tiktoken's own download has no timeout; ours must have one, and a short one.
    assert 0 < tokens_module.NETWORK_TIMEOUT_S <= 10
