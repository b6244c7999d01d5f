"""The shared sidebar: every value lives in the URL under a short, stable name.

``read_url()`` runs before any widget is built: it validates each query parameter, removes the
ones it rejects (so the widgets start from their defaults), and returns one warning naming them.
``sidebar()`` then builds the widgets, bound to the URL with ``bind="query-params"``, and returns
the :class:`Config` every page reads.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import streamlit as st

from attnviz.core import book as BK
from attnviz.core.inputs import BOOK_TEXT
from attnviz.core.settings import BOUNDS, PASS_FIELDS, WEIGHTS, Settings, trained_sizes
from ui import url
from ui.text import md_escape

TEXT_MAX_CHARS = 2000
PRESENT_TEXT_HEIGHT = 68  # px: Streamlit's smallest text area, one line of the presenter's type
DEFAULT_TEXT2 = "Every effort moves you forward"
DEFAULTS = Settings()


@dataclass(frozen=True)
class Field:
    url: str  # the query-parameter name (and widget key)
    label: str
    kind: str  # "text", "int", "float", "bool", "choice"
    default: str | int | float | bool
    setting: str | None = None  # the Settings field it feeds
    help: str = ""
    choices: tuple[str, ...] = ()  # a "choice" field's values, as the URL spells them

    def bounds(self) -> tuple[float, float]:
        """(lowest, highest) of a numeric field (the bounds of the setting it feeds)."""
        if self.setting is None or self.kind not in ("int", "float"):
            raise TypeError(f"{self.url} is not a numeric setting")
        return BOUNDS[self.setting]


HELP = {
    "book": "Use the book's 'Your journey starts with one step' vectors, arguments and seeds.",
    "text": f"At most {TEXT_MAX_CHARS:,} characters: a longer text is cut, and the page says so.",
    "text2": "Batched with the first text on the causal page; both are cut to the shorter one.",
    "d_out": "MultiHeadAttention's d_out; single-head passes use it as the head's width.",
    "ctx": "The causal mask buffer is context_length × context_length.",
    "dropout": "Applied to the attention weights in training mode only.",
    "bias": "Bias terms in W_query, W_key, W_value.",
    "train": "Off: eval mode, where dropout is the identity.",
    "weights": "Random: the chapter's seeded weights. Trained: the weights of a small model "
    "grown on this app's own MultiHeadAttention (page 8), on passes 2–4.",
}
WEIGHT_WORDS = {"random": "the book's", "trained": "page 8's model"}


def _setting(url: str, setting: str, label: str) -> Field:
    """The field that feeds ``Settings.<setting>``: its kind and default are the setting's."""
    default = getattr(DEFAULTS, setting)
    kind = {bool: "bool", int: "int", float: "float"}[type(default)]
    return Field(url, label, kind, default, setting, HELP.get(url, ""))


FIELDS: tuple[Field, ...] = (
    Field(url.BOOK, "Book mode: the chapter's 6×3 inputs", "bool", False, help=HELP["book"]),
    Field(url.TEXT, "Text", "text", BOOK_TEXT, help=HELP["text"]),
    Field(url.TEXT2, "Second text (batch views)", "text", DEFAULT_TEXT2, help=HELP["text2"]),
    _setting(url.D_IN, "d_in", "d_in (embedding width)"),
    _setting(url.D_OUT, "d_out", "d_out (total output width)"),
    _setting(url.HEADS, "num_heads", "num_heads"),
    _setting(url.CTX, "context_length", "context_length"),
    _setting(url.DROPOUT, "dropout", "dropout"),
    _setting(url.ESEED, "seed_embed", "embedding seed"),
    _setting(url.WSEED, "seed_weights", "weight seed"),
    _setting(url.DSEED, "seed_dropout", "dropout seed"),
    _setting(url.BIAS, "qkv_bias", "qkv_bias"),
    _setting(url.TRAIN, "training", "Training mode (dropout active)"),
    Field(
        url.WEIGHTS,
        "Weights on passes 2–4",
        "choice",
        "random",
        "weights",
        HELP["weights"],
        WEIGHTS,
    ),
)
FIELDS_BY_URL = {f.url: f for f in FIELDS}


def parser(f: Field) -> Callable[[str], object]:
    """The function that reads field ``f`` from a link (ui/url.py's parsers): it returns the
    value or raises ValueError with the reason. A text longer than the limit gives its first
    TEXT_MAX_CHARS characters (read_url says it was cut)."""
    if f.kind == "text":
        return url.text(TEXT_MAX_CHARS)
    if f.kind == "choice":
        return url.choice(f.choices, "not " + " or ".join(f.choices))
    if f.kind == "bool":
        return url.parse_bool
    low, high = f.bounds()
    if f.kind == "float":
        return url.number(low, high)
    # The bounds are said with :g, as the sidebar's warning always said them (a seed's
    # highest, 2**31 - 1, reads 2.14748e+09).
    return url.whole(float(low), float(high))


def parse_value(f: Field, raw: str):
    """The value of ``raw`` for field ``f``, or raise ValueError with the reason."""
    return parser(f)(raw)


URL_WARNING_KEY = "_attnviz_url_warning"


def read_url(
    parsers: Mapping[str, Callable[[str], object]] | None = None,
    warning_key: str = URL_WARNING_KEY,
) -> str | None:
    """Check the link's values before the widgets exist; drop what is rejected.

    ``parsers`` maps a query-parameter name to a function that returns its value or raises
    ValueError with the reason (made from ui/url.py's parsers); a function with a true ``many``
    attribute gets the list of the name's values (a range slider's two ends, a multiselect's
    choices), the others one value. Without it, the sidebar's fields are checked and every name
    that neither the sidebar, Streamlit nor a page knows (ui/url.py declares them all) is
    rejected as unknown; with it (a page's own controls), only those names are checked.

    Returns one warning that names every rejected key (or the one waiting from the run that
    dropped them), or None.
    """
    sidebar = parsers is None
    checks = _SIDEBAR_PARSERS if parsers is None else parsers
    params = st.query_params
    # One read of the link's names: each ``name in st.query_params`` for a name the link does
    # not have raises and catches a KeyError inside Streamlit, for each of a page's controls.
    in_link = list(params.keys())
    if sidebar:
        names = [k for k in in_link if k not in url.STREAMLIT and k not in url.PAGE_NAMES]
    else:
        present = set(in_link)
        names = [k for k in checks if k in present]
    rejected = []
    shortened = []
    removed = False
    for key in names:
        parse = checks.get(key)
        if parse is None:
            rejected.append(f"{key} (unknown setting)" if key else "a value with no name")
        else:
            values = params.get_all(key)
            try:
                if getattr(parse, "many", False):  # a list (a range, several choices)
                    many: Callable[[list[str]], object] = parse  # type: ignore[assignment]
                    many(values)
                    continue
                if len(values) != 1:
                    raise ValueError("given more than once")
                value = parse(values[0])
                if isinstance(value, str) and value != values[0]:
                    # A text cut to its limit: the link keeps the part used, and says so,
                    # unless the text came from its box (a paste the browser wrote into the
                    # link): the box's own notice says that once (_clamp_texts).
                    if key not in st.session_state:
                        shortened.append((key, len(values[0]), len(value)))
                    try:
                        params[key] = value
                        removed = True
                    except Exception:  # a key bound by a widget is not rewritten
                        pass
                continue
            except ValueError as err:
                rejected.append(f"{key} ({err})")
        try:
            del params[key]
            removed = True
        except Exception:  # a key already bound by a widget cannot be deleted
            pass
    if not rejected and not shortened:
        return st.session_state.pop(warning_key, None)
    said = []
    if rejected:
        listed = "; ".join(md_escape(r[:80]) for r in rejected)
        said.append(
            "Some values in the link were not understood and the defaults are used instead: "
            f"{listed}."
        )
    for key, given, kept in shortened:
        said.append(
            f"The link's {md_escape(key)} was {given:,} characters long: it was shortened to "
            f"its first {kept:,}."
        )
    warning = " ".join(said)
    if removed:
        # Streamlit seeds bound widgets from the URL as it was when this run started, so a value
        # deleted above would still reach its widget (a 2,001-character text cut to 2,000,
        # d_in=7.5 read as 7). Start again from the cleaned URL; the warning waits in the
        # session. (app.py calls this after st.navigation, so the rerun keeps the page.)
        st.session_state[warning_key] = warning
        st.rerun()
    return warning


_SIDEBAR_PARSERS: dict[str, Callable[[str], object]] = {f.url: parser(f) for f in FIELDS}


@dataclass(frozen=True)
class Config:
    """What the sidebar says, as plain values."""

    settings: Settings
    text: str
    text2: str
    book: bool
    present: bool = False  # presenter mode (ui/teach/present.py): the page shows its stepper

    def trace_args(
        self, kind: str = "multihead", *, random: bool = False
    ) -> tuple[str, Settings, bool]:
        """(text, settings, book) for the caches of pass ``kind``: only the settings that pass
        reads are kept (the rest at their defaults), and book mode ignores the sidebar, so all
        book-mode sessions share one entry. Trained weights (passes 2-4) fix the sizes
        (``Settings.for_pass``); ``random``: the chapter's random weights whatever the switch
        says (the pages past pass 4)."""
        if self.book:
            return ("", DEFAULTS, True)
        settings = self.settings.with_changes(weights="random") if random else self.settings
        return (self.text, settings.for_pass(kind), False)

    def batch_args(self, kind: str = "causal") -> tuple[str, str, Settings, bool]:
        """(text, text2, settings, book) for the batch views."""
        if self.book:
            return ("", "", DEFAULTS, True)
        return (self.text, self.text2, self.settings.for_pass(kind), False)


def _widget(f: Field, disabled: str = "", **extra: Any):
    """The widget for ``f``, bound to its URL name: a toggle, a text box, a slider (the dropout
    rate) or a number box, each with the field's label, default, bounds and help. ``extra``:
    more keyword arguments for it (the presenter's one-line text box: ``height``).
    ``disabled``: why the widget does not apply here; it is then drawn disabled, saying so in
    its help, and keeps its value for the pages where it applies."""
    make: Callable[..., Any]
    own: dict[str, Any]
    if f.kind == "bool":
        make, own = st.toggle, {"value": bool(f.default)}
    elif f.kind == "choice":
        make = st.radio
        own = {
            "options": list(f.choices),
            "index": f.choices.index(str(f.default)),
            "horizontal": True,
            # The URL keeps a radio's option as formatted, so the options are the URL's own
            # words; what each means is said under it.
            "captions": [WEIGHT_WORDS.get(v, "") for v in f.choices],
        }
    elif f.kind == "text":
        # No max_chars: a browser ignores a paste that would pass it, silently. The whole paste
        # arrives instead, and _clamp_texts keeps its first TEXT_MAX_CHARS and says so.
        make = st.text_area if f.url == "text" else st.text_input
        own = {"value": str(f.default)}
        if f.url == "text":
            own["height"] = 90
    else:
        number = float if f.kind == "float" else int
        low, high = f.bounds()
        make = st.slider if f.kind == "float" else st.number_input
        own = {
            "min_value": number(low),
            "max_value": number(high),
            "value": number(f.default),
            "step": 0.05 if f.kind == "float" else 1,
        }
    said = " ".join(filter(None, [disabled, f.help]))
    return make(
        f.label,
        key=f.url,
        help=said or None,
        disabled=bool(disabled),
        bind="query-params",
        **(own | extra),
    )


# text key -> (the text kept, how long the text given was): the notice shows while it is kept.
_CUT_KEY = "_attnviz_text_cut"


def _clamp_texts() -> None:
    """A text longer than the limit (a paste, or app code writing the key) is cut to its first
    TEXT_MAX_CHARS characters before its widget reads it, so no page ever sees more and the
    bound URL never carries more; :func:`cut_notice` then says so while that text stays."""
    cut = st.session_state.setdefault(_CUT_KEY, {})
    for key in ("text", "text2"):
        value = st.session_state.get(key)
        if isinstance(value, str) and len(value) > TEXT_MAX_CHARS:
            st.session_state[key] = value[:TEXT_MAX_CHARS]
            cut[key] = (value[:TEXT_MAX_CHARS], len(value))


def cut_notice(key: str, value: str) -> str | None:
    """The notice for a text that was cut to the limit, while the box still holds what was
    kept of it; None otherwise."""
    kept = st.session_state.get(_CUT_KEY, {}).get(key)
    if kept is None or kept[0] != value:
        return None
    which = "second text" if key == "text2" else "text"
    return (
        f"The {which} you gave had {kept[1]:,} characters: only its first {TEXT_MAX_CHARS:,} "
        "are kept."
    )


def _reads(*passes: str, also: tuple[str, ...] = ()) -> frozenset[str]:
    """The sidebar fields (URL names) a page reads: the book switch, the text, ``also``, and
    every field that feeds a setting these passes read (Settings.for_pass)."""
    names = {name for kind in passes for name in PASS_FIELDS[kind]}
    return frozenset({"book", "text", *also} | {f.url for f in FIELDS if f.setting in names})


# The sidebar fields each page reads, by its url_path ("" is the default page, at "/"). The
# others are gathered at the bottom of the sidebar in a closed "Not used on this page" box:
# still live, since they apply on other pages, but out of the way and said to be unused here.
PAGE_FIELDS: dict[str, frozenset[str]] = {
    "": _reads("simplified"),  # the home page draws X
    "why-attention": _reads("simplified"),
    "simplified-attention": _reads("simplified"),
    "trainable-attention": _reads("trainable"),
    "causal-attention": _reads("causal", also=("text2",)),  # the batch of two texts
    "multi-head-attention": _reads("multihead"),
    # trained weights are for passes 2-4: page 6 keeps the chapter's random ones
    "against-pytorch": _reads("multihead") - {"weights"},
    # GPT-2 fixes the sizes; the sidebar's seeds make the random head beside each trained one.
    "trained-heads": frozenset({"book", "text", "eseed", "wseed"}),
    "watch-attention-learn": frozenset(),  # its own controls, on the page
    "grow-induction-heads": frozenset({"book", "text"}),  # its model fixes its own sizes
    "poll": _reads("multihead"),  # a question on any of the four passes, chosen on the page
    "concept-check": frozenset(),  # questions on the chapter's ideas, not on these numbers
}
NOT_USED_TITLE = "Not used on this page"
NOT_USED_NOTE = (
    "These settings apply on other pages; changing one here changes nothing on this one."
)


def fields_used(page: str | None) -> frozenset[str]:
    """The sidebar fields page ``page`` (a url_path) reads; every field for a page not listed."""
    if page is None or page not in PAGE_FIELDS:
        return frozenset(FIELDS_BY_URL)
    return PAGE_FIELDS[page]


def sidebar(text_box=None, page: str | None = None) -> Config:
    """Build the shared sidebar (once, in app.py) and return the current configuration.

    ``text_box``: presenter mode's container in the main area; the text widget is built
    there instead of in the (hidden) sidebar, still one widget bound to ``text``. ``page``:
    the url_path of the page being run; the fields it does not read go in a closed box below
    the others (:data:`PAGE_FIELDS`)."""
    _clamp_texts()
    present = text_box is not None
    used = fields_used(page)
    with st.sidebar:
        st.header("Settings")
        here = st.container()
        spare = st.container()  # the "not used" box, made when the first field goes in it
        box: list[Any] = []

        def place(url: str):
            """Where field ``url``'s widget goes: with the others, or in the unused box."""
            if url in used:
                return here
            if not box:
                with spare:
                    box.append(st.expander(NOT_USED_TITLE, expanded=False))
                with box[0]:
                    st.caption(NOT_USED_NOTE)
            return box[0]

        fixed: frozenset[str] = frozenset()

        def build(url: str):
            with place(url):
                return _widget(FIELDS_BY_URL[url], TRAINED_FIXES if url in fixed else "")

        book = build("book")
        if book:
            # The controls below do not apply in book mode, so they are not shown at all: the
            # panel lists the values in use. Streamlit keeps a bound widget's value while it is
            # not drawn, so switching book mode off brings the student's values back.
            with place("book"):
                book_panel()
            return dataclasses.replace(BOOK_CONFIG, present=present)
        if text_box is not None:
            with text_box:  # one line high: the projector's screen is for the figure
                text = _widget(
                    FIELDS_BY_URL["text"],
                    height=PRESENT_TEXT_HEIGHT,
                    label_visibility="collapsed",
                )
        else:
            text = build("text")
        text2 = build("text2")
        for key, value in (("text", text), ("text2", text2)):
            notice = cut_notice(key, value)
            if notice:
                with place(key):
                    st.warning(notice)
        weights = str(build("weights"))
        if weights == "trained" and "weights" in used:  # the trained model fixes these here
            fixed = TRAINED_FIXED
        values: dict[str, Any] = {}
        for group, urls in (
            ("Sizes", ("d_in", "d_out", "heads", "ctx")),
            ("Randomness", ("dropout", "eseed", "wseed", "dseed", "bias", "train")),
        ):
            if any(url in used for url in urls):
                with here:
                    st.subheader(group)
                    if group == "Sizes" and weights == "trained" and "weights" in used:
                        st.caption(trained_caption())
            for url in urls:
                f = FIELDS_BY_URL[url]
                values[f.setting or url] = _AS_TYPE[f.kind](build(url))
        if values["dropout"] > 0.2 and "dropout" in used:
            with here:
                st.caption(
                    f"dropout={values['dropout']:.2f} is for illustration: GPT models use 0.1–0.2."
                )
    values["dropout"] = round(values["dropout"], 4)
    return Config(Settings(**values, weights=weights), text, text2, False, present)


# The sidebar fields trained weights fix on passes 2-4 (Settings.for_pass): the sizes, the bias
# and the seeds that draw the embedding and the weights. Drawn disabled there, saying why.
TRAINED_FIXED = frozenset({"d_in", "d_out", "heads", "ctx", "bias", "eseed", "wseed"})
TRAINED_FIXES = "Off with trained weights: the grown model fixes it on passes 2–4."


def trained_caption() -> str:
    """What trained weights fix, said where the size controls are."""
    one, layer = trained_sizes("trainable"), trained_sizes("multihead")
    return (
        "Trained weights fix the sizes on passes 2–4, as the grown model has them: d_in "
        f"{layer['d_in']}, d_out {one['d_out']} (one head, passes 2 and 3) or {layer['d_out']} "
        f"(pass 4), num_heads {layer['num_heads']}, context_length {layer['context_length']}, no "
        "qkv_bias. So the sizes, qkv_bias and the embedding and weight seeds are switched off "
        "here; switch the weights to random to use them."
    )


_AS_TYPE: dict[str, Callable[[Any], Any]] = {"int": int, "float": float, "bool": bool}


# Book mode: the values every page uses, as one Config (the sidebar shows them in a panel).
BOOK_CONFIG = Config(BK.SETTINGS, BOOK_TEXT, BOOK_TEXT, True)
BOOK_PANEL_TITLE = "Book mode: the chapter's arguments"


def book_lines() -> tuple[str, ...]:
    """The chapter's arguments, one Markdown line each (from attnviz/core/book.py)."""
    return (
        "inputs: the chapter's 6×3 tensor, one row per word of “Your journey starts with one "
        "step”; the batch is two copies of it",
        f"d_in = {BK.D_IN}, d_out = {BK.D_OUT}, context_length = {BK.CONTEXT_LENGTH}, "
        f"num_heads = {BK.NUM_HEADS}, qkv_bias = False",
        f"seed {BK.SEED_V1}: SelfAttention_v1, CausalAttention and both multi-head modules; "
        f"seed {BK.SEED_V2}: SelfAttention_v2 and the masking walkthrough",
        f"dropout = {BK.SPEC_CAUSAL.dropout:.1f} in the modules (eval mode); "
        f"{BK.DROPOUT_EXAMPLE_P:.1f} with seed {BK.SEED_DROPOUT} in the dropout example "
        "(section 3.5.2)",
    )


def book_panel() -> None:
    """The values book mode uses, in place of the controls it ignores."""
    with st.container(border=True):
        st.markdown(f"**{BOOK_PANEL_TITLE}**")
        st.markdown("\n".join(f"- {line}" for line in book_lines()))
        st.caption("Turn book mode off to get your own text and settings back.")


def set_sidebar(**values) -> None:
    """Set sidebar values from a button (its ``on_click``): a callback runs before the script,
    so the bound widgets are built with the new values and the URL follows them."""
    for key, value in values.items():
        f = FIELDS_BY_URL[key]  # a name the sidebar does not have is a programming error
        if f.kind in ("int", "float"):
            low, high = f.bounds()
            if not low <= value <= high:
                raise ValueError(f"{key}={value} is outside {low:g}–{high:g}")
        st.session_state[key] = value


def config() -> Config:
    """The configuration app.py built for this run (pages call this)."""
    return st.session_state["_attnviz_config"]
