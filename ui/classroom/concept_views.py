"""The concept check's page (``pages/concept-check.py``, at ``/concept-check``): "Did I learn
it?" for a student alone, and "Did the class learn it?" as a class poll.

By its link:

- ``/concept-check``: a student alone takes the check before reading the chapter and again
  after; her answers stay in her browser (``ui.classroom.solo_answers``: a reload or a later
  visit finds them, the server keeps none), and after the second round she sees her own
  before and after, question by question, with the misconception behind each wrong answer.
  Below, a presenter opens the check for a class;
- ``/concept-check?join=CODE`` (a phone): the check of the round the presenter has open
  (before, then after), and after the results, her own before and after;
- ``/concept-check?poll=CODE`` (the projector): the join code and its QR code, how many
  answered each round, and in the browser that opened the check (as on the poll page, its
  token or its session's secret holds the controls; the address carries no secret) "Start the
  after check", "Show the results" (per question and overall: the share right before and after
  and the class's normalized gain) and the CSV. Any other browser gets the display alone.

The check is one poll of ``ui.classroom.poll_views.store`` (``attnviz.classroom.concept_polls``):
round 1 is before, round 2 after. A phone is counted by its browser's token
(``ui.classroom.browser_token``), as in every poll. Every student sees each question's options in an order of
her own (``attnviz.teach.concepts.shown_order``): the order on the page carries nothing of the
key, and nothing about the key is sent before her answers are in.
"""

from __future__ import annotations

import functools
import os
import secrets
from collections.abc import Sequence
from typing import Any

import streamlit as st

from attnviz import figures
from attnviz.classroom import concept_polls as CP
from attnviz.classroom import join_address, poll_questions, polls
from attnviz.teach import concepts as C
from ui import charts, url
from ui.classroom import browser_token, poll_views, solo_answers
from ui.text import md_escape

URL_PATH = "concept-check"
PAGE_FILE = "pages/concept-check.py"
SOLO_KEY = "_attnviz_concepts_solo"  # a student alone: {"before": answers, "after": answers}
SOLO_ID_KEY = "_attnviz_concepts_me"  # whose shuffle a student alone sees
SOLO_LOADED_KEY = "_attnviz_concepts_loaded"  # her browser's kept answers were looked for
PHONE_KEY = "_attnviz_concepts_phone"  # a phone's own answers: {(code, round): answers}
SEEN_KEY = "_attnviz_concepts_seen"  # {code: (before, after, class line)}: results shown here
NOTE_KEY = "_attnviz_concepts_note"  # (kind, sentence) to show once, after sending
ROUND_TITLES = {CP.BEFORE: "Before the lesson", CP.AFTER: "After the lesson"}
ACTIONS = {
    "reask": "Start the after check",
    "reveal": "Show the results",
    "close": "Close the check",
}

_PROJECTOR_CSS = """
<style>
section[data-testid="stSidebar"], div[data-testid="stSidebarCollapsedControl"],
button[data-testid="stExpandSidebarButton"] { display: none !important; }
div[data-testid="stMainBlockContainer"] { max-width: 100%; padding-top: 3rem; }
div[data-testid="stMainBlockContainer"] p, div[data-testid="stMainBlockContainer"] li,
div[data-testid="stMainBlockContainer"] td, div[data-testid="stMainBlockContainer"] th
{ font-size: 1.3rem; line-height: 1.4; }
div[data-testid="stMainBlockContainer"] h2 { font-size: 4.5rem; letter-spacing: 0.15em; }
div[data-testid="stMainBlockContainer"] h3 { font-size: 2.2rem; }
div[data-testid="stMainBlockContainer"] .st-key-concepts_table td,
div[data-testid="stMainBlockContainer"] .st-key-concepts_table th
{ font-size: 1.15rem; line-height: 1.3; padding-top: 0.2rem; padding-bottom: 0.2rem; }
</style>
"""
_PHONE_CSS = """
<style>
section[data-testid="stSidebar"], div[data-testid="stSidebarCollapsedControl"],
button[data-testid="stExpandSidebarButton"] { display: none !important; }
div[data-testid="stMainBlockContainer"] { max-width: 52rem; }
</style>
"""


def page() -> None:
    browser_token.keep()
    params = st.query_params
    if url.JOIN in params:
        st.html(_PHONE_CSS)
        phone(params.get(url.JOIN, ""))
    elif url.POLL in params:
        st.html(_PROJECTOR_CSS)
        code = params.get(url.POLL, "")
        from_link = params.get(url.SECRET)
        if url.SECRET in params:  # the secret leaves the address bar at once
            del st.query_params[url.SECRET]
        projector(code, poll_views.presenter_key(code, from_link))
    else:
        solo()


def _note() -> None:
    note = st.session_state.pop(NOTE_KEY, None)
    if note is not None:
        kind, text = note
        {"success": st.success, "warning": st.warning}[kind](md_escape(text))


# --- the questions, as a form ------------------------------------------------------------------
def _field(form: str, i: int) -> str:
    return f"{form}_q{i}"


def questions_form(form: str, who: str, round_name: str, on_send, args: tuple) -> None:
    """Every item as a radio, its options in ``who``'s own order for ``round_name``; the
    radios' values are the options' canonical indices, which never reach the browser."""
    with st.form(form, border=False):
        for i, item in enumerate(C.ITEMS):
            st.radio(
                f"**{i + 1}.** {md_escape(item.prompt)}",
                C.shown_order(item, who, round_name),
                index=None,
                format_func=functools.partial(_option_text, item),
                key=_field(form, i),
            )
        st.form_submit_button("Send my answers", type="primary", on_click=on_send, args=args)


def _option_text(item: C.Item, canonical: int) -> str:
    return md_escape(item.options[canonical].text)


def _picked(form: str) -> list[int | None]:
    return [st.session_state.get(_field(form, i)) for i in range(len(C.ITEMS))]


def _checked(picked: Sequence[int | None]) -> tuple[int, ...] | None:
    """The answers when every question has one; otherwise None, with a note naming the
    questions left (the store's own check, said the same way)."""
    try:
        return polls.Picks(C.SIZES).clean(list(picked))
    except polls.AnswerError as error:
        st.session_state[NOTE_KEY] = ("warning", str(error))
        return None


# --- a student's own before and after ------------------------------------------------------------
def _marks(answers: Sequence[int]) -> int:
    return sum(C.graded(answers))


def own_results(before: Sequence[int], after: Sequence[int] | None) -> None:
    """One student's before and after: her score each time, her gain, and per question her
    two answers, the right one, and the misconception behind a wrong one."""
    k = len(C.ITEMS)
    first = C.Score(_marks(before), k)
    line = f"Before: {first.right} of {k} right ({C.percent(first.share)})"
    if after is not None:
        second = C.Score(_marks(after), k)
        gain = C.Gain(None, first, second).gain
        line += (
            f"; after: {second.right} of {k} ({C.percent(second.share)}). "
            f"Your normalized gain g = {C.gain_text(gain)}"
            + (" (you were right on every question before)" if gain is None else "")
        )
    st.markdown(f"#### {md_escape(line)}.")
    st.caption(
        "g = (after − before) / (100% − before): the share of what you did not know before "
        "that you know now (1 is all of it; below 0, fewer right than before)."
    )
    for i, item in enumerate(C.ITEMS):
        rounds = [("before", before[i])] + ([("after", after[i])] if after is not None else [])
        marks = " · ".join(
            f"{name}: {'right' if item.is_right(a) else 'wrong'}" for name, a in rounds
        )
        # Open where her last answer was wrong: that is what is left to read.
        last_wrong = not item.is_right(rounds[-1][1])
        with st.expander(md_escape(f"{i + 1}. {item.topic} ({marks})"), expanded=last_wrong):
            st.markdown(md_escape(item.prompt))
            st.markdown(
                f"Answer: {md_escape(item.answer.text)} _{md_escape(item.answer.explanation)}_"
            )
            shown = set()
            for name, a in rounds:
                wrong = C.misconception_of(item, a)
                if wrong is None or a in shown:
                    continue
                shown.add(a)
                st.markdown(
                    md_escape(
                        f"Your answer {name}, “{wrong.text}”: {wrong.misconception}. "
                        f"{wrong.explanation}"
                    )
                )


# --- a student alone -----------------------------------------------------------------------------
def _solo_id() -> str:
    if SOLO_ID_KEY not in st.session_state:
        st.session_state[SOLO_ID_KEY] = secrets.token_hex(8)
    return st.session_state[SOLO_ID_KEY]


def _solo_take_up(who: str, done: dict[str, tuple[int, ...]]) -> None:
    """Her answers as this browser kept them (``ui.classroom.solo_answers``), in place of
    this session's."""
    st.session_state[SOLO_ID_KEY] = who
    st.session_state[SOLO_KEY] = dict(done)


def _solo_first_run() -> bool:
    """On a session's first run, take up the answers this browser's cookie brought; True
    when it brought none (the keeper then asks the browser's local storage)."""
    if SOLO_LOADED_KEY in st.session_state:
        return False
    st.session_state[SOLO_LOADED_KEY] = True
    kept = solo_answers.from_cookie()
    if kept is None:
        return True
    _solo_take_up(*kept)
    return False


def _solo_answers() -> dict[str, tuple[int, ...]]:
    return st.session_state.setdefault(SOLO_KEY, {})


def _solo_send(form: str, round_name: str) -> None:
    answers = _checked(_picked(form))
    if answers is not None:
        _solo_answers()[round_name] = answers


def _solo_restart() -> None:
    st.session_state[SOLO_KEY] = {}
    st.session_state[SOLO_ID_KEY] = secrets.token_hex(8)


def solo() -> None:
    ask = _solo_first_run()
    st.title("Did I learn it?")
    st.write(
        f"{len(C.ITEMS)} questions on chapter 3's ideas, not on your numbers. Answer them "
        "before you work through the pages, and again after: then you see what you knew each "
        "time, the right answers, and the mistaken idea behind each wrong one. Your answers "
        "stay in this browser, on this device (a reload or a later visit finds them; "
        "“Start again” clears them); the server keeps none of them."
    )
    _note()
    done = _solo_answers()
    who = _solo_id()
    solo_answers.keep(who, done, ask=ask, on_found=_solo_take_up)
    if "before" not in done:
        st.subheader("Before the lesson")
        questions_form(
            "concepts_solo_before", who, "before", _solo_send, ("concepts_solo_before", "before")
        )
    elif "after" not in done:
        st.success(
            f"Your answers before are saved ({len(C.ITEMS)} of {len(C.ITEMS)}). The right "
            "answers stay hidden until you have answered again."
        )
        st.page_link(
            "pages/simplified-attention.py",
            label="Start the lesson: pass 1",
            icon=":material/school:",
        )
        st.subheader("After the lesson")
        st.caption("The same questions, their options in another order.")
        questions_form(
            "concepts_solo_after", who, "after", _solo_send, ("concepts_solo_after", "after")
        )
    else:
        own_results(done["before"], done["after"])
        st.button("Start again", key="concepts_solo_restart", on_click=_solo_restart)
    st.divider()
    st.subheader("With a class")
    st.write(
        "Open the check as a class poll: students answer on their phones before the lesson "
        "and again after it; the projector shows, per question and overall, the share right "
        "before and after and the class's normalized gain. No name is stored."
    )
    st.button(
        "Start a class concept check",
        key="concepts_open",
        icon=":material/groups:",
        on_click=_open,
    )


def _open() -> None:
    created = poll_views.store().create(CP.poll_question(), owner=browser_token.token())
    if isinstance(created, polls.Refused):
        st.session_state[NOTE_KEY] = ("warning", created.message)
        return
    poll_views.presenter_key(created.code, created.secret)  # this session holds the controls
    st.query_params[url.POLL] = created.code


# --- the projector -------------------------------------------------------------------------------
def _join_base() -> tuple[str, str | None]:
    """This app's address for phones (``attnviz.classroom.join_address``, as the poll page
    finds it, this page's path taken off) and why it may not work from a phone (or None)."""
    seen = (st.context.url or "").split("?", 1)[0].split("#", 1)[0].rstrip("/")
    if seen.endswith("/" + URL_PATH):
        seen = seen[: -len(URL_PATH) - 1]
    return join_address.join_base(os.environ.get(poll_views.PUBLIC_URL_ENV, ""), seen)


def join_link(code: str) -> str:
    """The link a phone opens: ``/concept-check?join=CODE`` on the app's address."""
    return f"{_join_base()[0]}/{URL_PATH}?{url.JOIN}={code}"


def projector(code: str, secret: str) -> None:
    st.title("Did the class learn it?")
    clean = polls.clean_code(code)
    if clean is None:
        st.warning("This is not a join code: a code is six letters and digits.")
        return
    view = poll_views.projector_view(clean, secret)
    if isinstance(view, polls.Refused):
        _refused(view)
        return
    if not CP.same_items(view.payload):
        st.error(
            "This poll is not a concept check of this version of the app: its answers "
            "cannot be read here."
        )
        return
    if view.key is not None:  # the results: nobody joins any more, they fill the screen
        st.caption(md_escape(f"Check {clean} · {_answered_line(view)}"))
        _controls(clean, secret, view)
        results(CP.report(view))
        return
    left, right = st.columns([2, 3], gap="large")
    with left:
        poll_views.join_block(clean, join_link(clean))
        problem = _join_base()[1]
        if problem is not None:
            st.caption(md_escape(problem))
    with right:
        st.markdown(md_escape(CP.PROMPT))
        if view.state.phase == "open":
            _counting(clean, secret, view.state)
        else:
            st.markdown(f"### {_answered_line(view)}")
    _controls(clean, secret, view)


def _answered_line(view: polls.PresenterView) -> str:
    parts = [f"{ROUND_TITLES[t.round]}: {t.answered} answered" for t in view.rounds]
    return " · ".join(parts)


def _refused(refused: polls.Refused) -> None:
    poll_views.refusal_message(refused)
    st.page_link(PAGE_FILE, label="Back to the concept check", icon=":material/arrow_back:")


@st.fragment(run_every=poll_views.PROJECTOR_REFRESH)
def _counting(code: str, secret: str, drawn: polls.PollState) -> None:
    """How many answered, read again every PROJECTOR_REFRESH seconds on its own."""
    view = poll_views.projector_view(code, secret)
    if isinstance(view, polls.Refused):
        _refused(view)
        return
    if view.state != drawn:
        st.rerun()
    st.markdown(f"### {_answered_line(view)}")
    st.caption(
        "Round open: "
        + ROUND_TITLES[view.state.round].lower()
        + ". The results stay hidden until you show them."
    )


def _controls(code: str, secret: str, view: polls.PresenterView) -> None:
    _note()
    if view.display:
        st.caption(
            "This is the check's display: its controls are in the presenter's browser, the "
            "one that opened it."
        )
        return
    s = view.state
    disabled = {
        "reask": s.phase != "open" or s.round != CP.BEFORE,
        "reveal": s.phase != "open" or s.round != CP.AFTER,
        "close": s.phase == "closed",
    }
    poll_views.control_row(
        code,
        secret,
        ACTIONS,
        disabled,
        prefix="concepts",
        primary=("reask", "reveal"),
        note_key=NOTE_KEY,
        csv=("Results (CSV)", _csv, f"concept-check-{code}.csv"),
        csv_ready=view.key is not None,
    )


def _csv(code: str, secret: str) -> str:
    view = poll_views.store().presenter_view(code, secret)
    if isinstance(view, polls.Refused):
        return view.message
    return CP.report_csv(CP.report(view))


def results_chart(result: CP.Report) -> figures.Chart:
    labels = [str(i + 1) for i in range(len(C.ITEMS))] + ["all"]
    rows = [*result.per, result.overall]

    def shares(scores: list[C.Score]) -> list[float]:
        return [100 * float(s.share) if s.share is not None else 0.0 for s in scores]

    return figures.grouped_bars(
        {
            "before": shares([g.before for g in rows]),
            "after": shares([g.after for g in rows]),
        },
        labels,
        title="Share right per question (%)",
        value_name="% right",
        point_name="question",
    )


def results_table(result: CP.Report) -> list[dict[str, Any]]:
    """The projector's table: one row per question and one for all, from the counts."""
    rows = []
    for i, g in enumerate(result.per):
        assert g.item is not None
        top = result.top_misconception(i)
        rows.append(
            {
                "#": str(i + 1),
                "question": g.item.topic,
                "right before": CP.score_line(g.before),
                "right after": CP.score_line(g.after),
                "gain g": C.gain_text(g.gain),
                "wrong answer picked most after": "" if top is None else f"{top[0]} ({top[1]})",
            }
        )
    o = result.overall
    rows.append(
        {
            "#": "all",
            "question": "every question",
            "right before": CP.score_line(o.before),
            "right after": CP.score_line(o.after),
            "gain g": C.gain_text(o.gain),
            "wrong answer picked most after": "",
        }
    )
    return rows


def results(result: CP.Report) -> None:
    """The results on one 1920×1080 screen: the overall line, then the chart of the share
    right per question (left) beside the table of the same counts with each gain and the
    wrong answer picked most (right, in smaller, tighter rows), then the right answers folded."""
    st.subheader(md_escape(CP.summary_line(result)))
    left, right = st.columns([2, 3], gap="medium")
    with left:
        chart = poll_questions.projected(results_chart(result))  # made for this run: not cached
        charts.send(charts.encode(chart.spec, chart.label), key="concepts_chart")
        st.caption(
            "Hake's normalized gain ⟨g⟩ = (after − before) / (100% − before): the share of "
            "what the class did not know that it learned. “—”: everyone was right before."
        )
    with right, st.container(key="concepts_table"):
        st.table(results_table(result))
    with st.expander("The right answers"):
        for i, item in enumerate(C.ITEMS):
            st.markdown(
                f"**{i + 1}.** {md_escape(item.prompt)} **{md_escape(item.answer.text)}** "
                f"_{md_escape(item.answer.explanation)}_"
            )


# --- a phone -------------------------------------------------------------------------------------
def _phone_answers() -> dict[tuple[str, int], tuple[int, ...]]:
    return st.session_state.setdefault(PHONE_KEY, {})


def _phone_send(code: str, round_: int, form: str) -> None:
    answers = _checked(_picked(form))
    if answers is None:
        return
    result = poll_views.store().answer(code, browser_token.token(), round_, answers)
    if isinstance(result, polls.Refused):
        st.session_state[NOTE_KEY] = ("warning", result.message)
        return
    _phone_answers()[(code, round_)] = answers  # the page says they are in


def phone(code: str) -> None:
    st.title("Concept check")
    clean = polls.clean_code(code)
    if clean is None:
        st.warning(
            "This is not a join code: a code is six letters and digits, as the projector shows."
        )
        return
    view = poll_views.store().student_view(clean, browser_token.token())
    if isinstance(view, polls.Refused):
        st.info(md_escape(view.message))
        seen = st.session_state.get(SEEN_KEY, {}).get(clean)
        if view.reason == "closed" and seen is not None:  # she saw her results: they stay
            st.caption("Your results stay on this page until you reload or leave it.")
            _phone_results(*seen)
        _watch(clean, None)
        return
    if not CP.same_items(view.payload):
        st.error("This poll is not a concept check of this version of the app.")
        return
    st.caption(md_escape(f"Poll {clean} · {CP.PROMPT}"))
    s = view.state
    _note()
    mine = _phone_answers()
    if s.phase == "open":
        st.subheader(ROUND_TITLES[s.round])
        if view.your_answer is not None:
            st.success(
                "Your answers are in. "
                + (
                    "Keep this page open: the same questions come back after the lesson."
                    if s.round == CP.BEFORE
                    else "The results come when the presenter shows them."
                )
            )
        else:
            form = f"concepts_{clean}_r{s.round}"
            who = f"{clean}:{browser_token.token()}"
            questions_form(form, who, CP.ROUND_NAMES[s.round], _phone_send, (clean, s.round, form))
    elif view.key is not None:
        own = poll_views.store().own_answers(clean, browser_token.token())
        stored = () if isinstance(own, polls.Refused) else own
        before = _first(stored[CP.BEFORE - 1 :], mine.get((clean, CP.BEFORE)))
        after = _first(stored[CP.AFTER - 1 :], mine.get((clean, CP.AFTER)))
        line = None
        if view.tally:
            result = CP.report(
                polls.PresenterView(
                    view.code, view.state, view.payload, view.settings, view.answer, view.tally
                )
            )
            line = "The class. " + CP.summary_line(result)
        # Kept for this page: closing the check must not take her results off her screen.
        st.session_state.setdefault(SEEN_KEY, {})[clean] = (before, after, line)
        _phone_results(before, after, line)
    _watch(clean, s)


def _phone_results(
    before: tuple[int, ...] | None, after: tuple[int, ...] | None, line: str | None
) -> None:
    """What a phone shows once the results are out: the class's line, her own before and
    after (or, with no answers of hers before, the right answers)."""
    if line is not None:
        st.caption(md_escape(line))
    if before is not None:
        own_results(before, after)
    else:
        st.info(
            "This browser sent no answers before the lesson (another phone, or cookies "
            "cleared): here are the right answers."
        )
        for i, item in enumerate(C.ITEMS):
            st.markdown(f"**{i + 1}.** {md_escape(item.answer.text)}")


def _first(stored: Sequence[Any], kept: tuple[int, ...] | None) -> tuple[int, ...] | None:
    """A round's own answers: the store's (this browser's, a reload included), else what this
    session kept when it sent them."""
    if stored and stored[0] is not None:
        return tuple(stored[0])
    return kept


@st.fragment(run_every=poll_views.PHONE_REFRESH)
def _watch(code: str, drawn: polls.PollState | None) -> None:
    """A full run when the poll moved on (the after round, the results, closed)."""
    view = poll_views.store().student_view(code)
    now = None if isinstance(view, polls.Refused) else view.state
    if now != drawn:
        st.rerun()
