"""A class poll in a real browser. The presenter at 1920×1080 opens ``/poll``, switches "I'm
presenting" on and asks; a laptop at 1400×1000 joins by typing the code into ``/poll``'s box, a
phone at 390×844 and a tablet at 820×1180 by the QR code's link, each in under JOIN_SECONDS on
the warm server; the projector's count moves by itself (its fragment's timer, no reload), the
spread shows when asked; a device reloaded sees its answer and still counts once, and the
projector's address (no secret in it) opens the display view elsewhere. After "Reveal" the
answer line and the true figure lie inside the
projector's first 1,080 px, with one round and six options, and with two rounds and nine.
Each device turns to the answer by itself (its watcher). Nothing on a phone scrolls sideways.
Screenshots in ``test-artifacts/screens/``: ``poll-projector.png`` (the live tally),
``poll-revealed.png`` and ``poll-revealed-two-rounds.png``, ``poll-laptop.png``,
``poll-phone.png``, ``poll-tablet.png``; the join times in ``poll-join-seconds.txt``."""

from __future__ import annotations

import re
import time

import pytest

from bench.support.browser import wait_for_app

from .conftest import wait_count

pytestmark = [pytest.mark.browser, pytest.mark.timeout(420)]

PHONE = {"width": 390, "height": 844}
TABLET = {"width": 820, "height": 1180}
LAPTOP = {"width": 1400, "height": 1000}
PROJECTOR = {"width": 1920, "height": 1080}
JOIN_SECONDS = 10.0
NINE = "The cat sat on the mat and then slept"  # nine tokens: nine options


def answered(page, round_: int = 1) -> str:
    pattern = re.compile(rf"^Round {round_}: \d+ answers?$")
    return page.get_by_text(pattern).first.inner_text()


def ask(browser, url: str, query: str = "") -> tuple[object, object, str]:
    """The presenter's projector: /poll, "I'm presenting", pass 1's question, "Ask the class".
    Returns (its context, its page, the join code)."""
    room = browser.new_context(viewport=PROJECTOR)
    projector = room.new_page()
    projector.goto(f"{url}/poll{query}")
    projector.locator("h1", has_text="Class poll").first.wait_for(timeout=90_000)
    wait_for_app(projector)
    # A student's landing: the join box first, no question of the presenter's.
    projector.get_by_label("Type the code on the projector").wait_for(timeout=30_000)
    assert projector.get_by_role("button", name="Ask the class", exact=True).count() == 0
    projector.get_by_text("I'm presenting", exact=True).click()
    projector.get_by_role("combobox").first.wait_for(timeout=60_000)
    wait_for_app(projector)
    projector.get_by_role("combobox").first.click()
    projector.get_by_role("option", name="1. Simplified self-attention").click()
    wait_for_app(projector)
    projector.get_by_role("button", name="Ask the class", exact=True).click()
    projector.get_by_text("Join with the code").wait_for(timeout=60_000)
    wait_for_app(projector)
    # The presenter's own URL carries the poll and no secret (the projected address bar gives
    # nothing away; Streamlit updates the address bar a moment after the run's elements).
    projector.wait_for_function("() => location.search.includes('poll=')", timeout=15_000)
    assert "secret" not in projector.url
    code = projector.locator("h2").filter(has_text=re.compile(r"^[A-Z2-9]{6}$")).first.inner_text()
    return room, projector, code


def join_by_link(browser, url: str, code: str, viewport: dict) -> tuple[object, object, float]:
    """A phone or tablet opening the QR code's link: (context, page, seconds to the form)."""
    context = browser.new_context(viewport=viewport, is_mobile=True, has_touch=True)
    device = context.new_page()
    start = time.perf_counter()
    device.goto(f"{url}/poll?join={code}")
    device.get_by_role("button", name="Send my answer").wait_for(timeout=60_000)
    return context, device, time.perf_counter() - start


def join_by_typing(browser, url: str, code: str) -> tuple[object, object, float]:
    """A laptop typing the code into /poll's box (lower case, as a student might) and pressing
    Enter: (context, page, seconds from opening /poll to the form)."""
    context = browser.new_context(viewport=LAPTOP)
    laptop = context.new_page()
    start = time.perf_counter()
    laptop.goto(f"{url}/poll")
    box = laptop.get_by_label("Type the code on the projector")
    box.wait_for(timeout=60_000)
    box.fill(code.lower())
    box.press("Enter")
    laptop.get_by_role("button", name="Send my answer").wait_for(timeout=60_000)
    return context, laptop, time.perf_counter() - start


def pick(device, label: str) -> None:
    option = device.get_by_test_id("stForm").get_by_text(label, exact=True)
    option.wait_for(timeout=60_000)
    option.click()
    device.get_by_role("button", name="Send my answer").click()


def reveal_positions(projector) -> dict:
    """Where the answer line and the true figure end, in px from the top of the page."""
    projector.get_by_role("button", name="Reveal the answer").click()
    projector.get_by_text(re.compile(r"^The answer: ")).first.wait_for(timeout=30_000)
    projector.locator(".st-key-poll_figure .main-svg").first.wait_for(timeout=60_000)
    wait_for_app(projector)
    return projector.evaluate(
        """() => {
        const line = [...document.querySelectorAll('h3')]
            .find(e => e.textContent.startsWith('The answer: '));
        const figure = document.querySelector('.st-key-poll_figure');
        const why = [...document.querySelectorAll('p')]
            .find(e => e.textContent.startsWith('Why: '));
        const bottom = e => e.getBoundingClientRect().bottom + window.scrollY;
        return {answer: bottom(line), figure: bottom(figure), why: why ? bottom(why) : null,
                scroll: document.documentElement.scrollWidth, inner: window.innerWidth,
                qr: document.querySelectorAll("[data-testid='stImage'] img").length};
    }"""
    )


def test_a_class_joins_from_any_device_and_the_reveal_fits_one_screen(app_in_chromium, artifacts):
    browser = app_in_chromium.context.browser
    url = app_in_chromium.url
    shots = artifacts / "screens"
    shots.mkdir(exist_ok=True)
    room, projector, code = ask(browser, url)
    assert answered(projector) == "Round 1: 0 answers"
    # The join link, large enough to type from the back of the room; its QR code beside.
    size = projector.locator(".attnviz-join-link").evaluate(
        "e => parseFloat(getComputedStyle(e).fontSize)"
    )
    assert size >= 32, size
    assert projector.locator(".attnviz-join-link").inner_text().endswith(f"/poll?join={code}")
    wait_count(projector.locator("[data-testid='stImage'] img"), 1)

    devices, seconds = [], {}
    context, laptop, seconds["laptop"] = join_by_typing(browser, url, code)
    devices.append(("laptop", context, laptop, "2: ␣starts"))
    for name, viewport, label in (("phone", PHONE, "2: ␣starts"), ("tablet", TABLET, "4: ␣one")):
        context, device, seconds[name] = join_by_link(browser, url, code, viewport)
        devices.append((name, context, device, label))
    (shots / "poll-join-seconds.txt").write_text(
        "".join(f"{name}: {s:.1f} s\n" for name, s in seconds.items()), encoding="utf-8"
    )
    assert all(s < JOIN_SECONDS for s in seconds.values()), seconds
    for name, _, device, label in devices:
        pick(device, label)
        device.get_by_text("Answer recorded (round 1).").wait_for(timeout=30_000)
        assert "secret" not in device.url
        device.screenshot(path=str(shots / f"poll-{name}.png"), full_page=True)
    # The projector counted all three without a reload (its live part reruns every half second).
    projector.get_by_text("Round 1: 3 answers").wait_for(timeout=15_000)
    # A reload is a new session of the same browser: the tablet sees its answer again, and a
    # second send changes it instead of counting twice.
    again = devices[2][2]
    again.reload()
    again.get_by_text(re.compile(r"^Your answer in round 1: 4: ␣one\.")).wait_for(timeout=60_000)
    pick(again, "2: ␣starts")
    again.get_by_text("Answer changed (round 1).").wait_for(timeout=30_000)
    projector.get_by_text("Round 1: 3 answers").wait_for(timeout=15_000)
    # Its cookies cleared, the browser still holds its token (local storage): the page takes
    # it up by itself and shows the answer again.
    again.context.clear_cookies()
    again.reload()
    again.get_by_text(re.compile(r"^Your answer in round 1: 2: ␣starts\.")).wait_for(timeout=60_000)
    assert "attnviz_browser" in {c["name"] for c in again.context.cookies()}  # set again
    # The projector's address opened in another browser: the display, without the controls.
    other = browser.new_context(viewport=PROJECTOR)
    display = other.new_page()
    display.goto(f"{url}/poll?poll={code}")
    display.get_by_text("This is the poll's display").wait_for(timeout=60_000)
    display.get_by_text("Round 1: 3 answers").wait_for(timeout=15_000)
    assert display.get_by_role("button", name="Reveal the answer").count() == 0
    wait_for_app(display)
    display.screenshot(path=str(shots / "poll-display.png"))
    other.close()
    projector.get_by_role("button", name="Show the answers").click()
    projector.locator(".st-key-poll_tally .main-svg").first.wait_for(timeout=60_000)
    projector.screenshot(path=str(shots / "poll-projector.png"))
    for _, _, device, _ in devices[1:]:
        wide = device.evaluate(
            "() => ({scroll: document.documentElement.scrollWidth, inner: window.innerWidth})"
        )
        assert wide["scroll"] <= wide["inner"], wide

    where = reveal_positions(projector)
    projector.screenshot(path=str(shots / "poll-revealed.png"))
    assert where["answer"] <= PROJECTOR["height"] and where["figure"] <= PROJECTOR["height"], where
    assert where["why"] is not None and where["why"] <= PROJECTOR["height"], where
    assert where["scroll"] <= where["inner"] and where["qr"] == 0, where  # the QR code folded
    # Each device turns to the answer by itself (its watcher reruns every few seconds), says
    # whether its answer was right, and why the key wins, as the projector says it
    # (tests/polls/test_poll_page.py checks the sentence's numbers against the scores).
    why = projector.get_by_text(re.compile(r"^Why: Key ")).first.inner_text()
    for name, _, device, _ in devices:  # all three last sent 2: ␣starts, the key
        device.get_by_text(re.compile(r"^The answer: 2: ␣starts$")).first.wait_for(timeout=20_000)
        device.get_by_text("Your answer 2: ␣starts is right.", exact=True).wait_for(timeout=10_000)
        assert device.get_by_text(why, exact=True).count() == 1, name
    devices[1][2].screenshot(path=str(shots / "poll-phone-revealed.png"), full_page=True)
    for _, context, _, _ in devices:
        context.close()
    room.close()


def test_two_rounds_of_nine_options_reveal_on_one_screen(app_in_chromium, artifacts):
    browser = app_in_chromium.context.browser
    url = app_in_chromium.url
    shots = artifacts / "screens"
    shots.mkdir(exist_ok=True)
    room, projector, code = ask(browser, url, "?text=" + NINE.replace(" ", "+"))
    context, phone, _ = join_by_link(browser, url, code, PHONE)
    tokens = ["The", *(f"␣{w}" for w in NINE.split()[1:])]
    for i, token in enumerate(tokens):  # nine options, one per token
        phone.get_by_test_id("stForm").get_by_text(f"{i}: {token}", exact=True).wait_for(
            timeout=30_000
        )
    pick(phone, "3: ␣on")
    phone.get_by_text("Answer recorded (round 1).").wait_for(timeout=30_000)
    projector.get_by_text("Round 1: 1 answer").wait_for(timeout=15_000)
    projector.get_by_role("button", name="Discuss and answer again").click()
    projector.get_by_text("Round 2: 0 answers").wait_for(timeout=30_000)
    phone.get_by_text(re.compile("^Round 2: talk it over")).wait_for(timeout=30_000)
    pick(phone, "5: ␣mat")
    phone.get_by_text("Answer recorded (round 2).").wait_for(timeout=30_000)
    projector.get_by_text("Round 2: 1 answer").wait_for(timeout=15_000)
    where = reveal_positions(projector)
    projector.screenshot(path=str(shots / "poll-revealed-two-rounds.png"))
    rounds = projector.get_by_text(
        re.compile(r"^Round 1: \d of 1 right .* · Round 2: \d of 1 right")
    )
    assert rounds.count() == 1
    assert where["answer"] <= PROJECTOR["height"] and where["figure"] <= PROJECTOR["height"], where
    context.close()
    room.close()
