"""The poll page keeps a class safe (AppTest): a phone reopened in a new session with the same
browser token sees its answer and still counts once; the presenter is told how many answers
were refused, that the poll is about to vanish, and when the join link cannot work from a
phone; a projector without the presenter's key gets the display view."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from attnviz.classroom.polls import Answered, Limits, MemoryPollStore
from attnviz.teach import questions as Q
from ui.classroom import browser_token
from ui.classroom import poll_views as poll

from .test_poll_page import APP, CONTROLS, PAGE, answer, asked, controls, made, texts

TOKEN = "one-phones-browser-token-000001"


@pytest.fixture
def store():
    chosen = MemoryPollStore()
    poll.use_store(chosen)
    yield chosen
    poll.use_store(None)


def page(query: dict[str, str], token: str | None = None, url: str | None = None) -> AppTest:
    """The poll page in a new session; ``token``: the browser's (as its cookie brings it)."""
    at = AppTest.from_file(str(APP), default_timeout=120)
    for key, value in query.items():
        at.query_params[key] = value
    if token is not None:
        at.session_state[browser_token.TOKEN_KEY] = token
    if url is not None:
        at.context["url"] = url
    at.run()
    at.switch_page(PAGE).run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def test_a_reopened_phone_sees_its_answer_and_counts_once(store):
    made_ = asked(store, made(Q.ARGMAX_KEY, "multihead", "The cat sat on the mat"))
    first = page({"join": made_.code}, TOKEN)
    answer(first, 2)
    # A reload, an app switch or another replica: a new session, the same browser.
    again = page({"join": made_.code}, TOKEN)
    mine = [t for t in texts(again, "success") if t.startswith("Your answer in round 1")]
    option = store.student_view(made_.code, TOKEN).answer.options[2]
    assert mine == [
        f"Your answer in round 1: {option}. You can change it until the presenter moves on."
    ]
    answer(again, 3)
    tally = store.presenter_view(made_.code, made_.secret).rounds[0]
    assert tally.answered == 1
    assert [n for _, n in tally.counts][3] == 1 and sum(n for _, n in tally.counts) == 1
    # Another browser is another student.
    answer(page({"join": made_.code}, "another-browsers-token-00002"), 0)
    assert store.presenter_view(made_.code, made_.secret).rounds[0].answered == 2


def test_the_presenter_is_told_how_many_answers_were_refused(store):
    made_ = asked(store, made(Q.ARGMAX_KEY, "multihead", "The cat sat on the mat"))
    results = [store.answer(made_.code, f"script-{i:03d}", 1, 0) for i in range(100)]
    accepted = sum(isinstance(r, Answered) for r in results)
    limits = Limits()
    assert accepted <= limits.join_burst + 1  # the in-process clock is real: a moment passes
    at = page({"poll": made_.code, "secret": made_.secret})
    assert controls(at) == list(CONTROLS)
    refused = 100 - accepted
    assert (
        f"{refused} answers refused: {refused} from new browsers arriving faster than a class "
        f"joins ({limits.join_burst} at once, then {limits.joins_per_minute} a minute). More "
        "answers than students may mean someone is scripting answers."
    ) in texts(at, "warning")
    assert f"Round 1: {accepted} answers" in " ".join(texts(at))
    # After the reveal (nothing refreshes then) the count is still told, once.
    at.button(key="poll_reveal").click().run()
    told = [t for t in texts(at, "warning") if t.startswith(f"{refused} answers refused")]
    assert len(told) == 1, texts(at, "warning")


def test_the_presenter_is_warned_before_the_poll_vanishes(store):
    short = MemoryPollStore(Limits(ttl_seconds=20 * 60))
    poll.use_store(short)
    made_ = asked(short, made(Q.ARGMAX_KEY, "multihead", "The cat sat on the mat"))
    at = page({"poll": made_.code, "secret": made_.secret})
    assert (
        "This poll and its counts vanish in about 20 minutes (polls last 0.333333 hours): "
        "download the counts (CSV) now if you want to keep them."
    ) in texts(at, "warning")
    long = asked(store, made(Q.ARGMAX_KEY, "multihead", "The cat sat on the mat"))
    poll.use_store(store)
    at = page({"poll": long.code, "secret": long.secret})
    assert not [t for t in texts(at, "warning") if "vanish" in t]


@pytest.mark.parametrize(
    ("public", "seen", "link", "told"),
    [
        ("10.0.0.5:8501", "", "http://10.0.0.5:8501/poll?join=", "has no http:// or https://"),
        ("", "http://localhost:8501/poll", "http://localhost:8501/poll?join=", "localhost"),
        ("", "http://10.0.0.5:8501/poll", "http://10.0.0.5:8501/poll?join=", None),
    ],
)
def test_a_join_link_that_cannot_work_is_told_to_the_presenter(
    store, monkeypatch, public, seen, link, told
):
    monkeypatch.setenv(poll.PUBLIC_URL_ENV, public)
    made_ = asked(store, made(Q.ARGMAX_KEY, "multihead", "The cat sat on the mat"))
    at = page({"poll": made_.code, "secret": made_.secret}, url=seen)
    shown = " ".join(texts(at, "code", "markdown", "caption", "text"))
    shown += " ".join(h.proto.body for h in at.get("html"))  # the join link, printed large
    assert link + made_.code in shown or link + made_.code in str(at.get("image"))
    assert at.get("image"), "the QR code is drawn"
    warned = [t for t in texts(at, "warning") if "join link" in t]
    if told is None:
        assert warned == []
    else:
        assert len(warned) == 1 and told in warned[0], warned


def test_the_projector_without_the_key_shows_the_display_view(store):
    made_ = asked(store, made(Q.ARGMAX_KEY, "multihead", "The cat sat on the mat"))
    for i in range(3):
        store.answer(made_.code, f"s{i}", 1, 1)
    at = page({"poll": made_.code})
    assert controls(at) == [] and not at.get("download_button")
    assert "Round 1: 3 answers" in " ".join(texts(at))
    assert made_.secret not in str(at.session_state[poll.SECRETS_KEY] or {})
    assert not [t for t in texts(at, "warning") if "refused" in t or "vanish" in t]
