"""The concept check's page (/concept-check) through AppTest: a student alone before and after,
a class of phones with the projector, and nothing of the key sent before the answers are in.

Every AppTest session runs in this process, so the page's store is this test's own
(``ui.classroom.poll_views.use_store``)."""

from __future__ import annotations

import csv
import io
import re

import pytest
from streamlit.testing.v1 import AppTest

from attnviz.classroom import concept_polls as CP
from attnviz.classroom.polls import MemoryPollStore
from attnviz.teach import concepts as C
from bench.support.pages import ROOT
from ui.classroom import browser_token, poll_views
from ui.classroom import concept_views as V

APP = ROOT / "app.py"
PAGE = "pages/concept-check.py"
K = len(C.ITEMS)
# Every text that would tell which option is right: the answers' reasons, every wrong
# option's misconception and explanation.
KEY_TEXTS = [item.answer.explanation for item in C.ITEMS] + [
    text for item in C.ITEMS for w in item.wrong for text in (w.misconception, w.explanation)
]


@pytest.fixture
def store():
    chosen = MemoryPollStore()
    poll_views.use_store(chosen)
    yield chosen
    poll_views.use_store(None)


def unescape(text: str) -> str:
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", str(text))


def open_page(query: dict[str, str] | None = None) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=120)
    for key, value in (query or {}).items():
        at.query_params[key] = value
    at.run()
    at.switch_page(PAGE).run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def sent_text(at: AppTest) -> str:
    """Every element the page sent, serialized and unescaped: what the browser receives."""
    out = b""
    for node in at._tree:
        proto = getattr(node, "proto", None)
        if proto is not None and hasattr(proto, "SerializeToString"):
            out += proto.SerializeToString()
    return unescape(out.decode("utf-8", "replace"))


def radios(at: AppTest, form: str) -> list:
    found = [at.radio(key=f"{form}_q{i}") for i in range(K)]
    assert len(found) == K
    return found


def send(at: AppTest, form: str, picks) -> AppTest:
    for radio, pick in zip(radios(at, form), picks, strict=True):
        if pick is not None:
            radio.set_value(pick)
    next(b for b in at.button if b.label == "Send my answers").click().run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def own_line(at: AppTest) -> list[str]:
    """The headline of a student's own before and after."""
    found = [unescape(m.value) for m in at.markdown]
    return [t.removeprefix("#### ") for t in found if t.startswith("#### Before:")]


def texts(at: AppTest) -> str:
    found = []
    for kind in ("markdown", "caption", "info", "warning", "error", "success", "subheader"):
        found += [unescape(e.value) for e in getattr(at, kind)]
    return "\n".join(found)


BEFORE = [C.KEY if i % 2 else 1 for i in range(K)]  # right on every odd question
AFTER = [C.KEY if i != 2 else 3 for i in range(K)]  # right on all but question 3


# --- a student alone -----------------------------------------------------------------------------
def test_a_student_alone_sees_her_own_before_and_after(store):
    at = open_page()
    assert [t.value for t in at.title] == ["Did I learn it?"]
    assert "Before the lesson" in [unescape(s.value) for s in at.subheader]
    shown = [r.options for r in radios(at, "concepts_solo_before")]
    assert [sorted(map(unescape, o)) for o in shown] == [
        sorted(o.text for o in item.options) for item in C.ITEMS
    ]
    send(at, "concepts_solo_before", BEFORE)
    assert "Your answers before are saved" in texts(at)
    assert not any(t in sent_text(at) for t in KEY_TEXTS)  # still sealed
    send(at, "concepts_solo_after", AFTER)
    before_right, after_right = K // 2, K - 1
    (headline,) = own_line(at)
    g = (after_right - before_right) / (K - before_right)
    assert headline == (
        f"Before: {before_right} of {K} right ({round(100 * before_right / K)}%); after: "
        f"{after_right} of {K} ({round(100 * after_right / K)}%). Your normalized gain "
        f"g = {g:.2f}."
    )
    page = texts(at)
    wrong = C.ITEMS[2].options[3]
    assert f"Your answer after, “{wrong.text}”: {wrong.misconception}. {wrong.explanation}" in page
    first_wrong = C.ITEMS[0].options[1]
    assert f"Your answer before, “{first_wrong.text}”: {first_wrong.misconception}." in page
    boxes = {unescape(e.label): e.proto.expanded for e in at.expander}
    assert boxes[f"1. {C.ITEMS[0].topic} (before: wrong · after: right)"] is False
    assert boxes[f"3. {C.ITEMS[2].topic} (before: wrong · after: wrong)"] is True
    at.button(key="concepts_solo_restart").click().run()
    assert "Before the lesson" in [unescape(s.value) for s in at.subheader]


def test_a_check_with_questions_left_out_names_them_and_keeps_nothing(store):
    at = open_page()
    picks: list[int | None] = [C.KEY] * K
    picks[1] = picks[4] = None
    send(at, "concepts_solo_before", picks)
    assert [unescape(w.value) for w in at.warning][-1] == (
        "Pick an answer in every question (not yet: 2, 5)."
    )
    assert "Before the lesson" in [unescape(s.value) for s in at.subheader]


def test_the_options_are_shown_in_each_student_s_own_order_and_the_key_is_not_first():
    """Over 40 students, the right answer shows at every position, near a quarter of the
    time each, and the page sends no explanation or misconception before the answers."""
    first = 0
    orders = set()
    for _ in range(3):
        at = open_page()
        shown = [tuple(map(unescape, r.options)) for r in radios(at, "concepts_solo_before")]
        orders.add(shown[0])
        first += sum(o[0] == item.answer.text for o, item in zip(shown, C.ITEMS, strict=True))
        assert not any(t in sent_text(at) for t in KEY_TEXTS)
    assert len(orders) >= 2  # three sessions, not one fixed order
    assert first < 3 * K * 0.6
    at_first = sum(
        C.shown_order(item, f"student {s}", "before")[0] == C.KEY
        for s in range(40)
        for item in C.ITEMS
    )
    assert 0.15 < at_first / (40 * K) < 0.35


# --- a class -------------------------------------------------------------------------------------
def test_a_class_before_and_after_on_the_projector_and_the_csv(store, monkeypatch):
    monkeypatch.setenv(poll_views.PUBLIC_URL_ENV, "http://10.0.0.5:8501/")
    presenter = open_page()
    presenter.button(key="concepts_open").click().run()
    code = presenter.query_params["poll"]
    code = code[0] if isinstance(code, list) else code
    assert "secret" not in presenter.query_params  # the address bar shows no secret
    secret = presenter.session_state[poll_views.SECRETS_KEY][code]
    assert f"## {code}" in [m.value for m in presenter.markdown]
    link = f"http://10.0.0.5:8501/concept-check?join={code}"
    printed = [h.proto.body for h in presenter.get("html") if "attnviz-join-link" in h.proto.body]
    assert [f">{link}</div>" in body for body in printed] == [True]  # large, as the poll's
    assert "Before the lesson: 0 answered" in texts(presenter)

    phones = [open_page({"join": code}) for _ in range(3)]
    for p in phones:
        assert not any(t in sent_text(p) for t in KEY_TEXTS)
    for p, picks in zip(phones, (BEFORE, BEFORE, AFTER), strict=True):
        send(p, f"concepts_{code}_r1", picks)
        assert texts(p).count("Your answers are in.") == 1
        assert not any(t in sent_text(p) for t in KEY_TEXTS)
    presenter.run()
    assert "Before the lesson: 3 answered" in texts(presenter)
    assert presenter.button(key="concepts_reveal").disabled
    presenter.button(key="concepts_reask").click().run()
    assert "After the lesson: 0 answered" in texts(presenter)
    for p in phones:
        p.run()
        assert "After the lesson" in [unescape(s.value) for s in p.subheader]
    for p in phones[:2]:
        send(p, f"concepts_{code}_r2", AFTER)
    presenter.run()
    presenter.button(key="concepts_reveal").click().run()

    before_right = 2 * (K // 2) + (K - 1)
    after_right = 2 * (K - 1)
    pre, post = before_right / (3 * K), after_right / (2 * K)
    summary = (
        f"Right before: {before_right} of {3 * K} ({round(100 * pre)}%); after: "
        f"{after_right} of {2 * K} ({round(100 * post)}%) (3 before, 2 after). "
        f"Normalized gain ⟨g⟩ = {(post - pre) / (1 - pre):.2f}."
    )
    assert summary in [unescape(s.value) for s in presenter.subheader]
    table = presenter.table[0].value
    assert list(table["#"]) == [str(i + 1) for i in range(K)] + ["all"]
    assert table["right before"][0] == "1 of 3 (33%)" and table["right after"][0] == "2 of 2 (100%)"
    assert table["gain g"][0] == "1.00"
    assert table["right before"][1] == "3 of 3 (100%)" and table["gain g"][1] == "—"
    assert table["right before"][2] == "0 of 3 (0%)" and table["right after"][2] == "0 of 2 (0%)"
    assert table["gain g"][2] == "0.00"
    assert (
        table["wrong answer picked most after"][2] == f"{C.ITEMS[2].options[3].misconception} (2)"
    )
    rows = list(csv.DictReader(io.StringIO(V._csv(code, secret))))
    assert rows[-1]["right_before"] == str(before_right) and rows[-1]["answered_after"] == str(
        2 * K
    )

    # A reload (a new session of the same browser) still finds her own before and after.
    token = phones[1].session_state[browser_token.TOKEN_KEY]
    again = AppTest.from_file(str(APP), default_timeout=120)
    again.session_state[browser_token.TOKEN_KEY] = token
    again.query_params["join"] = code
    again.run()
    again.switch_page(PAGE).run()
    assert not again.exception
    assert own_line(again) == own_line(phones[1].run()) != []

    p = phones[0]
    p.run()
    page = texts(p)
    assert "The class. " + summary in page
    (own,) = own_line(p)
    g = ((K - 1) / K - (K // 2) / K) / (1 - (K // 2) / K)
    assert own == (
        f"Before: {K // 2} of {K} right ({round(100 * (K // 2) / K)}%); after: {K - 1} of {K} "
        f"({round(100 * (K - 1) / K)}%). Your normalized gain g = {g:.2f}."
    )


def test_a_bad_code_or_a_wrong_secret_gets_a_sentence(store):
    at = open_page({"join": "nope"})
    assert "This is not a join code" in texts(at)
    made = store.create(CP.poll_question())
    at = open_page({"poll": made.code, "secret": "wrong"})
    assert "This is the check's display" in texts(at)  # no controls without the key
    assert not [b for b in at.button if str(b.key).startswith("concepts_")]
    assert "secret" not in at.query_params
    at = open_page({"join": "ABCDEF"})
    assert "There is no poll with this code" in texts(at)


def test_a_concept_check_s_code_on_the_poll_page_opens_the_check(store):
    made = store.create(CP.poll_question())
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.query_params["join"] = made.code
    at.run()
    at.switch_page("pages/poll.py").run()
    assert not at.exception
    assert [t.value for t in at.title] == ["Concept check"]
    assert len(radios(at, f"concepts_{made.code}_r1")) == K


def test_closing_the_check_leaves_a_phone_the_results_it_was_shown(store):
    made = store.create(CP.poll_question())
    code, secret = made.code, made.secret
    shown, late = open_page({"join": code}), open_page({"join": code})
    send(shown, f"concepts_{code}_r1", BEFORE)
    send(late, f"concepts_{code}_r1", BEFORE)
    store.reask(code, secret)
    for p in (shown, late):
        p.run()
        send(p, f"concepts_{code}_r2", AFTER)
    store.reveal(code, secret)
    headline = own_line(shown.run())
    assert headline != []
    store.close(code, secret)
    shown.run()
    assert "This poll is closed." in texts(shown)
    assert own_line(shown) == headline  # still on her screen
    # A phone that never drew the results gets the sentence alone: nothing of the key.
    late.run()
    assert "This poll is closed." in texts(late)
    assert own_line(late) == [] and not any(t in sent_text(late) for t in KEY_TEXTS)
