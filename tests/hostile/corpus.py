"""The hostile input corpus: what a student (or a link a student was sent) may throw at attnviz.

Each :class:`Case` says how the input arrives (the URL, the sidebar text area as a browser would
send it, a client that sends more than a browser would, or session state) and what a student
must then see on every page:

- ``"charts"``: the page draws its figures;
- ``"empty"``: the "There is no text to attend over" notice, and no figures;
- ``"url_warning"``: one warning naming each rejected key (listed in ``warned``), and the page
  drawn from the defaults;
- ``"heads"``: ``d_out`` is not divisible by the heads: an error on the multi-head page only,
  figures everywhere else.

Every URL in the corpus points at the loopback canary server: ``{canary}`` stands for its origin
(``http://127.0.0.1:<port>``) and is filled in by :meth:`Case.resolve`. Nothing in the app may
ever fetch it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

TEXT_MAX_CHARS = 2000  # ui.state.TEXT_MAX_CHARS, restated: the corpus is data, not app code
TOKEN_CAP = 256  # Settings.max_tokens

# Texts whose pieces would be live Markdown or HTML if they ever reached a Markdown element.
HTML_TEXT = "<b>bold</b> and <i>it</i> & &lt;b&gt;"
SCRIPT_TEXT = "<script>alert(1)</script>"
IMG_TEXT = "<img src={canary}/img.png onerror=alert(1)>"
MD_IMAGE_TEXT = "![x]({canary}/md.png)"
MD_LINK_TEXT = "[link]({canary}/link)"
MARKDOWN_TEXT = "**bold** _it_ `code` # heading :red[red] $x^2$ <{canary}/autolink> ---"


@dataclass(frozen=True)
class Case:
    id: str
    # URL query parameters as (key, value) pairs; a key may repeat.
    query: tuple[tuple[str, str], ...] = ()
    # Text sent through the sidebar's text area after the first run:
    typed: str | None = None  # as a browser sends it (AppTest ``.input``)
    forced: str | None = None  # set on the widget directly (``.set_value``)
    session: tuple[tuple[str, object], ...] = ()  # set in session state before the first run
    expect: str = "charts"
    warned: tuple[str, ...] = ()  # keys the URL warning must name
    warned_text: tuple[str, ...] = ()  # and other words it must say
    # Text typed by the student whose Markdown/HTML must stay literal wherever it is shown.
    literal: tuple[str, ...] = ()
    # The text the sidebar must end up holding (None: not checked).
    text_after: str | None = None
    # Info messages (substrings) that must show.
    infos: tuple[str, ...] = ()
    # Warnings (substrings) that must show on every page.
    warns: tuple[str, ...] = ()
    # (url_path, text): a message that must show on that page (info, warning or error).
    shows: tuple[tuple[str, str], ...] = ()
    pages: tuple[str, ...] | None = None  # url_paths this case is limited to (None: all)
    note: str = field(default="", compare=False)

    def resolve(self, canary: str) -> Case:
        """Fill in the canary server's origin everywhere."""

        def fill(v):
            return v.replace("{canary}", canary) if isinstance(v, str) else v

        return replace(
            self,
            query=tuple((fill(k), fill(v)) for k, v in self.query),
            typed=fill(self.typed),
            forced=fill(self.forced),
            session=tuple((k, fill(v)) for k, v in self.session),
            warned=tuple(fill(k) for k in self.warned),
            literal=tuple(fill(t) for t in self.literal),
            text_after=fill(self.text_after),
        )


def _text(case_id: str, text: str, **kw) -> Case:
    """A text given in the URL (the way shared links carry it)."""
    kw.setdefault("literal", (text,))
    kw.setdefault("text_after", text)
    return Case(case_id, query=(("text", text),), **kw)


LONG_PASTE = ("Attention is all you need. " * 4000)[:100_000]
PASTE_CUT = "The text you gave had 100,000 characters: only its first 2,000 are kept."
REPEATED_AT_CAP = "the" + " the" * (TOKEN_CAP - 1)  # exactly 256 tokens
REPEATED_PAST_CAP = "the" + " the" * 399  # 400 tokens: the first 256 are used
XL = (("d_in", "1600"), ("d_out", "1600"), ("heads", "25"), ("ctx", "1024"))

CASES: tuple[Case, ...] = (
    # --- text: empty, tiny, huge ---------------------------------------------------------
    _text("empty", "", expect="empty"),
    # Whitespace is not "no text" to GPT-2: spaces, newlines and tabs are tokens, drawn as
    # visible symbols (␣ ↵ ⇥), never as blank labels.
    _text("whitespace-only", "   \n\t ", note="GPT-2 tokenizes whitespace"),
    _text("one-token", "Hello"),
    _text("one-char", "a"),
    Case(
        "paste-100k-url",
        query=(("text", LONG_PASTE),),
        text_after=LONG_PASTE[:TEXT_MAX_CHARS],
        warns=("The link's text was 100,000 characters long: it was shortened to its first",),
        note="the URL's text is cut to its first 2,000 characters, and a warning says so",
    ),
    Case(
        "paste-100k-typed",
        typed=LONG_PASTE,
        text_after=LONG_PASTE[:TEXT_MAX_CHARS],
        warns=(PASTE_CUT,),
        note="a paste past the limit: the box keeps its first 2,000 characters and says so",
    ),
    Case(
        "paste-100k-forced",
        forced=LONG_PASTE,
        text_after=LONG_PASTE[:TEXT_MAX_CHARS],
        infos=("token cap",),
        warns=(PASTE_CUT,),
        note="a client that sends it all: the server cuts the text to 2,000 characters",
    ),
    Case(
        "paste-100k-session",
        session=(("text", LONG_PASTE),),
        text_after=LONG_PASTE[:TEXT_MAX_CHARS],
        warns=(PASTE_CUT,),
        note="app code writing the text key: cut to 2,000 characters as well",
    ),
    # --- Unicode ---------------------------------------------------------------------------
    _text("emoji", "I ❤️ attention 🤖🎉 so much"),
    _text("zwj", "👩‍👩‍👧‍👦 family, 👨🏽‍💻 coder, 🏳️‍🌈 flag"),
    _text("combining", "e\u0301 cafe\u0301 Z̤̈ͅa̸l̷g̴o̵ n\u0303"),
    _text("rtl", "שלום עולם مرحبا بالعالم hello"),
    _text("bidi-override", "abc \u202edlrow olleh\u202c \u2066iso\u2069 \u200f!"),
    _text("control", "a\x01b\x07c \x1b[31mred\x1b[0m \x7f\x08 \r\n\x0b\x0cend"),
    _text("nul", "before\x00after \x00"),
    _text("lone-surrogate-like", "\ufffd\ufeff\ufffe text \U0010ffff"),
    # --- special-token look-alikes ---------------------------------------------------------
    _text("endoftext", "Hello<|endoftext|>world <|endoftext|>"),
    _text(
        "chat-tokens", "<|im_start|>user hi<|im_end|> <|fim_prefix|>a<|fim_suffix|>b<|fim_middle|>"
    ),
    # --- HTML and Markdown -----------------------------------------------------------------
    Case(
        "html-bold",
        query=(("text", HTML_TEXT), ("text2", "<u>under</u> <s>strike</s> <br> x")),
        literal=(HTML_TEXT, "<u>under</u> <s>strike</s> <br> x"),
        text_after=HTML_TEXT,
    ),
    _text("html-script", SCRIPT_TEXT),
    _text("html-img-canary", IMG_TEXT),
    _text("md-image-canary", MD_IMAGE_TEXT),
    _text("md-link-canary", MD_LINK_TEXT),
    _text("md-syntax", MARKDOWN_TEXT),
    Case(
        "html-typed",
        typed=f"{HTML_TEXT} {MD_IMAGE_TEXT}",
        literal=(f"{HTML_TEXT} {MD_IMAGE_TEXT}",),
        text_after=f"{HTML_TEXT} {MD_IMAGE_TEXT}",
        note="the same text typed into the sidebar instead of given in the URL",
    ),
    # --- tokens that trip up category axes ---------------------------------------------------
    _text("number-like", "1 2 3"),
    _text("number-like-repeated", "1 2 1 2 3.0 1e3 -1 NaN inf"),
    _text("repeated-at-cap", REPEATED_AT_CAP),
    _text("repeated-past-cap", REPEATED_PAST_CAP, infos=("token cap",)),
    Case(
        "text2-hostile",
        query=(("text", "a b"), ("text2", f"{IMG_TEXT} {MD_LINK_TEXT}")),
        literal=(f"{IMG_TEXT} {MD_LINK_TEXT}",),
        text_after="a b",
    ),
    Case(
        "text2-empty",
        query=(("text", "Your journey"), ("text2", "")),
        text_after="Your journey",
    ),
    Case(
        "book-ignores-text",
        query=(("book", "true"), ("text", SCRIPT_TEXT)),
        literal=(SCRIPT_TEXT,),
    ),
    # --- URL parameters ------------------------------------------------------------------------
    Case(
        "url-wrong-types",
        query=(("d_in", "abc"), ("heads", "2.5"), ("bias", "maybe"), ("dropout", "lots")),
        expect="url_warning",
        warned=("d_in", "heads", "bias", "dropout"),
    ),
    Case(
        "url-negative",
        query=(("d_in", "-5"), ("ctx", "-1"), ("heads", "0"), ("dseed", "-7")),
        expect="url_warning",
        warned=("d_in", "ctx", "heads", "dseed"),
    ),
    Case(
        "url-huge",
        query=(
            ("d_out", "1" + "0" * 30),
            ("eseed", "99999999999999999999"),
            ("d_in", "1601"),
            ("dropout", "0.95"),
        ),
        expect="url_warning",
        warned=("d_out", "eseed", "d_in", "dropout"),
    ),
    Case(
        "url-nan-inf",
        query=(("dropout", "nan"), ("d_in", "inf"), ("wseed", "-inf"), ("ctx", "NaN")),
        expect="url_warning",
        warned=("dropout", "d_in", "wseed", "ctx"),
    ),
    Case(
        "url-float-overflow",
        query=(("dropout", "1e309"),),
        expect="url_warning",
        warned=("dropout",),
    ),
    Case(
        "url-unknown-keys",
        query=(("foo", "bar"), ("<script>alert(1)</script>", "1"), ("utm_source", "x")),
        expect="url_warning",
        warned=("foo", "<script>alert(1)</script>", "utm_source"),
        literal=("<script>alert(1)</script>",),
    ),
    Case(
        "url-key-markdown",
        query=(("![k]({canary}/key.png)", "1"),),
        expect="url_warning",
        warned=("![k]({canary}/key.png)",),
        literal=("![k]({canary}/key.png)",),
    ),
    Case(
        "url-empty-name",
        query=(("", "x"), ("=", "y")),
        expect="url_warning",
        warned=("=",),
        warned_text=("a value with no name",),
    ),
    Case(
        "url-repeated",
        query=(("d_in", "4"), ("d_in", "8"), ("text", "a"), ("text", "b")),
        expect="url_warning",
        warned=("d_in", "text"),
    ),
    Case(
        "url-empty-values",
        query=(("d_in", ""), ("bias", ""), ("dropout", " ")),
        expect="url_warning",
        warned=("d_in", "bias", "dropout"),
    ),
    Case(
        "url-mixed",
        query=(("d_in", "8"), ("d_out", "abc"), ("text", "The cat sat on the mat")),
        expect="url_warning",
        warned=("d_out",),
        text_after="The cat sat on the mat",
    ),
    # A page with URL names of its own ("Watch attention learn"): its own check names them.
    Case(
        "page-url-bad",
        query=(
            ("task", "<script>alert(1)</script>"),
            ("k", "-1"),
            ("lheads", "3"),
            ("lr", "nan"),
            ("steps", "1e9"),
            ("lseed", "![s]({canary}/seed.png)"),
        ),
        expect="url_warning",
        warned=("task", "k", "lheads", "lr", "steps", "lseed"),
        literal=("<script>alert(1)</script>", "![s]({canary}/seed.png)"),
        pages=("watch-attention-learn",),
    ),
    Case(
        "page-url-repeated",
        query=(("task", "shift"), ("task", "marked"), ("steps", "")),
        expect="url_warning",
        warned=("task", "steps"),
        pages=("watch-attention-learn",),
    ),
    Case("heads-not-dividing", query=(("d_out", "10"), ("heads", "3")), expect="heads"),
    Case("heads-over-d_out", query=(("d_out", "8"), ("heads", "32")), expect="heads"),
    # --- slider extremes -----------------------------------------------------------------------
    Case("dropout-0-train", query=(("dropout", "0"), ("train", "true"))),
    Case(
        "dropout-0.9-train",
        # page 3's dropout lab and batch opened (ui/sections.py), so the rates reach them
        query=(
            ("dropout", "0.9"),
            ("train", "true"),
            ("dseed", "7"),
            ("heads", "4"),
            ("lab", "true"),
            ("batch", "true"),
        ),
    ),
    Case(
        # Heavy dropout zeroes whole rows; the page then names those tokens in a warning, the
        # one place where token labels go into Markdown.
        "dropout-0.9-html-labels",
        query=(
            ("text", f"{HTML_TEXT} {MD_IMAGE_TEXT}"),
            ("dropout", "0.9"),
            ("train", "true"),
            ("ctx", "64"),
            ("lab", "true"),  # the warning stands in page 3's dropout lab, opened
            ("batch", "true"),
        ),
        literal=(f"{HTML_TEXT} {MD_IMAGE_TEXT}",),
        text_after=f"{HTML_TEXT} {MD_IMAGE_TEXT}",
        shows=(("causal-attention", "Rows that dropped to zero"),),
    ),
    Case("one-head", query=(("heads", "1"), ("d_out", "3"))),
    Case("smallest", query=(("d_in", "1"), ("d_out", "1"), ("heads", "1"), ("ctx", "1"))),
    Case("largest", query=(*XL, ("text", "Hi there"), ("train", "true"), ("dropout", "0.5"))),
)

CASES_BY_ID = {c.id: c for c in CASES}
assert len(CASES_BY_ID) == len(CASES), "case ids must be unique"

# --- what must never show up as live Markdown or HTML ---------------------------------------------
_SYNTAX = re.compile(
    r"<[^<>\n]{1,120}>"  # a tag
    r"|!?\[[^\]\n]*\]\([^)\n]*\)"  # an image or a link
    r"|\*\*[^*\n]+\*\*"  # bold
    r"|`[^`\n]+`"  # code
    r"|:[a-z]+\[[^\]\n]*\]"  # Streamlit colour/badge directives
    r"|\$[^$\n]+\$"  # math
    r"|https?://[^\s)>]+"  # a bare URL (autolinked)
)


def syntax_fragments(text: str) -> set[str]:
    """The pieces of ``text`` that Markdown or HTML would interpret."""
    return {m.group(0) for m in _SYNTAX.finditer(text)}
