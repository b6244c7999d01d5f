"""Ask the class: the poll page's three views, and the one way a page opens a poll.

One page (``pages/poll.py``, at ``/poll``) shows, by its link:

- ``/poll`` (where a student lands, the sidebar's "Ask the class" too): a large box for the
  projector's join code, first (a laptop joins by typing it); behind "I'm presenting", the
  presenter's start: a question made from her text and settings (the sidebar's) on a chosen
  pass, and "Ask the class", which opens a poll on it;
- ``/poll?poll=CODE`` (the projector). While the class answers: the code, the join link in
  letters large enough to type from the back of the room, its QR code, how many have answered
  (refreshed every half second, :data:`PROJECTOR_REFRESH`), the spread when the presenter
  shows it. Once answering stops, the answer takes one 1920×1080 screen: the answer, the share
  right per round, the true figure beside the class's answers (a chart, no list repeating it),
  the code and link folded into one small line. The address carries no
  secret, so a projected address bar gives nothing away. In the browser that opened the poll
  (its token, ``ui.classroom.browser_token``, owns the poll in the store; a reload keeps it)
  or the session that holds its secret, the page adds the presenter's controls: "discuss and
  answer again", the reveal, closing, the counts as CSV, the answers refused and the time the
  poll has left. Anywhere else it is the display view alone. An old link with ``secret=S``
  still works: the secret moves into the session and leaves the address at once;
- ``/poll?join=CODE`` (a student's phone): the same question, rebuilt from the presenter's
  text and settings, its answer widgets and "Send my answer"; after the reveal, the key, the
  student's own grade and the true figure. This view never reads a secret. The phone is
  counted by its browser's token, so a reload shows "Your answer ..." again and votes once.

The polls live in ``attnviz.classroom.polls``' store (:func:`store`: in this process, or in Redis with
``ATTNVIZ_REDIS_URL``), whose every operation returns a value or a ``Refused`` with a sentence
for the page, never an exception: a store that is down gives a message, and the lesson pages,
which never touch the store, keep working.
"""

from __future__ import annotations

import functools
import html
import json
import os
import re
import threading
from collections.abc import Callable
from typing import Any

import streamlit as st

from attnviz import figures
from attnviz.classroom import concept_polls, join_address, poll_questions, polls
from attnviz.teach import questions as Q
from ui import cache, charts, state, url
from ui.classroom import browser_token
from ui.text import md_escape

URL_PATH = "poll"
PAGE_FILE = "pages/poll.py"
CONCEPT_PAGE = "pages/concept-check.py"  # a concept check's join code opens there
JOIN, POLL, SECRET = url.JOIN, url.POLL, url.SECRET  # the sidebar's link check leaves them to us

PROJECTOR_REFRESH = 0.5  # seconds: the projector shows an answer about this long after it
PHONE_REFRESH = 5.0  # seconds: a phone notices the next round, the spread or the reveal
QR_WIDTH = 340  # px on the projector
PUBLIC_URL_ENV = join_address.PUBLIC_URL_ENV  # the address phones use, when the presenter's is not
# "true" where a balancer that sets X-Forwarded-For (deploy/haproxy.cfg) is the only way in:
# its last entry is then the client's address, for the store's polls per address.
TRUST_FORWARDED_ENV = "ATTNVIZ_TRUST_FORWARDED_FOR"
STORE_RETRY = 2.0  # seconds: a page that found the store down asks again this often
EXPIRY_CHECK = 60.0  # seconds: the presenter's page looks at the time a poll has left
EXPIRY_WARNING = 30 * 60  # seconds left when the presenter is told to download the counts
JOIN_LINK_PX = 36  # the join link's letters on the projector: typed from the back of a room

PAGE_LABELS = {
    "simplified": "1. Simplified self-attention",
    "trainable": "2. Trainable self-attention",
    "causal": "3. Causal attention and dropout",
    "multihead": "4. Multi-head attention",
}
SECRETS_KEY = "_attnviz_poll_secrets"  # join code -> secret, for polls this session opened
NOTE_KEY = "_attnviz_poll_note"  # (kind, sentence) to show once, after an action
SEED_KEY = "_attnviz_poll_seed"
CODE_KEY = "poll_code"  # the join box
PRESENTING_KEY = "poll_presenting"
PRESENTING_LABEL = "I'm presenting"
ACTIONS = {
    "show": "Show the answers",
    "reask": "Discuss and answer again",
    "reveal": "Reveal the answer",
    "close": "Close the poll",
}


# --- the store --------------------------------------------------------------------------------
_store: polls.PollStore | None = None
_store_lock = threading.Lock()


def store() -> polls.PollStore:
    """This server's poll store, made once per process from the environment."""
    global _store
    with _store_lock:
        if _store is None:
            _store = polls.store_from_env()
        return _store


def use_store(chosen: polls.PollStore | None) -> None:
    """Put ``chosen`` in place of the environment's store (tests); None: make it again."""
    global _store
    with _store_lock:
        _store = chosen


def presenter_key(code: str, from_link: str | None = None) -> str:
    """What this session shows the store to act on poll ``code``: its secret when this session
    opened the poll or came by an old link with ``secret=`` (``from_link``, kept in the session
    from then on), else this browser's token (the store lets the browser that opened the poll
    act on it, a reload included)."""
    held: dict[str, str] = st.session_state.setdefault(SECRETS_KEY, {})
    if from_link and code not in held:  # a secret this session holds is not replaced
        held[code] = from_link
    return held.get(code) or browser_token.token()


def _keep_secret(created: polls.Created) -> None:
    st.session_state.setdefault(SECRETS_KEY, {})[created.code] = created.secret


# --- questions, made once per process ---------------------------------------------------------
def numbers_for(page: str, text: str, settings, book: bool) -> Q.Numbers | None:
    """What a question on ``page`` reads, from the same cached traces the pass page draws
    (``questions.traces_for`` done through ``ui.cache``); None when the page cannot run."""
    if page == "multihead" and settings.multihead_problem() and not book:
        return None
    if cache.prepared(text, settings, book).empty:
        return None
    main = cache.trace(page, text, settings, book)
    lab = None
    if page == "causal" and not book and settings.dropout > 0:
        lab = main if settings.training else cache.trace("causal", text, settings, book, "train")
    return Q.numbers_of(page, main, lab, book)


def question_on(page: str, text: str, settings, book: bool, seed: int) -> Q.Question | None:
    """The presenter's question on ``page`` (``poll_questions.choose``: seed 0 is one a class
    reasons to from its figure), once per process."""

    def build() -> Q.Question | None:
        numbers = numbers_for(page, text, settings, book)
        if numbers is None:
            return None
        return poll_questions.choose(page, text, settings, book, seed, numbers)

    return cache.derived.get(("poll choose", page, text, settings, book, seed), build)


def given_of(question: Q.Question) -> poll_questions.Given:
    """The figure the class answers ``question`` from, and a number's tolerance from it, made
    once per question and shared by the projector and every phone."""

    def build() -> poll_questions.Given:
        q = question
        try:
            numbers = numbers_for(q.page, q.text, q.settings, q.book)
        except (ValueError, TypeError):
            numbers = None
        if numbers is None:
            return poll_questions.Given(None)
        main = None
        if q.kind in (Q.SCORE, Q.SPLIT_SHAPE):
            main = cache.trace(q.page, q.text, q.settings, q.book)
        return poll_questions.given(q, numbers, main)

    key = ("poll given", question.kind, question.page, question.text, question.settings)
    return cache.derived.get((*key, question.book, question.seed), build)


def _given_figure(question: Q.Question | None, *, look=figures.NORMAL) -> None:
    """The question's figure (nothing the question hides), where ``st`` draws now."""
    if question is None:
        return
    figure = given_of(question).figure
    if figure is not None:
        charts.chart(figure, key="poll_given", look=look)


def _plain_key(view) -> tuple[str, str]:
    return (
        json.dumps(view.payload, sort_keys=True),
        json.dumps(view.settings, sort_keys=True),
    )


def question_of(view) -> Q.Question | None:
    """The poll's question made again from what the store gave (a phone's or the
    projector's view), once per process; None when it cannot be made here."""

    def build() -> Q.Question | None:
        args = poll_questions.trace_args(view.settings)
        page = view.payload.get("page")
        if args is None or page not in Q.PAGES:
            return None
        try:
            numbers = numbers_for(str(page), *args)
        except (ValueError, TypeError):
            return None
        if numbers is None:
            return None
        return poll_questions.question_from(view.payload, view.settings, numbers)

    return cache.derived.get(("poll question", *_plain_key(view)), build)


def reveal_figure_of(view, question: Q.Question):
    """The true figure of the poll's question, made once per question and shared."""

    def build():
        args = poll_questions.trace_args(view.settings)
        numbers = None if args is None else numbers_for(question.page, *args)
        return None if numbers is None else poll_questions.reveal_figure(question, numbers)

    return cache.derived.get(("poll figure", *_plain_key(view)), build)


# --- opening a poll (the presenter's step calls this too) --------------------------------------
def open_poll(question: Q.Question) -> polls.Created | polls.Refused:
    """Open a poll on ``question``: its join code and the presenter's secret, or why not."""
    try:
        asked = poll_questions.poll_question(question, given_of(question).tolerance)
    except ValueError as error:
        return polls.Refused("bad_question", f"This question cannot be polled: {error}.")
    created = store().create(asked, owner=browser_token.token(), address=client_address())
    if isinstance(created, polls.Created):
        _keep_secret(created)
    return created


def client_address() -> str | None:
    """This session's network address, for the polls one address may open an hour: the last
    X-Forwarded-For entry (the balancer's own) where ``ATTNVIZ_TRUST_FORWARDED_FOR`` says so,
    else the connection's (None on localhost: a laptop's own presenter is not counted)."""
    if os.environ.get(TRUST_FORWARDED_ENV, "").strip().lower() in ("1", "true", "yes"):
        forwarded = st.context.headers.get_all("X-Forwarded-For")
        if forwarded:
            address = forwarded[-1].split(",")[-1].strip()
            return None if address in ("", "127.0.0.1", "::1") else address  # as Streamlit's
    return st.context.ip_address


def presenter_link(created: polls.Created) -> dict[str, str]:
    """The query parameters of a new poll's projector view: the code, and no secret (the
    session and the browser that opened it hold the controls)."""
    return {POLL: created.code}


def _ask(question: Q.Question) -> None:
    created = open_poll(question)
    if isinstance(created, polls.Refused):
        st.session_state[NOTE_KEY] = ("warning", created.message)
        return
    for name, value in presenter_link(created).items():
        st.query_params[name] = value


def ask_button(question: Q.Question, *, key: str = "poll_ask") -> None:
    """ "Ask the class" for a page that shows ``question`` (the presenter's step): opens the
    poll and takes the presenter to its projector view."""
    if st.button("Ask the class", key=key, icon=":material/groups:"):
        created = open_poll(question)
        if isinstance(created, polls.Refused):
            st.warning(created.message)
            return
        st.switch_page(PAGE_FILE, query_params=presenter_link(created))


# --- the page ---------------------------------------------------------------------------------
_WIDE_CSS = """
<style>
section[data-testid="stSidebar"], div[data-testid="stSidebarCollapsedControl"],
button[data-testid="stExpandSidebarButton"] { display: none !important; }
</style>
"""
_PROJECTOR_CSS = """
<style>
div[data-testid="stMainBlockContainer"] { max-width: 100%; padding-top: 3rem; }
div[data-testid="stMainBlockContainer"] p, div[data-testid="stMainBlockContainer"] li,
div[data-testid="stMainBlockContainer"] label { font-size: 1.4rem; line-height: 1.45; }
div[data-testid="stMainBlockContainer"] [data-testid="stText"] { font-size: 1.3rem; }
div[data-testid="stMainBlockContainer"] h2 { font-size: 4.5rem; letter-spacing: 0.15em; }
div[data-testid="stMainBlockContainer"] h3 { font-size: 2.2rem; }
</style>
"""


def page(cfg: state.Config) -> None:
    """The poll page: a phone's view (``join``), the projector's (``poll`` and ``secret``),
    or, with neither, where a student lands: the join box first, the presenter's "Ask the
    class" behind its own switch."""
    browser_token.keep()
    params = st.query_params
    if JOIN in params:
        st.html(_WIDE_CSS)
        student(params.get(JOIN, ""))
    elif POLL in params:
        st.html(_WIDE_CSS + _PROJECTOR_CSS)
        code = params.get(POLL, "")
        from_link = params.get(SECRET)
        if SECRET in params:  # an old presenter's link: the secret leaves the address bar
            del st.query_params[SECRET]
        projector(code, presenter_key(code, from_link))
    else:
        landing(cfg)


def _note() -> None:
    note = st.session_state.pop(NOTE_KEY, None)
    if note is not None:
        kind, text = note
        {"success": st.success, "warning": st.warning, "info": st.info}[kind](md_escape(text))


def _bad_code(code: str) -> str | None:
    clean = polls.clean_code(code)
    if clean is None:
        st.warning(
            "This is not a join code: a code is six letters and digits, as the projector shows."
        )
    return clean


# --- where a student lands ----------------------------------------------------------------
_JOIN_CSS = """
<style>
.st-key-poll_code input { font-size: 2.6rem; letter-spacing: 0.25em; text-transform: uppercase;
  font-family: "Source Code Pro", monospace; min-height: 4.2rem; }
.st-key-poll_code label p { font-size: 1.15rem; }
.st-key-poll_code { max-width: 34rem; }
</style>
"""
_CODE_IN_LINK = re.compile(r"[?&]join=([A-Za-z0-9]+)")


def code_typed(typed: str) -> str | None:
    """The join code in what a student typed or pasted: the code (any case, spaces or a dash
    inside), or a whole join link; None when it holds no code."""
    found = _CODE_IN_LINK.search(typed)
    raw = found.group(1) if found else re.sub(r"[\s-]", "", typed)
    return polls.clean_code(raw)


def _join() -> None:
    """The join box's callback: a good code opens the phone's view of its poll."""
    typed = str(st.session_state.get(CODE_KEY) or "")
    code = code_typed(typed)
    if code is None:
        st.session_state[NOTE_KEY] = (
            "warning",
            "This is not a join code: a code is six letters and digits, as the projector shows.",
        )
        return
    st.query_params[JOIN] = code


def landing(cfg: state.Config) -> None:
    """``/poll`` with no code: the box a student types the projector's code into, first; the
    presenter's start only behind "I'm presenting"."""
    st.html(_JOIN_CSS)
    st.title("Class poll")
    _note()
    with st.form("poll_join", border=False, enter_to_submit=True):
        st.text_input(
            "Type the code on the projector",
            key=CODE_KEY,
            max_chars=64,
            placeholder="K7QX2M",
            autocomplete="off",
        )
        st.form_submit_button("Join", type="primary", icon=":material/login:", on_click=_join)
    st.caption("Or scan the QR code on the projector, or open the link printed under it.")
    st.divider()
    if st.toggle(
        PRESENTING_LABEL,
        key=PRESENTING_KEY,
        help="Pick a question on your text and settings, then open a poll on it for the class.",
    ):
        start(cfg)


# --- before asking --------------------------------------------------------------------------
def start(cfg: state.Config) -> None:
    st.subheader("Ask the class")
    st.write(
        "Every student answers the same question on a phone, on your text and settings; the "
        "projector counts the answers, shows the spread when you choose, asks again after a "
        "discussion, then reveals the answer with the true figure."
    )
    st.page_link(
        CONCEPT_PAGE,
        label=(
            f"Or the concept check: {concept_polls.ITEM_COUNT} questions on the chapter's "
            "ideas, before and after the lesson"
        ),
        icon=":material/fact_check:",
    )
    _note()
    page_name = st.selectbox(
        "A question from",
        list(PAGE_LABELS),
        index=2,
        format_func=PAGE_LABELS.__getitem__,
        key="poll_from",
    )
    seed = int(st.session_state.get(SEED_KEY, 0))
    args = cfg.trace_args(page_name)
    question = question_on(page_name, *args, seed)
    if question is None:
        st.info(
            "No question is clear at these settings on this pass: try another pass, another "
            "text or other sizes in the settings."
        )
        return
    st.subheader("The question")
    st.markdown(md_escape(question.prompt))
    _given_figure(question)
    if question.answer_format in (Q.TOKEN, Q.CHOICE, Q.SHAPE):
        try:
            options = poll_questions.answer_format(question)
        except ValueError as error:
            st.info(md_escape(f"This question cannot be polled: {error}."))
            return
        if isinstance(options, polls.Choice):
            st.caption("Choices: " + md_escape(" · ".join(options.options)))
    left, right = st.columns(2)
    with left:
        if st.button("Another question", key="poll_another"):
            st.session_state[SEED_KEY] = seed + 1
            st.rerun()
    with right:
        st.button(
            "Ask the class",
            key="poll_open",
            type="primary",
            icon=":material/groups:",
            on_click=_ask,
            args=(question,),
        )
    st.caption(
        "The projector's link that opens carries the poll's secret: only it can show the "
        "answers, ask again, reveal and close. Students get the join link."
    )


# --- the projector ------------------------------------------------------------------------
def join_link(code: str) -> str:
    """The link a phone opens: this app's address as the presenter's browser sees it (or
    ``ATTNVIZ_PUBLIC_URL``, given http:// when it has no scheme), then ``/poll?join=CODE``;
    just the path when neither is known (:func:`join_problem` says so)."""
    base, _ = join_address.join_base(os.environ.get(PUBLIC_URL_ENV, ""), st.context.url or "")
    return f"{base}/{URL_PATH}?{JOIN}={code}"


def join_problem() -> str | None:
    """Why the join link will not work from a phone (a localhost address, an
    ``ATTNVIZ_PUBLIC_URL`` without a scheme, no address), for the presenter; None when fine."""
    return join_address.join_base(os.environ.get(PUBLIC_URL_ENV, ""), st.context.url or "")[1]


def _qr(link: str, width: int = QR_WIDTH) -> None:
    from attnviz.classroom.qr import qr_svg

    try:
        st.image(qr_svg(link), width=width)
    except ValueError:  # no address to encode (a relative link): the code is enough
        pass


def join_block(code: str, link: str, *, qr: bool = True) -> None:
    """While the class answers: the code, the join link in letters large enough to type from
    the back of the room (JOIN_LINK_PX), and the link's QR code (``qr``: folded away once the
    spread is shown, to leave its room to the class's answers)."""
    st.markdown("Join with the code")
    st.markdown(f"## {code}")
    st.html(
        f'<div class="attnviz-join-link" style="font-size: {JOIN_LINK_PX}px; '
        "font-family: 'Source Code Pro', monospace; line-height: 1.25; "
        f'overflow-wrap: anywhere; font-weight: 600">{html.escape(link)}</div>'
    )
    if qr:
        _qr(link)


def _join_folded(code: str, link: str) -> None:
    """Once answering has stopped: the code and link in one small line, the QR code folded."""
    st.caption(md_escape(f"Poll {code} · students joined at {link}"))


def projector(code: str, secret: str) -> None:
    code = _bad_code(code) or ""
    if not code:
        st.title("Ask the class")
        return
    view = projector_view(code, secret)
    if isinstance(view, polls.Refused):
        st.title("Ask the class")
        _note()
        _refused(view)
        if view.reason == "unavailable":
            _store_back()
        return
    if concept_polls.is_concept_check(view.payload):  # its own page draws it
        st.switch_page(CONCEPT_PAGE, query_params={POLL: code})
    question = question_of(view)
    link = join_link(code)
    if view.state.phase != "open":  # answering has stopped: the answer takes the screen
        _join_folded(code, link)
        _note()
        _stopped(view, question)
        _controls(code, secret, view)
        return
    st.title("Ask the class")
    _note()
    # Left, the way in and the class's answers; right, the question and its figure.
    left, right = st.columns([2, 3], gap="large")
    with left:
        join_block(code, link, qr=not view.state.shown)
        _live(code, secret, view.state)
    with right:
        st.markdown(md_escape(str(view.payload.get("prompt", ""))))
        if question is None:
            _cannot_make()
        _given_figure(question, look=poll_questions.POLL_LOOK)
    _controls(code, secret, view)


def _cannot_make() -> None:
    st.warning(
        "This server cannot make this poll's question again (another version wrote it, or its "
        "settings do not run here); phones on it cannot answer."
    )


def projector_view(code: str, secret: str) -> polls.PresenterView | polls.Refused:
    """The presenter's view when ``secret`` (:func:`presenter_key`) opens the poll, else the
    display view (``view.display``: no controls, no count before it is shown)."""
    view = store().presenter_view(code, secret)
    if isinstance(view, polls.Refused) and view.reason == "not_allowed":
        return store().display_view(code)
    return view


@st.fragment(run_every=STORE_RETRY)
def _store_back() -> None:
    """While the store is down: ask it again every STORE_RETRY seconds, and run the whole page
    again once it answers (the poll, or what became of it, instead of a stuck warning)."""
    if store().available():
        st.rerun()


def refusal_message(refused: polls.Refused) -> None:
    """A store's refusal as a page says it: the store down is a warning, a wrong key an
    error, the rest info."""
    if refused.reason == "unavailable":
        st.warning(md_escape(refused.message))
    elif refused.reason == "not_allowed":
        st.error(md_escape(refused.message))
    else:
        st.info(md_escape(refused.message))


def _refused(refused: polls.Refused, presenter: bool = True) -> None:
    """A store's refusal as the page says it (:func:`refusal_message`); the presenter is
    offered a new poll."""
    refusal_message(refused)
    if presenter and refused.reason in ("unknown", "closed", "unavailable"):
        st.page_link(PAGE_FILE, label="Start a new poll", icon=":material/add:")


@st.fragment(run_every=PROJECTOR_REFRESH)
def _live(code: str, secret: str, drawn: polls.PollState) -> None:
    """The projector's live part, run every PROJECTOR_REFRESH seconds on its own: one read of
    the store."""
    view = projector_view(code, secret)
    if isinstance(view, polls.Refused):
        _refused(view)
        return
    if view.state != drawn:  # another device of the presenter's moved the poll on
        st.rerun()
    _tally(view, question_of(view))
    _refusals(view)


def _refusals(view: polls.PresenterView) -> None:
    """The presenter is told how many answers the poll refused, and why."""
    refused = view.refused
    if view.display or not refused.total:
        return
    limits = store().limits
    parts = []
    if refused.crowded:
        parts.append(
            f"{refused.crowded} from new browsers arriving faster than a class joins "
            f"({limits.join_burst} at once, then {limits.joins_per_minute} a minute)"
        )
    if refused.too_fast:
        parts.append(
            f"{refused.too_fast} from browsers sending more than "
            f"{limits.sends_per_minute} answers a minute"
        )
    if refused.full:
        parts.append(f"{refused.full} after a round held {limits.max_answers} answers")
    total = refused.total
    st.warning(
        f"{total} answer{'s' if total != 1 else ''} refused: "
        + "; ".join(parts)
        + ". More answers than students may mean someone is scripting answers."
    )


def _tally(view: polls.PresenterView, question: Q.Question | None) -> None:
    """While answering: how many answered (every round), and the spread when shown."""
    last = view.rounds[-1] if view.rounds else None
    if last is not None:
        st.markdown(f"### {poll_questions.answered_line(last)}")
        if len(view.rounds) > 1:
            st.caption(" · ".join(poll_questions.answered_line(t) for t in view.rounds[:-1]))
    if not view.state.shown:
        st.caption("The answers stay hidden until you show them.")
        return
    _tally_of(view, question, view.rounds[-1:])


def _tally_of(
    view: polls.PresenterView, question: Q.Question | None, rounds: tuple[polls.RoundTally, ...]
) -> None:
    labels = question.choices if question is not None else ()
    chart = _tally_chart(view.answer, rounds, view.key, tuple(labels), True)
    if chart is not None:
        charts.send(chart, key="poll_tally")


@functools.lru_cache(maxsize=256)
def _tally_chart(form, rounds, key, labels, projector: bool = False) -> tuple[str, int, str] | None:
    """The tally's chart, encoded once per distinct tally (a projector redraws it twice a
    second; most of those runs see the same counts); ``projector``: at its sizes."""
    chart = poll_questions.tally_chart(form, rounds, key, labels)
    if chart is not None and projector:
        chart = poll_questions.projected(chart)
    return None if chart is None else charts.encode(chart.spec, chart.label)


def _act(action: str, code: str, secret: str, note_key: str) -> None:
    result = getattr(store(), action)(code, secret)
    if isinstance(result, polls.Refused):
        st.session_state[note_key] = ("warning", result.message)


def control_row(
    code: str,
    secret: str,
    actions: dict[str, str],
    disabled: dict[str, bool],
    *,
    prefix: str,
    primary: tuple[str, ...],
    note_key: str,
    csv: tuple[str, Callable[[str, str], str], str],
    csv_ready: bool = True,
) -> None:
    """The presenter's row of controls (the poll's, the concept check's): one button per store
    action (``actions``: the store's method and its label; a refusal is kept under
    ``note_key`` for the page to say once), then ``csv``: (its label, ``data(code, secret)``
    giving the text, the file's name), downloadable once ``csv_ready``."""
    columns = st.columns(len(actions) + 1)
    for column, (action, label) in zip(columns, actions.items(), strict=False):
        with column:
            st.button(
                label,
                key=f"{prefix}_{action}",
                disabled=disabled[action],
                type="primary" if action in primary else "secondary",
                width="stretch",
                on_click=_act,
                args=(action, code, secret, note_key),
            )
    label, data, file_name = csv
    with columns[-1]:
        st.download_button(
            label,
            data=functools.partial(data, code, secret),
            file_name=file_name,
            mime="text/csv",
            on_click="ignore",
            key=f"{prefix}_csv",
            width="stretch",
            disabled=not csv_ready,
        )


def _controls(code: str, secret: str, view: polls.PresenterView) -> None:
    if view.display:
        st.caption(
            "This is the poll's display: its controls are in the presenter's browser, the "
            "one that opened the poll."
        )
        return
    problem = join_problem()
    if problem:
        st.warning(md_escape(problem))
    if view.state.phase != "open":  # while open the live part says it, refreshed
        _refusals(view)
    _expiry(code, secret)
    s = view.state
    disabled = {
        "show": s.phase != "open" or s.shown,
        "reask": s.phase != "open" or s.round >= polls.ROUNDS[-1],
        "reveal": s.phase != "open",
        "close": s.phase == "closed",
    }
    control_row(
        code,
        secret,
        ACTIONS,
        disabled,
        prefix="poll",
        primary=("reveal",),
        note_key=NOTE_KEY,
        csv=("Counts (CSV)", _csv, f"poll-{code}.csv"),
    )


@st.fragment(run_every=EXPIRY_CHECK)
def _expiry(code: str, secret: str) -> None:
    """The presenter is warned, EXPIRY_WARNING before, that the poll and its counts vanish."""
    view = store().presenter_view(code, secret)
    left = None if isinstance(view, polls.Refused) else view.expires_in
    if left is not None and left <= EXPIRY_WARNING:
        minutes = max(1, round(left / 60))
        hours = store().limits.ttl_seconds / 3600
        st.warning(
            f"This poll and its counts vanish in about {minutes} minute"
            f"{'s' if minutes != 1 else ''} (polls last {hours:g} hours): download the counts "
            "(CSV) now if you want to keep them."
        )


def _csv(code: str, secret: str) -> str:
    made = store().csv(code, secret)
    return made.message if isinstance(made, polls.Refused) else made


def _stopped(view: polls.PresenterView, question: Q.Question | None) -> None:
    """Answering has stopped (revealed, or closed): on one 1920×1080 screen, top down, the
    question, the answer and the share right in each round, then the true figure beside the
    class's answers and why the key is right, then what each misconception's answers mean."""
    st.markdown(md_escape(str(view.payload.get("prompt", ""))))
    if question is None:
        _cannot_make()
    revealed = view.key is not None
    if revealed:
        st.subheader(md_escape(f"The answer: {view.key_label}"))
        shares = poll_questions.share_lines(view)
        if shares:
            st.markdown(f"### {md_escape(' · '.join(shares))}")
    else:
        st.subheader("The poll was closed before the answer was revealed.")
        st.markdown(f"### {' · '.join(poll_questions.answered_line(t) for t in view.rounds)}")
    figure = None
    if revealed and question is not None:
        figure = reveal_figure_of(view, question)
    answered = any(t.answered for t in view.rounds)
    if figure is not None and answered:
        left, right = st.columns([3, 2], gap="large")
        with left:
            charts.chart(figure, key="poll_figure", look=poll_questions.POLL_LOOK)
        with right:
            _tally_of(view, question, view.rounds)
            _why(view, question)  # under the class's answers: the figure keeps its place
    elif figure is not None:
        charts.chart(figure, key="poll_figure", look=poll_questions.POLL_LOOK)
        st.caption("No one answered.")
        _why(view, question)
    else:
        if answered:
            _tally_of(view, question, view.rounds)
        _why(view, question)
    for line in poll_questions.misconception_lines(view):
        st.markdown(md_escape(line))


def why_line(view, question: Q.Question | None) -> str | None:
    """After the reveal: why the key is right, the sentence Predict first shows under its
    verdict (``Question.reason``, made from the poll's own numbers: the question is made
    again from the poll's text and settings); None before the reveal or without one."""
    if view.key is None or question is None or not question.reason:
        return None
    return "Why: " + question.reason


def _why(view, question: Q.Question | None) -> None:
    line = why_line(view, question)
    if line is not None:
        st.markdown(md_escape(line))


# --- a phone -------------------------------------------------------------------------------
def student(code: str) -> None:
    st.title("Class poll")
    code = _bad_code(code) or ""
    if not code:
        return
    view = store().student_view(code, browser_token.token())
    if isinstance(view, polls.Refused):
        _refused(view, presenter=False)
        _watch(code, view.reason)
        return
    if concept_polls.is_concept_check(view.payload):  # its own page asks it
        st.switch_page(CONCEPT_PAGE, query_params={JOIN: code})
    question = question_of(view)
    if question is None:
        st.error(
            "This poll's question cannot be made on this server (another version wrote it, or "
            "its settings do not run here)."
        )
        return
    st.caption(md_escape(f"Poll {code} · the presenter's text: {question.text or '(book mode)'}"))
    st.markdown(md_escape(question.prompt))
    s = view.state
    if s.phase == "open":
        _given_figure(question)
        if s.round > 1:
            st.info("Round 2: talk it over with the students next to you, then answer again.")
        _answering(code, s, view.answer, question)
    else:
        _note()
    if view.tally and s.phase == "open":
        labels = tuple(question.choices)
        chart = _tally_chart(view.answer, view.tally[-1:], None, labels)
        if chart is not None:
            st.caption("The class's answers so far")
            charts.send(chart, key="poll_tally")
    if view.key is not None:
        _graded(view, question)
    _watch(code, s)


@st.fragment
def _answering(
    code: str, drawn: polls.PollState, form: polls.AnswerFormat, question: Q.Question
) -> None:
    """The phone's answer and its form, a fragment of its own: sending an answer reruns this
    part only (about a third of a full run's CPU), with one read of the store."""
    view = store().student_view(code, browser_token.token())
    if isinstance(view, polls.Refused) or view.state != drawn:
        st.rerun()  # the poll moved on (or the store went away): the whole page again
        return
    _note()
    if view.your_answer is not None:
        st.success(
            md_escape(
                f"Your answer in round {drawn.round}: {form.label(view.your_answer)}. "
                "You can change it until the presenter moves on."
            )
        )
    _answer_form(code, drawn.round, form, question)


def _answer_keys(code: str, round_: int, n: int = 1) -> list[str]:
    return [f"poll_{code}_r{round_}_{i}" for i in range(n)]


def _answer_form(code: str, round_: int, form: polls.AnswerFormat, question: Q.Question) -> None:
    with st.form(key=f"poll_form_{code}_{round_}", border=False):
        if isinstance(form, polls.Choice):
            (k,) = _answer_keys(code, round_)
            st.radio(
                "Your answer",
                range(len(form.options)),
                index=None,
                format_func=lambda i: md_escape(form.options[i]),
                key=k,
            )
            keys = [k]
        elif isinstance(form, polls.Number):
            (k,) = _answer_keys(code, round_)
            whole = form.decimals == 0
            near = f", right within ±{form.tolerance:.2f}" if form.tolerance else ""
            st.number_input(
                "Your answer" + ("" if whole else f" ({form.decimals} decimals{near})"),
                min_value=int(form.lo) if whole else form.lo,
                max_value=int(form.hi) if whole else form.hi,
                value=None,
                step=1 if whole else 0.01,
                format="%d" if whole else "%.2f",
                key=k,
            )
            keys = [k]
        else:
            assert isinstance(form, polls.Sketch)  # a concept check's picks have their own page
            keys = _answer_keys(code, round_, form.length)
            st.caption("One weight per key, each between 0 and 1.")
            for i, k in enumerate(keys):
                label = question.choices[i] if i < len(question.choices) else str(i)
                st.slider(md_escape(label), 0.0, 1.0, 0.0, 0.01, key=k)
        st.form_submit_button(
            "Send my answer",
            type="primary",
            on_click=_submit,
            args=(code, round_, form, tuple(keys)),
        )


def _submit(code: str, round_: int, form: polls.AnswerFormat, keys: tuple[str, ...]) -> None:
    """The form's callback: one answer for this session and round (a second replaces it)."""
    values = [st.session_state.get(k) for k in keys]
    value: Any
    if isinstance(form, polls.Sketch):
        value = tuple(float(v or 0.0) for v in values)
    else:
        value = values[0]
    if value is None:
        st.session_state[NOTE_KEY] = ("warning", "Pick or type an answer first.")
        return
    result = store().answer(code, browser_token.token(), round_, value)
    if isinstance(result, polls.Refused):
        st.session_state[NOTE_KEY] = ("warning", result.message)
    else:
        word = "changed" if result.replaced else "recorded"
        st.session_state[NOTE_KEY] = ("success", f"Answer {word} (round {result.round}).")


def _graded(view: polls.StudentView, question: Q.Question) -> None:
    """After the reveal: the key, this student's answer graded as the class's tally grades
    it, the misconception it shows (if any), why the key is right (:func:`why_line`), the
    share right, and the true figure."""
    form = view.answer
    st.subheader(md_escape(f"The answer: {view.key_label}"))
    mine = view.your_answer
    if mine is None:
        st.info("You did not answer in the last round.")
    elif form.matches(mine, view.key):
        st.success(md_escape(f"Your answer {form.label(mine)} is right."))
    else:
        st.error(md_escape(f"Your answer {form.label(mine)} is not the answer."))
        for m in question.misconceptions:
            try:
                theirs = form.clean(poll_questions.to_poll_answer(question, m.answer))
            except (ValueError, TypeError):
                continue
            if form.matches(mine, theirs):
                st.write(md_escape(f"{poll_questions.title_of(m.name)}: {m.explanation}"))
                break
    _why(view, question)
    if view.tally:
        last = view.tally[-1]
        if last.right is not None:
            st.caption(
                f"{last.right} of {last.answered} right in round {last.round} "
                f"({poll_questions.percent(last.right, last.answered)})."
            )
    figure = reveal_figure_of(view, question)
    if figure is not None:
        charts.chart(figure, key="poll_figure")


@st.fragment(run_every=PHONE_REFRESH)
def _watch(code: str, drawn: polls.PollState | str) -> None:
    """A phone's watcher, every few seconds on its own: a full run when the poll moved on
    (the next round, the spread shown, the reveal, closed) or what the store says changed
    (``drawn``: the state shown, or the reason of the refusal shown; the store back, a poll
    lost in its restart)."""
    view = store().student_view(code)
    now = view.reason if isinstance(view, polls.Refused) else view.state
    if now != drawn:
        st.rerun()
