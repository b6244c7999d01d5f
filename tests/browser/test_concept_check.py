"""The concept check in a real browser (issue 37, "Did the class learn it?").

A class: the presenter at 1920×1080 opens it on ``/concept-check``; a phone at 390×844 joins by
the QR code's link, a laptop at 1400×1000 by typing the code into ``/poll``'s box (which sends
it on to ``/concept-check``); both answer the check before the lesson, the presenter starts the
check after, both answer again, the presenter shows the results. Checked as a user sees them:
the counts answered, the overall line and the per-question rows (right before and after, Hake's
gain, the wrong answer picked most) equal what the two students sent, computed here from their
picks; all of the results (the overall line, the chart, every row of the table, the folded
right answers) lie inside the projector's first 1,080 px; each student sees her own before and
after; a reload keeps a student's answers and counts her once; and until the results nothing
on the wire or on the page tells which option is right.

A student alone at 390×844: the check before, a reload (her answers come back, the after check
in the same order), the check after, her own before, after and gain; with her cookies cleared a
reload still finds them (the browser's local storage), and after "Start again" it finds none.

On every phone screen no text is under 11 px and none runs past the right edge outside a
container that scrolls. Screenshots in ``test-artifacts/screens/concept-*.png``.
"""

from __future__ import annotations

import os
import re
import socket
from fractions import Fraction

import pytest

from attnviz.classroom.polls import Answered
from attnviz.classroom.redis_store import RedisPollStore
from attnviz.teach import concepts as C
from bench.support.browser import settle, wait_for_app
from bench.support.network import proxy_env
from bench.support.redis_server import RedisServer
from bench.support.server import running_app

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]

PHONE = {"width": 390, "height": 844}
LAPTOP = {"width": 1400, "height": 1000}
PROJECTOR = {"width": 1920, "height": 1080}
K = len(C.ITEMS)
MIN_PX = 11
# What each student picks, per question, in canonical indices (0 is the right answer): some
# questions rise, one falls from half right to none, one everybody knew before.
PICKS = {
    ("phone", "before"): (0, 0, 0, 0, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1),
    ("laptop", "before"): (0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2),
    ("phone", "after"): (0, 0, 0, 2, 0, 3, 0, 0, 0, 0, 1, 1, 2, 3),
    ("laptop", "after"): (0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1),
}
# Everything that would tell which option is right: every answer's reason, every wrong
# option's misconception and explanation.
KEY_TEXTS = [item.answer.explanation for item in C.ITEMS] + [
    text for item in C.ITEMS for w in item.wrong for text in (w.misconception, w.explanation)
]


# --- what the students sent, graded here --------------------------------------------------------
def percent(share: Fraction) -> str:
    return f"{round(100 * share)}%"


def right(student: str, round_: str) -> int:
    return sum(p == 0 for p in PICKS[(student, round_)])


def gain(pre: Fraction, post: Fraction) -> str:
    return "—" if pre == 1 else f"{float((post - pre) / (1 - pre)):.2f}"


def own_headline(student: str) -> str:
    before, after = right(student, "before"), right(student, "after")
    pre, post = Fraction(before, K), Fraction(after, K)
    return (
        f"Before: {before} of {K} right ({percent(pre)}); after: {after} of {K} "
        f"({percent(post)}). Your normalized gain g = {gain(pre, post)}."
    )


def class_rows(
    before: list[tuple[int, ...]] | None = None, after: list[tuple[int, ...]] | None = None
) -> list[list[str]]:
    """The projector's table as it should read, for every student's picks in each round
    (default: the phone's and the laptop's): #, topic, right before, right after, g, the
    wrong answer picked most after (a tie: the first listed)."""
    rounds = {
        "before": before or [PICKS[(s, "before")] for s in ("phone", "laptop")],
        "after": after or [PICKS[(s, "after")] for s in ("phone", "laptop")],
    }
    n = {r: len(a) for r, a in rounds.items()}
    rows = []
    for i, item in enumerate(C.ITEMS):
        picks = {r: [a[i] for a in answers] for r, answers in rounds.items()}
        pre, post = (Fraction(picks[r].count(0), n[r]) for r in ("before", "after"))
        wrong = [p for p in picks["after"] if p != 0]
        top = ""
        if wrong:
            most = max(wrong.count(p) for p in wrong)
            first = min(p for p in wrong if wrong.count(p) == most)
            top = f"{item.options[first].misconception} ({most})"
        rows.append(
            [
                str(i + 1),
                item.topic,
                f"{picks['before'].count(0)} of {n['before']} ({percent(pre)})",
                f"{picks['after'].count(0)} of {n['after']} ({percent(post)})",
                gain(pre, post),
                top,
            ]
        )
    right_in = {r: sum(p == 0 for a in answers for p in a) for r, answers in rounds.items()}
    pre, post = (Fraction(right_in[r], K * n[r]) for r in ("before", "after"))
    rows.append(
        [
            "all",
            "every question",
            f"{right_in['before']} of {K * n['before']} ({percent(pre)})",
            f"{right_in['after']} of {K * n['after']} ({percent(post)})",
            gain(pre, post),
            "",
        ]
    )
    return rows


def class_summary(rows: list[list[str]] | None = None) -> str:
    *_, (_, _, before, after, g, _) = rows or class_rows()
    students = [int(line.split(" of ")[1].split(" ")[0]) // K for line in (before, after)]
    return (
        f"Right before: {before}; after: {after} ({students[0]} before, {students[1]} after). "
        f"Normalized gain ⟨g⟩ = {g}."
    )


# --- the browser ---------------------------------------------------------------------------------
class Wire:
    """Every websocket frame a tab receives, as text (protobuf strings are UTF-8)."""

    def __init__(self, page) -> None:
        self.frames: list[str] = []
        page.on("websocket", lambda ws: ws.on("framereceived", self._keep))

    def _keep(self, payload) -> None:
        raw = payload if isinstance(payload, bytes) else payload.encode()
        # Markdown escapes (md_escape) undone: the text as the student reads it.
        self.frames.append(re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", raw.decode("utf-8", "replace")))

    def key_texts(self) -> list[str]:
        seen = "".join(self.frames)
        return [t for t in KEY_TEXTS if t in seen]


def shot(page, path) -> None:
    """The whole page (Streamlit scrolls its main block inside the window: the window is
    grown to it for the picture, then set back)."""
    size = page.viewport_size
    height = page.evaluate("() => document.querySelector(\"[data-testid='stMain']\").scrollHeight")
    page.set_viewport_size({"width": size["width"], "height": max(height, size["height"])})
    page.wait_for_timeout(400)
    page.screenshot(path=str(path))
    page.set_viewport_size(size)


# Every text in the main area as drawn: its font size, and whether it runs past the window's
# right edge with no container between it and the page that scrolls sideways.
READABLE = """() => {
  const main = document.querySelector("[data-testid='stMainBlockContainer']");
  const width = document.documentElement.clientWidth;
  const scrolls = (e) => {
    for (let a = e; a && a !== main; a = a.parentElement) {
      if (['auto', 'scroll'].includes(getComputedStyle(a).overflowX)) return true;
    }
    return false;
  };
  const small = [], cut = [];
  const walk = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    const text = n.textContent.trim();
    const e = n.parentElement;
    if (!text || !e || !e.getClientRects().length) continue;
    const style = getComputedStyle(e);
    if (style.visibility === 'hidden') continue;
    const range = document.createRange();
    range.selectNodeContents(n);
    const box = range.getBoundingClientRect();
    if (box.width === 0 || box.height === 0) continue;
    if (parseFloat(style.fontSize) < MIN) small.push([text.slice(0, 40), style.fontSize]);
    if ((box.right > width + 0.5 || box.left < -0.5) && !scrolls(e)) {
      cut.push([text.slice(0, 40), Math.round(box.right)]);
    }
  }
  return {small: small, cut: cut, page: document.documentElement.scrollWidth, inner: width};
}""".replace("MIN", str(MIN_PX))


def assert_readable_on_the_phone(page, where: str) -> None:
    wait_for_app(page)
    found = page.evaluate(READABLE)
    assert not found["small"], (where, found["small"][:5])
    assert not found["cut"], (where, found["cut"][:5])
    assert found["page"] <= found["inner"], (where, found)


def answer(page, picks: tuple[int, ...]) -> None:
    """Pick each question's option by its text (each student sees her own order), send."""
    form = page.get_by_test_id("stForm")
    radios = form.get_by_test_id("stRadio")
    radios.first.wait_for(timeout=60_000)
    assert radios.count() == K
    for i, (item, pick) in enumerate(zip(C.ITEMS, picks, strict=True)):
        radios.nth(i).get_by_text(item.options[pick].text, exact=True).click()
    page.get_by_role("button", name="Send my answers").click()
    page.get_by_text(re.compile(r"^Your answers (are in|before are saved)")).wait_for(
        timeout=30_000
    )
    wait_for_app(page)


def answer_positions(page) -> list[int]:
    """Where each question's right answer stands among its options on this page."""
    positions = []
    radios = page.get_by_test_id("stForm").get_by_test_id("stRadio")
    for i, item in enumerate(C.ITEMS):
        shown = [t.strip() for t in radios.nth(i).locator("label").all_inner_texts()]
        positions.append(shown.index(item.answer.text))
    return positions


def answered(projector, line: str) -> None:
    projector.get_by_role("heading", name=line, exact=True).wait_for(timeout=30_000)


def open_check(browser, url: str) -> tuple[object, object, str]:
    room = browser.new_context(viewport=PROJECTOR)
    projector = room.new_page()
    projector.goto(f"{url}/concept-check")
    projector.get_by_role("button", name="Start a class concept check").click(timeout=90_000)
    code_heading = projector.locator("h2").filter(has_text=re.compile(r"^[A-Z2-9]{6}$")).first
    code_heading.wait_for(timeout=60_000)
    wait_for_app(projector)
    projector.wait_for_function("() => location.search.includes('poll=')", timeout=15_000)
    assert "secret" not in projector.url
    return room, projector, code_heading.inner_text()


def show_results(projector, code: str, rows: list[list[str]], shots) -> None:
    """Press "Show the results" and check what the projector says against ``rows`` (the
    table as it should read): the counts, the overall line, the table, the chart's bars, and
    all of it (the overall line, the chart, the table's last row, the folded right answers)
    inside the first 1,080 px, with nothing below to scroll to. Screenshots: ``shots``.png (the
    screen) and ``shots``-all.png (the whole page)."""
    projector.get_by_role("button", name="Show the results").click()
    summary = projector.get_by_role("heading", name=class_summary(rows), exact=True)
    summary.wait_for(timeout=30_000)
    projector.locator(".st-key-concepts_chart .main-svg").first.wait_for(timeout=60_000)
    settle(projector, "Did the class learn it?")
    projector.screenshot(path=f"{shots}.png")
    shot(projector, f"{shots}-all.png")
    students = [int(rows[0][c].split(" of ")[1].split(" ")[0]) for c in (2, 3)]
    counts = f"Before the lesson: {students[0]} answered · After the lesson: {students[1]} answered"
    assert projector.get_by_text(f"Check {code} · {counts}", exact=True).is_visible()
    table = projector.locator("[data-testid='stTable'] tbody tr").evaluate_all(
        "rows => rows.map(r => [...r.querySelectorAll('th, td')].map(c => c.innerText.trim()))"
    )
    assert table == rows
    bars = projector.locator(".st-key-concepts_chart .js-plotly-plot").evaluate(
        "gd => gd._fullData.map(t => [t.name, Array.from(t.y).map(v => Math.round(v))])"
    )

    def share(line: str) -> int:  # "31 of 50 (62%)": 62, from the counts
        right, of = line.split(" (")[0].split(" of ")
        return round(100 * Fraction(int(right), int(of)))

    assert bars == [
        ["before", [share(row[2]) for row in rows]],
        ["after", [share(row[3]) for row in rows]],
    ]
    # One screen: the overall line, the chart, every row of the table (the overall row last)
    # and the folded right answers, with nothing below them to scroll to.
    bottoms = projector.evaluate(
        """() => {
        const bottom = (e) => e.getBoundingClientRect().bottom;
        const line = [...document.querySelectorAll('h3')]
            .find(e => e.textContent.startsWith('Right before: '));
        const rows = [...document.querySelectorAll("[data-testid='stTable'] tbody tr")];
        // Everything drawn in the main area: each element (hidden ones have no box), the
        // folded box of right answers as it stands closed (what it holds is not shown).
        const main = document.querySelector("[data-testid='stMainBlockContainer']");
        const drawn = [...main.querySelectorAll("[data-testid='stElementContainer']")]
            .filter(e => !e.closest("[data-testid='stExpander']"))
            .concat([...main.querySelectorAll("[data-testid='stExpander']")])
            .map(e => e.getBoundingClientRect()).filter(r => r.height > 0);
        return {line: bottom(line), chart: bottom(document.querySelector('.st-key-concepts_chart')),
                rows: rows.length, last_row: bottom(rows[rows.length - 1]),
                answers: bottom(document.querySelector("[data-testid='stExpander']")),
                content: Math.max(...drawn.map(r => r.bottom)),
                scroll: document.documentElement.scrollWidth, inner: innerWidth};
    }"""
    )
    assert bottoms["rows"] == len(rows), bottoms
    for part in ("line", "chart", "last_row", "answers", "content"):
        assert bottoms[part] <= PROJECTOR["height"], (part, bottoms)
    assert bottoms["scroll"] <= bottoms["inner"], bottoms


def test_a_class_takes_the_check_before_and_after_and_sees_its_gain(app_in_chromium, artifacts):
    browser = app_in_chromium.context.browser
    url = app_in_chromium.url
    shots = artifacts / "screens"
    shots.mkdir(exist_ok=True)
    room, projector, code = open_check(browser, url)
    answered(projector, "Before the lesson: 0 answered")
    join = projector.locator(".attnviz-join-link")
    assert join.inner_text().endswith(f"/concept-check?join={code}")
    assert join.evaluate("e => parseFloat(getComputedStyle(e).fontSize)") >= 32
    shot(projector, shots / "concept-projector-open.png")

    phone_room = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    phone = phone_room.new_page()
    phone_wire = Wire(phone)
    phone.goto(f"{url}/concept-check?join={code}")
    laptop_room = browser.new_context(viewport=LAPTOP)
    laptop = laptop_room.new_page()
    laptop_wire = Wire(laptop)
    laptop.goto(f"{url}/poll")
    box = laptop.get_by_label("Type the code on the projector")
    box.fill(code.lower(), timeout=60_000)
    box.press("Enter")
    laptop.get_by_role("button", name="Send my answers").wait_for(timeout=60_000)
    assert laptop.url.endswith(f"/concept-check?join={code}")
    phone.get_by_role("button", name="Send my answers").wait_for(timeout=60_000)
    devices = {"phone": phone, "laptop": laptop}
    for device in devices.values():
        settle(device, "Concept check", min_charts=0)
    # Each sees the options in an order of her own: the right one is not at one place.
    where = {name: answer_positions(device) for name, device in devices.items()}
    assert where["phone"] != where["laptop"] and len(set(where["phone"])) > 1, where
    assert_readable_on_the_phone(phone, "the check before")
    shot(phone, shots / "concept-phone-before.png")
    shot(laptop, shots / "concept-laptop-before.png")

    for name, device in devices.items():
        answer(device, PICKS[(name, "before")])
    answered(projector, "Before the lesson: 2 answered")
    # A reload is the same browser: her answers stay in, the form does not come back, and the
    # projector still counts two.
    phone.reload()
    phone.get_by_text("Your answers are in.", exact=False).wait_for(timeout=60_000)
    wait_for_app(phone)
    assert phone.get_by_role("button", name="Send my answers").count() == 0
    assert_readable_on_the_phone(phone, "answers in")
    shot(phone, shots / "concept-phone-sent.png")
    answered(projector, "Before the lesson: 2 answered")
    shot(projector, shots / "concept-projector-before.png")

    projector.get_by_role("button", name="Start the after check").click()
    answered(projector, "Before the lesson: 2 answered · After the lesson: 0 answered")
    for device in devices.values():  # each phone turns to the after check by itself
        device.get_by_role("heading", name="After the lesson").wait_for(timeout=30_000)
        device.get_by_role("button", name="Send my answers").wait_for(timeout=30_000)
        settle(device, "Concept check", min_charts=0)
    assert answer_positions(phone) != where["phone"]  # another order for the second round
    for name, device in devices.items():
        answer(device, PICKS[(name, "after")])
    laptop.reload()
    laptop.get_by_text("Your answers are in.", exact=False).wait_for(timeout=60_000)
    answered(projector, "Before the lesson: 2 answered · After the lesson: 2 answered")
    # Until the results, nothing tells which option is right: not on the wire, not on the
    # projector (which shows no option at all).
    for name, wire in (("phone", phone_wire), ("laptop", laptop_wire)):
        assert wire.frames and not wire.key_texts(), (name, wire.key_texts()[:3])
    shown = projector.locator("[data-testid='stMain']").inner_text()
    assert not [item.answer.text for item in C.ITEMS if item.answer.text in shown]

    show_results(projector, code, class_rows(), shots / "concept-projector-results")

    # Each student's page turns to her own before and after by itself.
    for name, device in devices.items():
        device.get_by_role("heading", name=own_headline(name), exact=True).wait_for(timeout=30_000)
        device.get_by_text("The class. " + class_summary(), exact=True).wait_for(timeout=10_000)
    assert_readable_on_the_phone(phone, "her results")
    shot(phone, shots / "concept-phone-results.png")
    shot(laptop, shots / "concept-laptop-results.png")
    assert phone_wire.key_texts()  # now the reasons are there: the search above could fail
    # Closing the check leaves each student the results she was reading.
    projector.get_by_role("button", name="Close the check").click()
    phone.get_by_text("This poll is closed.", exact=True).wait_for(timeout=30_000)
    wait_for_app(phone)
    assert phone.get_by_role("heading", name=own_headline("phone"), exact=True).is_visible()
    shot(phone, shots / "concept-phone-closed.png")
    for context in (phone_room, laptop_room, room):
        context.close()


def test_a_student_alone_sees_her_own_before_and_after_on_a_phone(app_in_chromium, artifacts):
    browser = app_in_chromium.context.browser
    shots = artifacts / "screens"
    shots.mkdir(exist_ok=True)
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    phone = context.new_page()
    wire = Wire(phone)
    phone.goto(f"{app_in_chromium.url}/concept-check")
    phone.get_by_role("button", name="Send my answers").wait_for(timeout=90_000)
    settle(phone, "Did I learn it?", min_charts=0)
    assert_readable_on_the_phone(phone, "alone, before")
    shot(phone, shots / "concept-alone-before.png")
    answer(phone, PICKS[("phone", "before")])
    phone.get_by_role("heading", name="After the lesson").wait_for(timeout=30_000)
    # A reload is a new session: her browser brings her answers back (its cookie), the after
    # check waits, its options in the order she would have seen without the reload.
    order = answer_positions(phone)
    phone.reload()
    phone.get_by_text(f"Your answers before are saved ({K} of {K})", exact=False).wait_for(
        timeout=60_000
    )
    phone.get_by_role("heading", name="After the lesson").wait_for(timeout=30_000)
    settle(phone, "Did I learn it?", min_charts=0)
    assert answer_positions(phone) == order
    assert_readable_on_the_phone(phone, "alone, after")
    shot(phone, shots / "concept-alone-after.png")
    assert not wire.key_texts()
    answer_picks = PICKS[("phone", "after")]
    form = phone.get_by_test_id("stForm").get_by_test_id("stRadio")
    for i, (item, pick) in enumerate(zip(C.ITEMS, answer_picks, strict=True)):
        form.nth(i).get_by_text(item.options[pick].text, exact=True).click()
    phone.get_by_role("button", name="Send my answers").click()
    phone.get_by_role("heading", name=own_headline("phone"), exact=True).wait_for(timeout=30_000)
    settle(phone, "Did I learn it?", min_charts=0)
    assert_readable_on_the_phone(phone, "alone, her results")
    # Where her last answer was wrong the box is open, with the mistaken idea behind it.
    wrong = C.ITEMS[5].options[3]
    phone.get_by_text(
        f"Your answer after, “{wrong.text}”: {wrong.misconception}. {wrong.explanation}",
        exact=True,
    ).wait_for(timeout=10_000)
    shot(phone, shots / "concept-alone-results.png")
    # Her cookies cleared, the browser's local storage still holds her answers: the page
    # asks it and shows her results again, and sets the cookie again.
    context.clear_cookies()
    phone.reload()
    phone.get_by_role("heading", name=own_headline("phone"), exact=True).wait_for(timeout=60_000)
    assert "attnviz_concepts" in {c["name"] for c in context.cookies()}
    # "Start again" clears them: a reload then opens on the check before.
    phone.get_by_role("button", name="Start again").click()
    phone.get_by_role("heading", name="Before the lesson").wait_for(timeout=30_000)
    wait_for_app(phone)
    phone.reload()
    phone.get_by_role("heading", name="Before the lesson").wait_for(timeout=60_000)
    wait_for_app(phone)
    assert phone.get_by_role("heading", name=own_headline("phone"), exact=True).count() == 0
    context.close()


# --- a class of 50 -------------------------------------------------------------------------------
CLASS = 50
# How many of the 50 get each question right, before and after: one nobody knew, one everybody
# knew before, one that fell, one unchanged, the rest rising.
RIGHT_BEFORE = (10, 20, 25, 50, 0, 5, 12, 30, 40, 45, 15, 18, 22, 35)[:K]
RIGHT_AFTER = (40, 30, 25, 50, 50, 5, 30, 45, 40, 20, 35, 38, 40, 49)[:K]
ALL_RIGHT = tuple(C.KEY for _ in range(K))
REDIS_PORTS = range(6370, 6380)


def class_picks(student: int, right_counts: tuple[int, ...]) -> tuple[int, ...]:
    """Right on question i when she is among its first right_counts[i]; otherwise one of its
    wrong options (the three in turn across the class)."""
    return tuple(0 if student < right_counts[i] else 1 + (student + i) % 3 for i in range(K))


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@pytest.fixture(scope="module")
def class_server(blackhole, app_in_chromium):
    """A second server whose polls live in a redis-server on 127.0.0.1 (the first free port of
    6370-6379), and a store on the same Redis: the test answers for 50 phones through it, as
    their sessions would."""
    redis = None
    for port in REDIS_PORTS:
        if not _free(port):
            continue
        candidate = RedisServer(port)
        try:
            redis = candidate.start()
            break
        except RuntimeError:
            candidate.close()
    if redis is None:
        pytest.skip("no free port in 6370-6379 for redis-server")
    env = {**proxy_env(blackhole), "ATTNVIZ_REDIS_URL": redis.url}
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        env["TIKTOKEN_CACHE_DIR"] = os.environ["TIKTOKEN_CACHE_DIR"]
    store = RedisPollStore.from_url(redis.url)
    try:
        with running_app(env=env) as (url, _proc):
            warm = app_in_chromium.context.new_page()  # the root first (see conftest.py)
            warm.goto(url + "/")
            settle(warm, "Attention, step by step")
            warm.close()
            yield url, store
    finally:
        store.client.close()
        redis.close()


def class_answers(projector, store, code: str, who: str, before, after) -> None:
    """The class's phones answer both rounds through the store while the projector counts them
    live, without a reload; the lecturer starts the after check between the two."""
    answered(projector, "Before the lesson: 0 answered")
    for s, picks in enumerate(before):
        assert isinstance(store.answer(code, f"{who}-{s:02d}", 1, list(picks)), Answered)
    answered(projector, f"Before the lesson: {CLASS} answered")
    projector.get_by_role("button", name="Start the after check").click()
    answered(projector, f"Before the lesson: {CLASS} answered · After the lesson: 0 answered")
    for s, picks in enumerate(after):
        assert isinstance(store.answer(code, f"{who}-{s:02d}", 2, list(picks)), Answered)
    answered(projector, f"Before the lesson: {CLASS} answered · After the lesson: {CLASS} answered")


def test_a_class_of_50_sees_its_gain_on_one_screen(class_server, app_in_chromium, artifacts):
    url, store = class_server
    shots = artifacts / "screens"
    shots.mkdir(exist_ok=True)
    room, projector, code = open_check(app_in_chromium.context.browser, url)
    before = [class_picks(s, RIGHT_BEFORE) for s in range(CLASS)]
    after = [class_picks(s, RIGHT_AFTER) for s in range(CLASS)]
    class_answers(projector, store, code, "phone", before, after)
    rows = class_rows(before, after)
    assert rows[3][4] == "—" and rows[9][4] == "-5.00"  # all right before; a fall
    show_results(projector, code, rows, shots / "concept-projector-50")
    room.close()


def test_the_longest_wrong_answers_still_fit_one_screen(class_server, app_in_chromium, artifacts):
    """The table's widest case: after the lesson, half the class picks each question's wrong
    option with the longest misconception, so every row names one; still one screen."""
    url, store = class_server
    shots = artifacts / "screens"
    shots.mkdir(exist_ok=True)
    longest = tuple(
        max(range(1, len(item.options)), key=lambda o: len(item.options[o].misconception or ""))
        for item in C.ITEMS
    )
    before = [longest for _ in range(CLASS)]
    after = [ALL_RIGHT if s % 2 else longest for s in range(CLASS)]
    room, projector, code = open_check(app_in_chromium.context.browser, url)
    class_answers(projector, store, code, "long", before, after)
    rows = class_rows(before, after)
    assert all(row[5].endswith(f"({CLASS // 2})") for row in rows[:-1])  # every row names one
    show_results(projector, code, rows, shots / "concept-projector-longest")
    room.close()
