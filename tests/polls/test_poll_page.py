"""The poll page (pages/poll.py) through AppTest: the presenter asks, phones answer, the
projector counts, asks again, reveals; only the presenter's link has the controls; bad codes,
closed polls and a store that is down each get a sentence, never a traceback.

Every AppTest session runs in this process, so the page's store is this test's own
(``ui.classroom.poll_views.use_store``) and a test reads it directly to check what the page did."""

from __future__ import annotations

import base64
import json
import math
import re

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from attnviz import figures
from attnviz.classroom import poll_questions
from attnviz.classroom.polls import Created, MemoryPollStore, Refused, UnavailableStore
from attnviz.classroom.qr import qr_svg
from attnviz.core.settings import Settings
from attnviz.teach import questions as Q
from attnviz.teach.panel import Panel
from bench.support.pages import ROOT
from ui.classroom import browser_token
from ui.classroom import poll_views as poll

APP = ROOT / "app.py"
PAGE = "pages/poll.py"
TEXT = "Your journey starts with one step"
CONTROLS = ("poll_show", "poll_reask", "poll_reveal", "poll_close")
DISPLAY = "This is the poll's display: its controls are in the presenter's browser"


@pytest.fixture
def store():
    chosen = MemoryPollStore()
    poll.use_store(chosen)
    yield chosen
    poll.use_store(None)


def open_page(query: dict[str, str]) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=120)
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    at.switch_page(PAGE).run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def unescape(text: str) -> str:
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", str(text))


def texts(at: AppTest, *kinds: str) -> list[str]:
    kinds = kinds or ("markdown", "caption", "info", "warning", "error", "success", "subheader")
    out = []
    for kind in kinds:
        out += [unescape(e.value) for e in getattr(at, kind)]
    out += [str(t.value) for t in at.text]
    return [t.removeprefix("### ") for t in out]


def everything(at: AppTest) -> bytes:
    """Every element the page sent, serialised: what its browser would receive."""
    out = b""
    for node in at._tree:
        proto = getattr(node, "proto", None)
        if proto is not None and hasattr(proto, "SerializeToString"):
            out += proto.SerializeToString()
    return out


def sent_text(at: AppTest) -> str:
    """:func:`everything` as the text a student reads (Markdown escapes undone)."""
    return unescape(everything(at).decode("utf-8", "replace"))


def controls(at: AppTest) -> list[str]:
    return [b.key for b in at.button if b.key in CONTROLS]


def asked(store, question: Q.Question) -> Created:
    made = poll.open_poll(question)
    assert isinstance(made, Created), made
    return made


def presenter_of(at: AppTest) -> tuple[str, str]:
    """The code of the poll the presenter's page opened and its secret, which the session
    holds and the address does not; her browser's token opens it too."""
    assert "secret" not in at.query_params
    code = at.query_params["poll"]
    code = code[0] if isinstance(code, list) else code
    secret = at.session_state[poll.SECRETS_KEY][code]
    token = at.session_state[browser_token.TOKEN_KEY]
    assert not isinstance(poll.store().presenter_view(code, token), Refused)
    return code, secret


def presenter(made: Created) -> AppTest:
    return open_page({"poll": made.code, "secret": made.secret})


def phone(code: str, **extra: str) -> AppTest:
    return open_page({"join": code, **extra})


def mine(widgets) -> list:
    """The poll's own widgets (the sidebar has radios, sliders and number boxes too)."""
    return [w for w in widgets if str(w.key).startswith("poll_")]


def answer(at: AppTest, value) -> AppTest:
    """Fill in a phone's form and send it."""
    keys = [k for k in at.session_state if str(k).startswith("poll_") and "_r" in str(k)]
    radios, numbers, sliders = mine(at.radio), mine(at.number_input), mine(at.slider)
    if radios:
        radios[0].set_value(value)
    elif sliders and isinstance(value, tuple):
        for s, v in zip(sliders, value, strict=True):
            s.set_value(v)
    else:
        numbers[0].set_value(value)
    assert keys or radios or sliders or numbers
    next(b for b in at.button if b.label == "Send my answer").click().run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def presenting(at: AppTest) -> AppTest:
    """The presenter's start, behind its switch on /poll."""
    at.toggle(key=poll.PRESENTING_KEY).set_value(True).run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def prompt_shown(at: AppTest) -> str:
    """The question the presenter's start shows (the Markdown under "The question")."""
    assert "The question" in [h.value for h in at.subheader]
    blocks = [unescape(m.value) for m in at.main.markdown]
    (prompt,) = [b for b in blocks if b and not b.startswith("Every student")]
    return prompt


def joined_page(at: AppTest, typed: str) -> AppTest:
    """Type ``typed`` into /poll's join box and press Join."""
    at.text_input(key=poll.CODE_KEY).input(typed)
    next(b for b in at.button if b.label == "Join").click().run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def made(kind: str, page: str, text: str = TEXT, seed: int = 0, **changes) -> Q.Question:
    q = Q.make(kind, page, text, Settings().with_changes(**changes), False, seed)
    assert q is not None
    return q


# --- the presenter ----------------------------------------------------------------------
def test_asking_opens_a_poll_and_the_projector_shows_its_code_link_and_controls(store, monkeypatch):
    monkeypatch.setenv(poll.PUBLIC_URL_ENV, "http://10.0.0.5:8501/")
    at = presenting(open_page({}))
    prompt = prompt_shown(at)
    at.button(key="poll_open").click().run()
    code, secret = presenter_of(at)
    view = store.presenter_view(code, secret)
    assert not isinstance(view, Refused)
    assert view.payload["prompt"] == prompt  # the question shown before asking is the one asked
    shown = texts(at)
    assert f"## {code}" in [m.value for m in at.markdown]
    assert "Round 1: 0 answers" in " ".join(shown)
    link = f"http://10.0.0.5:8501/poll?join={code}"
    (printed,) = [h.proto.body for h in at.get("html") if "attnviz-join-link" in h.proto.body]
    assert f">{link}</div>" in printed  # printed large enough to type from the back
    assert re.search(r"font-size: (\d+)px", printed).group(1) == str(poll.JOIN_LINK_PX)
    assert poll.JOIN_LINK_PX >= 32
    assert controls(at) == list(CONTROLS)
    (qr,) = at.get("image")  # the QR code of the link, made here: an SVG in a data URL
    url = qr.proto.imgs[0].url
    assert url.startswith("data:image/svg+xml;base64,")
    drawn = base64.b64decode(url.split(",", 1)[1]).decode()
    assert re.findall(r' d="([^"]+)"', drawn) == re.findall(r' d="([^"]+)"', qr_svg(link))
    assert secret not in " ".join(shown)  # the page never prints it
    assert secret not in sent_text(at)


def test_another_question_changes_the_question(store):
    at = presenting(open_page({}))
    first = prompt_shown(at)
    at.button(key="poll_another").click().run()
    assert not at.exception
    assert prompt_shown(at) != first  # another seed: at the defaults, another question


# --- where a student lands ----------------------------------------------------------------
def test_poll_opens_on_the_join_box_with_the_presenters_start_behind_its_switch(store):
    """A student who opens "Ask the class" from the sidebar (``/poll``) gets the join box
    first, and nothing of the presenter's start until "I'm presenting" is switched on."""
    at = open_page({})
    assert [t.value for t in at.title] == ["Class poll"]
    (box,) = [t for t in at.text_input if t.key == poll.CODE_KEY]
    assert box.label == "Type the code on the projector"
    assert [b.label for b in at.button if b.label in ("Join", "Ask the class")] == ["Join"]
    assert not [b for b in at.button if b.key == "poll_open"]
    assert not [s for s in at.selectbox if s.key == "poll_from"]
    (switch,) = [t for t in at.toggle if t.key == poll.PRESENTING_KEY]
    assert switch.label == "I'm presenting" and switch.value is False
    presenting(at)
    assert [b.key for b in at.button if b.key == "poll_open"] == ["poll_open"]


@pytest.mark.parametrize(
    "typed",
    ["{code}", "{lower}", " {spaced} ", "{dashed}", "http://10.0.0.5:8501/poll?join={code}"],
)
def test_typing_the_code_joins_the_poll(store, typed):
    made_ = asked(store, made(Q.ARGMAX_KEY, "multihead", "The cat sat on the mat"))
    code = made_.code
    text = typed.format(
        code=code,
        lower=code.lower(),
        spaced=f"{code[:3]} {code[3:]}",
        dashed=f"{code[:3]}-{code[3:]}",
    )
    at = joined_page(open_page({}), text)
    assert at.query_params["join"] in (code, [code])
    assert [t.value for t in at.title] == ["Class poll"]
    assert [b.label for b in at.button if b.label == "Send my answer"] == ["Send my answer"]
    assert len(mine(at.radio)) == 1
    answer(at, 2)
    assert dict(store.presenter_view(code, made_.secret).rounds[0].counts)["2: ␣sat"] == 1


def test_a_mistyped_code_says_so_and_stays_on_the_join_box(store):
    at = joined_page(open_page({}), "K7Q")
    assert any("not a join code" in w for w in texts(at, "warning"))
    assert "join" not in at.query_params
    assert [t.key for t in at.text_input if t.key == poll.CODE_KEY] == [poll.CODE_KEY]
    at = joined_page(at, "ZZZZZZ")  # well formed, but no such poll: the phone's view says so
    assert any("There is no poll with this code" in i for i in texts(at, "info"))


# --- only the presenter -----------------------------------------------------------------
def test_a_student_link_gets_no_presenter_controls_and_the_store_refuses_a_guess(store):
    made_ = asked(store, made(Q.SCORE, "trainable"))
    guess = "A" * len(made_.secret)
    for query in (
        {"join": made_.code},
        {"join": made_.code, "secret": guess},
        {"join": made_.code, "secret": made_.secret},  # a join link ignores any secret
        {"poll": made_.code},
        {"poll": made_.code, "secret": guess},
    ):
        at = open_page(query)
        assert controls(at) == [], query
        assert not at.get("download_button"), query
        if "poll" in query:  # the display view: what the projector shows, no controls
            assert DISPLAY in " ".join(texts(at, "caption")), query
            assert "secret" not in at.query_params, query  # gone from the address bar
        if query.get("secret") != made_.secret:
            assert made_.secret not in sent_text(at), query
    for action in ("show", "reask", "reveal", "close"):
        refused = getattr(store, action)(made_.code, guess)
        assert isinstance(refused, Refused) and refused.reason == "not_allowed", action
    assert isinstance(store.presenter_view(made_.code, guess), Refused)
    assert isinstance(store.csv(made_.code, ""), Refused)
    assert store.presenter_view(made_.code, made_.secret).state.phase == "open"  # untouched


# --- phones -------------------------------------------------------------------------------
def test_phones_answer_once_per_round_and_a_second_answer_replaces_the_first(store):
    q = made(Q.ARGMAX_KEY, "multihead", "The cat sat on the mat")
    made_ = asked(store, q)
    phones = [phone(made_.code) for _ in range(3)]
    assert [[unescape(o) for o in r.options] for r in mine(phones[0].radio)] == [
        ["0: The", "1: ␣cat", "2: ␣sat", "3: ␣on", "4: ␣the", "5: ␣mat"]
    ]
    assert unescape(phones[0].markdown[0].value) == q.prompt
    for at, choice in zip(phones, (2, 2, 4), strict=True):
        answer(at, choice)
        assert "Answer recorded (round 1)." in texts(at, "success")
    answer(phones[2], 3)  # the third student changes their mind
    assert "Answer changed (round 1)." in texts(phones[2], "success")
    tally = store.presenter_view(made_.code, made_.secret).rounds[0]
    assert tally.answered == 3
    assert dict(tally.counts) == {
        "0: The": 0, "1: ␣cat": 0, "2: ␣sat": 2, "3: ␣on": 1, "4: ␣the": 0, "5: ␣mat": 0,
    }  # fmt: skip
    projector = presenter(made_)
    assert "Round 1: 3 answers" in texts(projector)
    assert [c.key for c in projector.get("plotly_chart")] == ["poll_given"]  # no spread yet
    projector.button(key="poll_show").click().run()
    (tally,) = [c for c in projector.get("plotly_chart") if c.key == "poll_tally"]
    spec = json.loads(tally.proto.spec)
    assert spec["layout"]["title"]["text"].startswith("Answers per option")  # not the heading again
    bars = spec["data"][0]
    assert bars["x"] == ["0: The", "1: ␣cat", "2: ␣sat", "3: ␣on", "4: ␣the", "5: ␣mat"]
    assert not projector.text  # the counts are the chart's: no text list repeats them
    assert not any("(67%)" in t for t in texts(projector))


def test_discuss_and_answer_again_opens_round_two(store):
    made_ = asked(store, made(Q.MASKED_ZEROS, "causal"))
    student = phone(made_.code)
    answer(student, 15)
    projector = presenter(made_)
    projector.button(key="poll_reask").click().run()
    assert "Round 2: 0 answers" in texts(projector)
    assert "Round 1: 1 answer" in " ".join(texts(projector, "caption"))
    student.run()
    assert any("Round 2" in i for i in texts(student, "info"))
    answer(student, 21)
    assert "Answer recorded (round 2)." in texts(student, "success")
    rounds = store.presenter_view(made_.code, made_.secret).rounds
    assert [(t.round, dict(t.counts)) for t in rounds] == [(1, {"15": 1}), (2, {"21": 1})]
    projector.run()
    assert [b.disabled for b in projector.button if b.key == "poll_reask"] == [True]


def test_the_reveal_shows_the_key_the_shares_and_the_true_figure(store):
    q = made(Q.SCORE, "trainable")  # a score, with "reading a column instead of a row"
    (wrong,) = [m for m in q.misconceptions if m.name == Q.COLUMN]
    made_ = asked(store, q)
    key, column = round(float(q.key), 2), round(float(wrong.answer), 2)
    phones = [phone(made_.code) for _ in range(4)]
    for at, value in zip(phones, (key, key, column, 0.5), strict=True):
        answer(at, value)
    projector = presenter(made_)
    projector.button(key="poll_reveal").click().run()
    shown = "\n".join(texts(projector))
    assert f"The answer: {key:.2f}" in shown
    assert "Round 1: 2 of 4 right (50%)" in shown
    assert (
        f"25% (1 of 4) answered as reading a column instead of a row would ({column:.2f}): "
        f"{poll_questions.explanation_of(Q.COLUMN)}"
    ) in shown
    assert not projector.text  # no text list of counts beside the chart
    # Answering has stopped: the code and link in one small line, no QR code, no big code.
    assert not projector.get("image") and not [
        m for m in projector.markdown if "## " + made_.code in m.value
    ]
    assert f"Poll {made_.code} · students joined at" in " ".join(texts(projector, "caption"))
    figures = [s for s in projector.get("plotly_chart") if s.key == "poll_figure"]
    assert len(figures) == 1  # the true figure: the raw scores, the asked row outlined
    assert "the answer" in figures[0].proto.spec
    right, column_phone, other = phones[0], phones[2], phones[3]
    for at in phones:
        at.run()
        assert f"The answer: {key:.2f}" in texts(at, "subheader")
        assert not mine(at.radio) and not mine(at.number_input)
    assert f"Your answer {key:.2f} is right." in texts(right, "success")
    assert f"Your answer {column:.2f} is not the answer." in texts(column_phone, "error")
    assert any(
        poll_questions.explanation_of(Q.COLUMN) in t for t in texts(column_phone, "markdown")
    )
    assert not any(poll_questions.explanation_of(Q.COLUMN) in t for t in texts(other, "markdown"))
    assert "2 of 4 right in round 1 (50%)." in texts(right, "caption")
    answer_after = store.answer(made_.code, "late", 1, key)
    assert isinstance(answer_after, Refused) and answer_after.reason == "revealed"


def why_of_a_score(q: Q.Question, shown: list[str]) -> float:
    """The "Why:" sentence of a score question among ``shown``, checked word for word; the
    score it states, checked against queries[q] · keys[k] worked out here from the trace."""
    main, _ = Q.traces_for(q.page, q.text, q.settings, q.book)
    queries, keys = main.queries, main.keys
    if queries.dim() == 3:
        queries, keys = queries[0], keys[0]
    assert q.query is not None and q.other is not None
    d_k = keys.shape[-1]
    dot = float(queries[q.query].double() @ keys[q.other].double())
    pattern = re.compile(
        rf"^Why: The sum of the {d_k} products queries\[{q.query}\]\[i\] · "
        rf"keys\[{q.other}\]\[i\], i = 0 to {d_k - 1}: (-?\d+\.\d{{4}})\.$"
    )
    (said,) = [float(m.group(1)) for t in shown if (m := pattern.match(t))]
    assert abs(said - dot) <= 5e-5 + 1e-6, (said, dot)
    return said


def test_after_the_reveal_each_phone_says_why_from_the_polls_own_numbers(store):
    """Every phone, right or wrong or silent, shows the key, its own verdict and the "Why:"
    sentence Predict first shows, with the poll's numbers; the projector shows it under the
    class's answers. Before the reveal, neither says it."""
    q = made(Q.SCORE, "trainable", "The cat sat on the mat")
    made_ = asked(store, q)
    key = round(float(q.key), 2)
    wrong = round(key + 1.0, 2)
    right_phone, wrong_phone, silent = (phone(made_.code) for _ in range(3))
    answer(right_phone, key)
    answer(wrong_phone, wrong)
    for at in (right_phone, wrong_phone, silent):
        assert not [t for t in texts(at) if t.startswith("Why:")]
    projector = presenter(made_)
    assert not [t for t in texts(projector) if t.startswith("Why:")]
    projector.button(key="poll_reveal").click().run()
    said = why_of_a_score(q, texts(projector, "markdown"))
    assert f"{said:.2f}" == f"{key:.2f}"  # the sentence's score is the key shown
    for at in (right_phone, wrong_phone, silent):
        at.run()
        assert not at.exception
        assert f"The answer: {key:.2f}" in texts(at, "subheader")
        assert why_of_a_score(q, texts(at, "markdown")) == said
    assert f"Your answer {key:.2f} is right." in texts(right_phone, "success")
    assert f"Your answer {wrong:.2f} is not the answer." in texts(wrong_phone, "error")
    assert "You did not answer in the last round." in texts(silent, "info")


def test_a_phone_says_why_a_key_wins_with_the_scores_of_its_row(store):
    """Which key a query weighs most: the phone's "Why:" names the winner, its score and the
    runner-up's, worked out here from X Xᵀ."""
    q = made(Q.ARGMAX_KEY, "simplified", "The cat sat on the mat")
    made_ = asked(store, q)
    student = phone(made_.code)
    wrong = next(i for i in range(len(q.choices)) if i != q.key)
    answer(student, wrong)
    store.reveal(made_.code, made_.secret)
    student.run()
    main, _ = Q.traces_for(q.page, q.text, q.settings, q.book)
    x = main.inputs.double()
    x = x[0] if x.dim() == 3 else x
    assert q.query is not None
    row = x @ x[q.query]
    besides = " besides itself" in q.prompt
    if besides:
        row[q.query] = -math.inf
    order = sorted(range(len(row)), key=lambda i: -float(row[i]))
    first, second = order[0], order[1]
    assert first == q.key
    labels = q.choices
    expected = (
        f"Why: Key {labels[first]} has the largest score in row {labels[q.query]}"
        f"{' besides itself' if besides else ''}: {float(row[first]):.4f}, against "
        f"{float(row[second]):.4f} for {labels[second]}, the next. The softmax keeps the "
        "scores' order, so it gets the largest weight."
    )
    assert f"The answer: {labels[first]}" in texts(student, "subheader")
    assert f"Your answer {labels[wrong]} is not the answer." in texts(student, "error")
    assert expected in texts(student, "markdown")


def test_a_sketched_row_shows_the_class_mean_beside_the_spread(store):
    q = made(Q.SKETCH_ROW, "simplified", seed=1)
    made_ = asked(store, q)
    a, b = phone(made_.code), phone(made_.code)
    sliders = mine(a.slider)
    assert [unescape(s.label) for s in sliders] == list(q.choices)
    even = tuple(1 / 6 for _ in range(6))
    peaked = (0.0, 0.0, 0.0, 1.0, 0.0, 0.0)
    answer(a, tuple(round(v, 2) for v in even))
    answer(b, peaked)
    projector = presenter(made_)
    projector.button(key="poll_show").click().run()
    (tally,) = [c for c in projector.get("plotly_chart") if c.key == "poll_tally"]
    spec = json.loads(tally.proto.spec)
    names = [t["name"] for t in spec["data"]]
    assert names == ["class mean", "spread (SD)"]
    mean, spread = (figures.unpacked(t["y"]) for t in spec["data"])
    # Each sketch scaled to sum to 1 first: (1/6 + 0) / 2 and (1/6 + 1) / 2 for key 3.
    assert [round(float(v), 2) for v in (mean[0], spread[0], mean[3], spread[3])] == [
        0.08, 0.08, 0.58, 0.42,
    ]  # fmt: skip
    assert not projector.text  # the chart says it: no lines repeat it


# --- what cannot be answered --------------------------------------------------------------
def test_bad_unknown_and_closed_polls_each_get_a_sentence(store):
    at = phone("abc")
    assert any("not a join code" in w for w in texts(at, "warning"))
    at = phone("ZZZZZZ")
    assert any("There is no poll with this code" in i for i in texts(at, "info"))
    made_ = asked(store, made(Q.SCORE, "trainable"))
    store.close(made_.code, made_.secret)
    at = phone(made_.code)
    assert "This poll is closed." in texts(at, "info")
    assert not mine(at.radio) and not at.get("plotly_chart")
    projector = presenter(made_)  # the presenter keeps the tally of a closed poll
    assert "Round 1: 0 answers" in texts(projector)
    assert [b.disabled for b in projector.button if b.key in CONTROLS] == [True] * 4


def test_a_store_that_is_down_says_so_and_the_lessons_keep_working():
    poll.use_store(UnavailableStore("The poll store is unavailable: polls are paused."))
    try:
        for query in ({"join": "ABCDEF"}, {"poll": "ABCDEF", "secret": "x"}):
            at = open_page(query)
            assert "The poll store is unavailable: polls are paused." in texts(at, "warning")
        at = presenting(open_page({}))
        at.button(key="poll_open").click().run()
        assert not at.exception
        assert "The poll store is unavailable: polls are paused." in texts(at, "warning")
        assert "poll" not in at.query_params
        lesson = AppTest.from_file(str(APP), default_timeout=120)
        lesson.run()
        lesson.switch_page("pages/causal-attention.py").run()
        assert not lesson.exception and lesson.get("plotly_chart")
    finally:
        poll.use_store(None)


# --- nothing leaks ------------------------------------------------------------------------
def test_until_the_reveal_a_phone_carries_neither_the_key_nor_the_hidden_numbers(store):
    q = made(Q.SCORE, "trainable")
    n = Q.read(q.page, q.text, q.settings, q.book)
    hidden = {f"{v:.4f}" for v in n.raw.flatten().tolist()} | {
        f"{v:.3f}" for v in n.raw.flatten().tolist()
    }
    key = {f"{float(q.key):.2f}", f"{float(q.key):.3f}", f"{float(q.key):.4f}"}
    made_ = asked(store, q)
    student = phone(made_.code)
    answer(student, 0.5)
    sent = sent_text(student)
    shown_in_prompt = {s for s in hidden | key if s in q.prompt}
    leaked = {s for s in (hidden | key) - shown_in_prompt if s in sent}
    assert not leaked, leaked
    assert [c.key for c in student.get("plotly_chart")] == ["poll_given"]  # the two rows only
    store.reveal(made_.code, made_.secret)
    student.run()
    after = sent_text(student)
    assert f"{float(q.key):.2f}" in after  # the check can fail: the key is there once revealed
    assert student.get("plotly_chart")


def chart_values(chart) -> list[float]:
    """Every finite number a chart the page sent draws (its traces' z, or y)."""
    spec = json.loads(chart.proto.spec)
    out: list[float] = []
    for trace in spec["data"]:
        packed = trace.get("z", trace.get("y"))
        if packed is not None:
            values = figures.unpacked(packed) if isinstance(packed, dict) else packed
            out += [float(v) for v in np.asarray(values, dtype=np.float64).flatten()]
    return [v for v in out if math.isfinite(v)]


FIGURED = {
    "which key": (
        lambda: made(Q.ARGMAX_KEY, "multihead", "The cat sat on the mat"),
        "Scores QKᵀ (blank: masked), head",
    ),
    "a score": (lambda: made(Q.SCORE, "trainable"), "queries["),
    "zeros": (lambda: made(Q.MASKED_ZEROS, "causal"), "Scores before the mask"),
    "shape": (lambda: made(Q.SPLIT_SHAPE, "multihead"), "queries[0]"),
    "sharper": (lambda: made(Q.SCALING_ENTROPY, "trainable", d_out=128), "Scores QKᵀ"),
    "sketch": (lambda: made(Q.SKETCH_ROW, "simplified", seed=1), "Scores X Xᵀ"),
    "row sum": (lambda: made(Q.DROPOUT_ROW_SUM, "causal"), "blank: the weights dropout zeroes"),
    "survivor": (lambda: made(Q.DROPOUT_SURVIVOR, "causal"), "before dropout"),
    "rises": (lambda: made(Q.SCORE_RISES, "causal"), "Scores QKᵀ (blank: masked)"),
    "ratio": (lambda: made(Q.WEIGHT_RATIO, "simplified"), "Scores X Xᵀ"),
    "scaled": (lambda: made(Q.SCALED_SCORE, "trainable"), "Scores, before the 1/√d_k"),
}


@pytest.mark.parametrize("case", list(FIGURED))
def test_every_question_shows_its_figure_and_nothing_it_hides(store, case):
    """Projector and phone draw the figure the class reasons from, before the reveal; like
    Predict first, none of its numbers is one of the hidden matrix's (nor the key)."""
    make, title = FIGURED[case]
    q = make()
    n = Q.read(q.page, q.text, q.settings, q.book)
    truth = poll_questions.reveal_figure(q, n)
    hidden: set[float] = set()
    if isinstance(truth, Panel):
        hidden = {round(float(v), 4) for v in truth.values.flatten() if math.isfinite(v) and v}
    if isinstance(q.key, float):
        hidden.add(round(q.key, 4))
    made_ = asked(store, q)
    for at in (presenter(made_), phone(made_.code)):
        drawn = [c for c in at.get("plotly_chart") if c.key == "poll_given"]
        assert len(drawn) == 1 and not [c for c in at.get("plotly_chart") if c.key == "poll_figure"]
        spec = json.loads(drawn[0].proto.spec)
        assert title in spec["layout"]["title"]["text"].replace("<br>", " ")
        shown = {round(v, 4) for v in chart_values(drawn[0]) if v}
        assert shown and not shown & hidden, sorted(shown & hidden)


def test_the_default_question_is_read_off_its_figure(store):
    """The start's first question at the sidebar's defaults (pass 3) is one a class reasons to
    from the figure both screens show: which key a query weighs most, from its row of masked
    scores (the softmax keeps their order), or how many causal weights are 0, from the unmasked
    scores (a T×T matrix whose future half the mask removes)."""
    at = presenting(open_page({}))
    at.button(key="poll_open").click().run()
    code = at.query_params["poll"]
    code = code[0] if isinstance(code, list) else code
    view = store.student_view(code)
    q = poll.question_of(view)
    assert q is not None and q.kind in (Q.ARGMAX_KEY, Q.MASKED_ZEROS) and q.page == "causal"
    (drawn,) = [c for c in at.get("plotly_chart") if c.key == "poll_given"]
    values = chart_values(drawn)
    if q.kind == Q.ARGMAX_KEY:  # row q of the masked scores: its q + 1 finite cells
        assert q.query is not None
        start = q.query * (q.query + 1) // 2
        row = values[start : start + q.query + 1]
        seen = [k for k in range(len(row)) if "besides itself" not in q.prompt or k != q.query]
        assert q.key == max(seen, key=row.__getitem__)
        return
    t = len(q.choices) if q.choices else round(len(values) ** 0.5)
    assert len(values) == t * t  # every score, none masked: the class counts
    assert q.key == t * (t - 1) // 2  # the cells above the diagonal


def test_a_number_is_right_within_what_reading_its_figure_can_miss(store):
    """A score worked out from two rows of two-decimal cells is graded within the most such
    a sum can miss (not exactly to two decimals); a row's sum after dropout likewise."""
    q = made(Q.SCORE, "trainable")
    given = poll.given_of(q)
    assert given.tolerance is not None and 0.01 <= given.tolerance <= 0.05
    made_ = asked(store, q)
    view = store.student_view(made_.code)
    assert view.answer.tolerance == given.tolerance
    near, far = round(q.key + given.tolerance, 2), round(q.key + given.tolerance + 0.02, 2)
    right, wrong = phone(made_.code), phone(made_.code)
    answer(right, near)
    answer(wrong, far)
    store.reveal(made_.code, made_.secret)
    (tally,) = store.presenter_view(made_.code, made_.secret).rounds
    assert (tally.answered, tally.right) == (2, 1)
    right.run()
    assert any("is right" in t for t in texts(right, "success"))
    label = [w.label for w in mine(wrong.number_input)]
    assert label == [] or all("±" in lab for lab in label)


# --- the presenter's question step (issue 25) ----------------------------------------------
def test_the_presenters_question_step_asks_the_class(store):
    """Presenter mode with "Predict first": a question step offers "Ask the class", which
    opens a poll on that very question and takes the presenter to its projector view."""
    from tests.app.conftest import open_app

    for step in range(1, 7):
        at = open_app({"present": "true", "predict": "true", "step": str(step)}, "causal")
        asks = [b for b in at.button if str(b.key).startswith("poll_ask_")]
        if asks:
            break
    else:
        raise AssertionError("no question step on the causal page offers Ask the class")
    prompt = next(
        unescape(m.value).removeprefix("**Predict first.** ")
        for m in at.markdown
        if "Predict first." in m.value
    )
    asks[0].click().run()
    assert not at.exception, [e.message for e in at.exception]
    code, secret = presenter_of(at)
    view = store.presenter_view(code, secret)
    assert not isinstance(view, Refused)
    assert view.payload["prompt"] == prompt  # the step's question, now the class's
    assert [t.value for t in at.title] == ["Ask the class"]
    assert controls(at) == list(CONTROLS)
    assert prompt in texts(at)
