"""Text to tokens: GPT-2's byte-pair encoding through tiktoken, with a fallback that never hangs.

Loading order (decided once per process, see :func:`get_tokenizer`):

1. the tiktoken cache (``TIKTOKEN_CACHE_DIR``, else tiktoken's default folder): both GPT-2 files
   present and matching the SHA-256 that tiktoken expects, so ``tiktoken.get_encoding("gpt2")``
   reads them without touching the network;
2. otherwise the network, with our own bounded timeout (tiktoken's own download has none), into
   that cache folder;
3. otherwise a fallback tokenizer that needs nothing downloaded, reported as such.

Positions are 0-based everywhere: the label ``"1: ␣journey"`` is ``inputs[1]``.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import threading
import unicodedata
from dataclasses import dataclass, field
from typing import Any

GPT2_EOT = 50256
GPT2_VOCAB_SIZE = 50257
ENDOFTEXT = "<|endoftext|>"

_GPT2_FILES = (
    # (what it is, URL tiktoken fetches, SHA-256 tiktoken expects)
    (
        "vocab.bpe",
        "https://openaipublic.blob.core.windows.net/gpt-2/encodings/main/vocab.bpe",
        "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5",
    ),
    (
        "encoder.json",
        "https://openaipublic.blob.core.windows.net/gpt-2/encodings/main/encoder.json",
        "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783",
    ),
)

NETWORK_TIMEOUT_S = 4.0  # per request; the whole attempt is bounded by two of these at most


@dataclass(frozen=True)
class TokenizerStatus:
    """Which tokenizer is in use and why, for the page header."""

    name: str  # "gpt2" (tiktoken) or "fallback"
    is_real: bool
    source: str  # "cache", "network" or "unavailable"
    detail: str  # one sentence for the page

    @property
    def headline(self) -> str:
        if self.is_real:
            return "Tokenizer: GPT-2 BPE (tiktoken)"
        return "Tokenizer: fallback (GPT-2 vocabulary unavailable)"


def cache_dir() -> str:
    """The folder tiktoken reads its cache from, by the same rule tiktoken uses."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        return os.environ["TIKTOKEN_CACHE_DIR"]
    if "DATA_GYM_CACHE_DIR" in os.environ:
        return os.environ["DATA_GYM_CACHE_DIR"]
    return os.path.join(tempfile.gettempdir(), "data-gym-cache")


def _cache_path(folder: str, url: str) -> str:
    return os.path.join(folder, hashlib.sha1(url.encode()).hexdigest())


def _file_is_valid(path: str, sha256: str) -> bool:
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest() == sha256
    except OSError:
        return False


def cache_problems(folder: str | None = None) -> list[str]:
    """What is wrong with the GPT-2 files in the cache (empty when both are there and valid)."""
    folder = cache_dir() if folder is None else folder
    problems = []
    for what, url, sha in _GPT2_FILES:
        path = _cache_path(folder, url)
        if not os.path.exists(path):
            problems.append(f"{what} is not in the cache")
        elif not _file_is_valid(path, sha):
            problems.append(f"{what} in the cache is corrupt (SHA-256 mismatch)")
    return problems


def _fetch_into_cache(folder: str, timeout: float) -> None:
    """Download the GPT-2 files with a bounded timeout; raise on any failure."""
    import requests  # tiktoken depends on requests, so it is always installed

    os.makedirs(folder, exist_ok=True)
    for _what, url, sha in _GPT2_FILES:
        path = _cache_path(folder, url)
        if _file_is_valid(path, sha):
            continue
        response = requests.get(url, timeout=(timeout, timeout))
        response.raise_for_status()
        data = response.content
        if hashlib.sha256(data).hexdigest() != sha:
            raise ValueError(f"downloaded {url} does not match its SHA-256")
        tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)


# --- the fallback -------------------------------------------------------------------------
# Words with their leading space, runs of digits, runs of punctuation, whitespace: the shape of
# GPT-2's pre-tokenizer without its Unicode classes. Ids come from a stable hash of the piece,
# so the same piece always gets the same id, below GPT-2's end-of-text id.
_FALLBACK_SPLIT = re.compile(
    r"""'(?:s|t|re|ve|m|ll|d)| ?[^\W\d_]+| ?\d+| ?[^\s\w]+|_+|\s+(?!\S)|\s+""", re.UNICODE
)


class FallbackEncoding:
    """A word-level tokenizer that needs no download; ids are a stable hash of each piece."""

    name = "fallback"
    n_vocab = GPT2_VOCAB_SIZE

    @staticmethod
    def _id_for(piece: bytes) -> int:
        digest = hashlib.blake2b(piece, digest_size=8).digest()
        return int.from_bytes(digest, "big") % GPT2_EOT

    def encode_pieces(self, text: str) -> list[tuple[int, bytes]]:
        out: list[tuple[int, bytes]] = []
        for k, part in enumerate(text.split(ENDOFTEXT)):
            if k:
                out.append((GPT2_EOT, ENDOFTEXT.encode()))
            for m in _FALLBACK_SPLIT.finditer(part):
                piece = m.group(0).encode("utf-8", "replace")
                out.append((self._id_for(piece), piece))
        return out


@dataclass(frozen=True)
class Tokenizer:
    """A loaded tokenizer and its status. Shared by every session: never mutated."""

    encoding: Any = field(repr=False)  # tiktoken's Encoding or FallbackEncoding
    status: TokenizerStatus

    def encode_pieces(self, text: str, limit: int | None = None) -> tuple[int, list]:
        """(number of tokens in ``text``, the first ``limit`` of them as (id, bytes) pairs)."""
        if isinstance(self.encoding, FallbackEncoding):
            pairs = self.encoding.encode_pieces(text)
            return len(pairs), pairs[:limit]
        # A typed <|endoftext|> becomes the special token 50256, as the book's data pipeline
        # does; tiktoken raises on it unless it is allowed.
        ids = self.encoding.encode(text, allowed_special={ENDOFTEXT})
        return len(ids), [(i, self.encoding.decode_single_token_bytes(i)) for i in ids[:limit]]

    def encode(self, text: str) -> list[int]:
        return [i for i, _ in self.encode_pieces(text)[1]]


def load_tokenizer(*, allow_network: bool = True, timeout: float = NETWORK_TIMEOUT_S) -> Tokenizer:
    """Load GPT-2's tokenizer: cache first, then the network (bounded), then the fallback."""
    folder = cache_dir()
    problems = cache_problems(folder)
    source = "cache"
    if problems and allow_network:
        try:
            _fetch_into_cache(folder, timeout)
            problems, source = cache_problems(folder), "network"
        except Exception as exc:  # any network or disk failure means fallback
            problems.append(f"download failed ({type(exc).__name__})")
    if not problems:
        try:
            import tiktoken

            encoding = tiktoken.get_encoding("gpt2")
            where = "read from the local cache" if source == "cache" else "downloaded"
            status = TokenizerStatus(
                "gpt2", True, source, f"a vocabulary of {encoding.n_vocab:,} tokens, {where}."
            )
            return Tokenizer(encoding, status)
        except Exception as exc:
            problems.append(f"tiktoken failed to load ({type(exc).__name__})")
    detail = (
        "GPT-2's vocabulary could not be loaded ("
        + "; ".join(problems)
        + "), so tokens are split into words by a fallback tokenizer and their ids are hashes, "
        "not GPT-2's."
    )
    return Tokenizer(FallbackEncoding(), TokenizerStatus("fallback", False, "unavailable", detail))


_TOKENIZER: Tokenizer | None = None
_TOKENIZER_LOCK = threading.Lock()


def get_tokenizer() -> Tokenizer:
    """The process's tokenizer, loaded once (the first caller loads, the others wait)."""
    global _TOKENIZER
    if _TOKENIZER is None:
        with _TOKENIZER_LOCK:
            if _TOKENIZER is None:
                _TOKENIZER = load_tokenizer()
    return _TOKENIZER


# --- display ------------------------------------------------------------------------------
_CONTROL_PICTURES = {c: chr(0x2400 + c) for c in range(0x20)} | {0x7F: "\u2421"}


def _visible(text: str) -> str:
    """Make whitespace and control characters visible: ␣ for a space, ↵ for a newline."""
    out = []
    for ch in text:
        code = ord(ch)
        if ch == " ":
            out.append("\u2423")  # ␣
        elif ch == "\n":
            out.append("\u21b5")  # ↵
        elif ch == "\t":
            out.append("\u21e5")  # ⇥
        elif code in _CONTROL_PICTURES:
            out.append(_CONTROL_PICTURES[code])
        elif (
            unicodedata.category(ch)[0] == "C"
            or unicodedata.category(ch) in ("Zl", "Zp")
            or 0xFE00 <= code <= 0xFE0F  # variation selectors: invisible on their own
            or 0xE0100 <= code <= 0xE01EF
        ):
            # Invisible format characters (ZWJ, bidi overrides, ...) would hide or reorder the
            # label around them: name them instead.
            out.append(f"⟨U+{code:04X}⟩")
        else:
            out.append(ch)
    return "".join(out)


def piece_display(piece: bytes) -> str:
    """A token's bytes as text a student can read; bytes that are only part of a UTF-8
    character are shown in hex, e.g. ``⟨E2 80⟩``; a combining mark that starts a token is shown
    on a dotted circle (◌́), so it does not land on the label's position number."""
    text = _piece_text(piece)
    if text and unicodedata.category(text[0]).startswith("M"):
        text = "\u25cc" + text
    return text


def _piece_text(piece: bytes) -> str:
    out = []
    i = 0
    while i < len(piece):
        try:
            out.append(_visible(piece[i:].decode("utf-8")))
            break
        except UnicodeDecodeError as err:
            if err.start:
                out.append(_visible(piece[i : i + err.start].decode("utf-8")))
            bad = piece[i + err.start : i + err.end]
            out.append("\u27e8" + " ".join(f"{b:02X}" for b in bad) + "\u27e9")
            i += err.end
    return "".join(out)


def _is_complete_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def group_characters(pieces: tuple[bytes, ...]) -> tuple[tuple[int, ...], ...]:
    """Group consecutive token positions whose bytes only together form whole characters."""
    groups: list[tuple[int, ...]] = []
    start = 0
    buffer = b""
    for i, piece in enumerate(pieces):
        buffer += piece
        if _is_complete_utf8(buffer):
            groups.append(tuple(range(start, i + 1)))
            start, buffer = i + 1, b""
    if start < len(pieces):  # trailing bytes that never complete a character
        groups.append(tuple(range(start, len(pieces))))
    return tuple(groups)


@dataclass(frozen=True)
class Tokens:
    """The tokens of one text: ids, raw bytes, and display labels (0-based)."""

    ids: tuple[int, ...]
    pieces: tuple[bytes, ...]
    tokenizer: str
    total: int  # tokens before the cap
    cap: int

    @property
    def truncated(self) -> bool:
        return self.total > len(self.ids)

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def displays(self) -> tuple[str, ...]:
        return tuple(piece_display(p) for p in self.pieces)

    @property
    def labels(self) -> tuple[str, ...]:
        """One unique label per position, ``"3: ␣the"``: raw text, escape it before Plotly."""
        return tuple(f"{i}: {d}" for i, d in enumerate(self.displays))

    @property
    def char_groups(self) -> tuple[tuple[int, ...], ...]:
        return group_characters(self.pieces)

    def table_rows(self) -> list[dict]:
        """Rows for the token table: position, id, piece, and the character it helps form."""
        rows = []
        displays = self.displays  # once: each call decodes every piece again
        for group in self.char_groups:
            joined = b"".join(self.pieces[i] for i in group)
            together = piece_display(joined) if len(group) > 1 else ""
            for i in group:
                rows.append(
                    {
                        "position": i,
                        "id": self.ids[i],
                        "piece": displays[i],
                        "bytes": self.pieces[i].hex(" ").upper(),
                        "forms": together,
                    }
                )
        return rows

    def cap_message(self) -> str | None:
        if not self.truncated:
            return None
        return (
            f"The text has {self.total:,} tokens; attnviz uses the first {self.cap:,} "
            f"(the token cap is {self.cap:,})."
        )


def tokenize(text: str, cap: int | None = None, tokenizer: Tokenizer | None = None) -> Tokens:
    """Tokenize ``text`` and keep at most ``cap`` tokens (``None``: keep all)."""
    tok = tokenizer or get_tokenizer()
    total, kept = tok.encode_pieces(text, cap)
    return Tokens(
        tuple(i for i, _ in kept),
        tuple(p for _, p in kept),
        tok.status.name,
        total,
        total if cap is None else cap,
    )
