"""The shared sidebar: every value lives in the URL under a short, stable name.

``read_url()`` runs before any widget is built: it validates each query parameter, removes the
ones it rejects (so the widgets start from their defaults), and returns one warning naming them.
``sidebar()`` then builds the widgets, bound to the URL with ``bind="query-params"``, and returns
the :class:`Config` every page reads.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import streamlit as st

from attnviz import book as B
from attnviz.inputs import BOOK_TEXT
from attnviz.settings import BOOK, BOUNDS, Settings

from .text import md_escape

TEXT_MAX_CHARS = 2000
DEFAULT_TEXT2 = "Every effort moves you forward"
DEFAULTS = Settings()


@dataclass(frozen=True)
class Field:
    url: str  # the query-parameter name (and widget key)
    label: str
    kind: str  # "text", "int", "float", "bool"
    default: str | int | float | bool
    setting: str | None = None  # the Settings field it feeds
    help: str = ""

    def bounds(self) -> tuple[float, float]:
        """(lowest, highest) of a numeric field (the bounds of the setting it feeds)."""
        if self.setting is None:
            raise TypeError(f"{self.url} is not a numeric setting")
        return BOUNDS[self.setting]


FIELDS: tuple[Field, ...] = (
    Field(
        "book",
        "Book mode: the chapter's 6×3 inputs",
        "bool",
        False,
        help="Use the book's 'Your journey starts with one step' vectors, arguments and seeds.",
    ),
    Field("text", "Text", "text", BOOK_TEXT, help=f"At most {TEXT_MAX_CHARS:,} characters."),
    Field(
        "text2",
        "Second text (batch views)",
        "text",
        DEFAULT_TEXT2,
        help="Batched with the first text on the causal page; both are cut to the shorter one.",
    ),
    Field("d_in", "d_in (embedding width)", "int", DEFAULTS.d_in, "d_in"),
    Field(
        "d_out",
        "d_out (total output width)",
        "int",
        DEFAULTS.d_out,
        "d_out",
        help="MultiHeadAttention's d_out; single-head passes use it as the head's width.",
    ),
    Field("heads", "num_heads", "int", DEFAULTS.num_heads, "num_heads"),
    Field(
        "ctx",
        "context_length",
        "int",
        DEFAULTS.context_length,
        "context_length",
        help="The causal mask buffer is context_length × context_length.",
    ),
    Field(
        "dropout",
        "dropout",
        "float",
        DEFAULTS.dropout,
        "dropout",
        help="Applied to the attention weights in training mode only.",
    ),
    Field("eseed", "embedding seed", "int", DEFAULTS.seed_embed, "seed_embed"),
    Field("wseed", "weight seed", "int", DEFAULTS.seed_weights, "seed_weights"),
    Field("dseed", "dropout seed", "int", DEFAULTS.seed_dropout, "seed_dropout"),
    Field(
        "bias", "qkv_bias", "bool", DEFAULTS.qkv_bias, help="Bias terms in W_query, W_key, W_value."
    ),
    Field(
        "train",
        "Training mode (dropout active)",
        "bool",
        DEFAULTS.training,
        help="Off: eval mode, where dropout is the identity.",
    ),
)
FIELDS_BY_URL = {f.url: f for f in FIELDS}

# Streamlit's own query parameters, and the ones pages register for their own controls.
RESERVED = {"embed", "embed_options"}
_PAGE_KEYS: set[str] = set()


def register_page_keys(*keys: str) -> None:
    """Pages with their own URL controls declare them here, so they are not 'unknown'."""
    _PAGE_KEYS.update(keys)


def parse_value(f: Field, raw: str):
    """The value of ``raw`` for field ``f``, or raise ValueError with the reason."""
    if f.kind == "text":
        if len(raw) > TEXT_MAX_CHARS:
            raise ValueError(f"longer than {TEXT_MAX_CHARS:,} characters")
        return raw
    if f.kind == "bool":
        # Only what Streamlit's bound toggle reads from a URL: anything else ("1", "yes") it
        # would drop silently, so it is named in the warning instead.
        word = raw.lower()
        if word == "true":
            return True
        if word == "false":
            return False
        raise ValueError("not true or false")
    try:
        number: float = float(raw.strip()) if f.kind == "float" else int(raw.strip())
    except ValueError:
        raise ValueError(f"not a {'number' if f.kind == 'float' else 'whole number'}") from None
    if f.kind == "float" and not math.isfinite(number):
        raise ValueError("not a finite number")
    low, high = f.bounds()
    if not low <= number <= high:
        raise ValueError(f"outside {low:g}–{high:g}")
    return number


URL_WARNING_KEY = "_attnviz_url_warning"


def read_url(
    parsers: Mapping[str, Callable[[str], object]] | None = None,
    warning_key: str = URL_WARNING_KEY,
) -> str | None:
    """Check the link's values before the widgets exist; drop what is rejected.

    ``parsers`` maps a query-parameter name to a function that returns its value or raises
    ValueError with the reason. Without it, the sidebar's fields are checked and every name
    that neither the sidebar, Streamlit nor a page (:func:`register_page_keys`) knows is
    rejected as unknown; with it (a page's own controls), only those names are checked.

    Returns one warning that names every rejected key (or the one waiting from the run that
    dropped them), or None.
    """
    sidebar = parsers is None
    checks = _SIDEBAR_PARSERS if parsers is None else parsers
    params = st.query_params
    if sidebar:
        names = [k for k in params.keys() if k not in RESERVED and k not in _PAGE_KEYS]
    else:
        names = [k for k in checks if k in params]
    rejected = []
    removed = False
    for key in names:
        parse = checks.get(key)
        if parse is None:
            rejected.append(f"{key} (unknown setting)" if key else "a value with no name")
        else:
            values = params.get_all(key)
            try:
                if len(values) != 1:
                    raise ValueError("given more than once")
                parse(values[0])
                continue
            except ValueError as err:
                rejected.append(f"{key} ({err})")
        try:
            del params[key]
            removed = True
        except Exception:  # noqa: BLE001 - a key already bound by a widget cannot be deleted
            pass
    if not rejected:
        return st.session_state.pop(warning_key, None)
    listed = "; ".join(md_escape(r[:80]) for r in rejected)
    warning = (
        f"Some values in the link were not understood and the defaults are used instead: {listed}."
    )
    if removed:
        # Streamlit seeds bound widgets from the URL as it was when this run started, so a value
        # deleted above would still reach its widget (a 2,001-character text cut to 2,000,
        # d_in=7.5 read as 7). Start again from the cleaned URL; the warning waits in the
        # session. (app.py calls this after st.navigation, so the rerun keeps the page.)
        st.session_state[warning_key] = warning
        st.rerun()
    return warning


_SIDEBAR_PARSERS: dict[str, Callable[[str], object]] = {
    f.url: functools.partial(parse_value, f) for f in FIELDS
}


@dataclass(frozen=True)
class Config:
    """What the sidebar says, as plain values."""

    settings: Settings
    text: str
    text2: str
    book: bool
    present: bool = False  # presenter mode (ui/present.py): the page shows its stepper

    def trace_args(self, kind: str = "multihead") -> tuple[str, Settings, bool]:
        """(text, settings, book) for the caches of pass ``kind``: only the settings that pass
        reads are kept (the rest at their defaults), and book mode ignores the sidebar, so all
        book-mode sessions share one entry."""
        if self.book:
            return ("", DEFAULTS, True)
        return (self.text, self.settings.for_pass(kind), False)

    def batch_args(self, kind: str = "causal") -> tuple[str, str, Settings, bool]:
        """(text, text2, settings, book) for the batch views."""
        if self.book:
            return ("", "", DEFAULTS, True)
        return (self.text, self.text2, self.settings.for_pass(kind), False)


def _widget(f: Field, disabled: bool = False):
    """The widget for ``f``, bound to its URL name."""
    key, help_ = f.url, f.help or None
    if f.kind == "bool":
        return st.toggle(
            f.label,
            value=bool(f.default),
            key=key,
            help=help_,
            disabled=disabled,
            bind="query-params",
        )
    if f.kind == "text":
        if f.url == "text":
            return st.text_area(
                f.label,
                value=str(f.default),
                max_chars=TEXT_MAX_CHARS,
                height=90,
                key=key,
                help=help_,
                disabled=disabled,
                bind="query-params",
            )
        return st.text_input(
            f.label,
            value=str(f.default),
            max_chars=TEXT_MAX_CHARS,
            key=key,
            help=help_,
            disabled=disabled,
            bind="query-params",
        )
    low, high = f.bounds()
    if f.kind == "float":
        return st.slider(
            f.label,
            min_value=float(low),
            max_value=float(high),
            value=float(f.default),
            step=0.05,
            key=key,
            help=help_,
            disabled=disabled,
            bind="query-params",
        )
    return st.number_input(
        f.label,
        min_value=int(low),
        max_value=int(high),
        value=int(f.default),
        step=1,
        key=key,
        help=help_,
        disabled=disabled,
        bind="query-params",
    )


def _clamp_texts() -> None:
    """A text put into session state (not typed: the browser and the server both stop typed
    text at ``max_chars``) is cut to the limit before its widget reads it, so no page ever
    sees more and the bound URL never carries more."""
    for key in ("text", "text2"):
        value = st.session_state.get(key)
        if isinstance(value, str) and len(value) > TEXT_MAX_CHARS:
            st.session_state[key] = value[:TEXT_MAX_CHARS]


def sidebar(text_box=None) -> Config:
    """Build the shared sidebar (once, in app.py) and return the current configuration.

    ``text_box``: presenter mode's container in the main area; the text widget is built
    there instead of in the (hidden) sidebar, still one widget bound to ``text``."""
    _clamp_texts()
    present = text_box is not None
    with st.sidebar:
        st.header("Settings")
        book = _widget(FIELDS_BY_URL["book"])
        if book:
            # The controls below do not apply in book mode, so they are not shown at all: the
            # panel lists the values in use. Streamlit keeps a bound widget's value while it is
            # not drawn, so switching book mode off brings the student's values back.
            book_panel()
            return dataclasses.replace(BOOK_CONFIG, present=present)
        if text_box is not None:
            with text_box:
                text = _widget(FIELDS_BY_URL["text"])
        else:
            text = _widget(FIELDS_BY_URL["text"])
        if len(text) >= TEXT_MAX_CHARS:
            st.warning(
                f"The text reached the {TEXT_MAX_CHARS:,}-character limit; the rest was cut."
            )
        text2 = _widget(FIELDS_BY_URL["text2"])
        st.subheader("Sizes")
        values = {}
        for name in ("d_in", "d_out", "heads", "ctx"):
            f = FIELDS_BY_URL[name]
            values[f.setting] = _widget(f)
        st.subheader("Randomness")
        values["dropout"] = _widget(FIELDS_BY_URL["dropout"])
        for name in ("eseed", "wseed", "dseed"):
            f = FIELDS_BY_URL[name]
            values[f.setting] = _widget(f)
        qkv_bias = _widget(FIELDS_BY_URL["bias"])
        training = _widget(FIELDS_BY_URL["train"])
        if values["dropout"] > 0.2:
            st.caption(
                f"dropout={values['dropout']:.2f} is for illustration: GPT models use 0.1–0.2."
            )
    settings = Settings(
        d_in=int(values["d_in"]),
        d_out=int(values["d_out"]),
        num_heads=int(values["num_heads"]),
        context_length=int(values["context_length"]),
        dropout=round(float(values["dropout"]), 4),
        seed_embed=int(values["seed_embed"]),
        seed_weights=int(values["seed_weights"]),
        seed_dropout=int(values["seed_dropout"]),
        qkv_bias=bool(qkv_bias),
        training=bool(training),
    )
    return Config(settings, text, text2, False, present)


# Book mode: the values every page uses, as one Config (the sidebar shows them in a panel).
BOOK_CONFIG = Config(Settings().with_changes(**BOOK), BOOK_TEXT, BOOK_TEXT, True)
BOOK_PANEL_TITLE = "Book mode: the chapter's arguments"


def book_lines() -> tuple[str, ...]:
    """The chapter's arguments, one Markdown line each (from attnviz/book.py)."""
    return (
        "inputs: the chapter's 6×3 tensor, one row per word of “Your journey starts with one "
        "step”; the batch is two copies of it",
        f"d_in = {B.D_IN}, d_out = {B.D_OUT}, context_length = {B.CONTEXT_LENGTH}, "
        f"num_heads = {B.SPEC_MHA.num_heads}, qkv_bias = False",
        f"seed {B.SEED_V1}: SelfAttention_v1, CausalAttention and both multi-head modules; "
        f"seed {B.SEED_V2}: SelfAttention_v2 and the masking walkthrough",
        f"dropout = {B.SPEC_CAUSAL.dropout:.1f} in the modules (eval mode); "
        f"{B.DROPOUT_EXAMPLE_P:.1f} with seed {B.SEED_DROPOUT} in the dropout example "
        "(section 3.5.2)",
    )


def book_panel() -> None:
    """The values book mode uses, in place of the controls it ignores."""
    with st.container(border=True):
        st.markdown(f"**{BOOK_PANEL_TITLE}**")
        st.markdown("\n".join(f"- {line}" for line in book_lines()))
        st.caption("Turn book mode off to get your own text and settings back.")


def config() -> Config:
    """The configuration app.py built for this run (pages call this)."""
    return st.session_state["_attnviz_config"]
