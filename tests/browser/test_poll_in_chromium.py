"""A class poll in a real browser: the projector at 1920×1080 asks, three phones at 390×844
answer by tapping, the projector's count moves by itself (its fragment's timer, no reload), the
spread shows when asked, and after the reveal each phone turns to the answer by itself (its
watcher). A phone reloaded sees its answer and still counts once; the projector's address,
which carries no secret, opens the display view elsewhere. Nothing on a phone scrolls sideways.
Screenshots: ``test-artifacts/screens/poll-projector.png`` (the live tally), ``poll-phone.png``
and ``poll-display.png``."""

from __future__ import annotations

import re

import pytest

from bench.support.browser import wait_for_app

from .conftest import wait_count

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

PHONE = {"width": 390, "height": 844}
PROJECTOR = {"width": 1920, "height": 1080}


def answered(page) -> str:
    return page.get_by_text(re.compile(r"^Round 1: \d+ answers?$")).first.inner_text()


def test_a_class_answers_from_phones_and_the_projector_counts(app_in_chromium, artifacts):
    browser = app_in_chromium.context.browser
    url = app_in_chromium.url
    shots = artifacts / "screens"
    shots.mkdir(exist_ok=True)
    room = browser.new_context(viewport=PROJECTOR)
    projector = room.new_page()
    projector.goto(url + "/poll")
    projector.locator("h1", has_text="Ask the class").first.wait_for(timeout=90_000)
    wait_for_app(projector)
    # The question from pass 1 at the default text: which key does a query weigh most?
    projector.get_by_role("combobox").first.click()
    projector.get_by_role("option", name="1. Simplified self-attention").click()
    wait_for_app(projector)
    projector.get_by_role("button", name="Ask the class").click()
    projector.get_by_text("Join on your phone with the code").wait_for(timeout=60_000)
    wait_for_app(projector)
    # The presenter's own URL carries the poll and no secret (the projected address bar gives
    # nothing away; Streamlit updates the address bar a moment after the run's elements).
    projector.wait_for_function("() => location.search.includes('poll=')", timeout=15_000)
    assert "secret" not in projector.url
    code = projector.locator("h2").filter(has_text=re.compile(r"^[A-Z2-9]{6}$")).first.inner_text()
    assert answered(projector) == "Round 1: 0 answers"
    # The QR code: one image, drawn in the same run (a moment late on a busy machine, as in
    # one fresh-clone CI whose phases ran at half speed).
    wait_count(projector.locator("[data-testid='stImage'] img"), 1)

    phones = []
    for pick in ("2: ␣starts", "2: ␣starts", "4: ␣one"):
        context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
        phone = context.new_page()
        phone.goto(f"{url}/poll?join={code}")
        phone.locator("h1", has_text="Class poll").first.wait_for(timeout=60_000)
        wait_for_app(phone)
        option = phone.get_by_text(pick, exact=True)
        try:
            option.wait_for(timeout=90_000)  # a busy machine draws a phone's first page late
        except Exception:
            n = len(phones)
            phone.screenshot(path=str(shots / f"poll-phone-{n}-no-options.png"), full_page=True)
            (shots / f"poll-phone-{n}-no-options.txt").write_text(phone.inner_text("body"))
            raise
        option.tap()
        phone.get_by_role("button", name="Send my answer").tap()
        phone.get_by_text("Answer recorded (round 1).").wait_for(timeout=30_000)
        phones.append((context, phone))
        assert "secret" not in phone.url
    # The projector counted all three without a reload (its live part reruns every half second).
    projector.get_by_text("Round 1: 3 answers").wait_for(timeout=15_000)
    # A reload is a new session of the same browser: the phone sees its answer again, and a
    # second send changes it instead of counting twice.
    _, again = phones[2]
    again.reload()
    again.get_by_text(re.compile(r"^Your answer in round 1: 4: ␣one\.")).wait_for(timeout=60_000)
    again.get_by_text("2: ␣starts", exact=True).tap()
    again.get_by_role("button", name="Send my answer").tap()
    again.get_by_text("Answer changed (round 1).").wait_for(timeout=30_000)
    projector.get_by_text("Round 1: 3 answers").wait_for(timeout=15_000)
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
    projector.get_by_text("2: ␣starts — 3 (100%)").wait_for(timeout=30_000)
    projector.locator("[data-testid='stPlotlyChart'] .main-svg").first.wait_for(timeout=60_000)
    facts = projector.evaluate(
        "() => ({scroll: document.documentElement.scrollWidth, inner: window.innerWidth})"
    )
    assert facts["scroll"] <= facts["inner"], facts
    projector.screenshot(path=str(shots / "poll-projector.png"))

    _, phone = phones[0]
    wide = phone.evaluate(
        "() => ({scroll: document.documentElement.scrollWidth, inner: window.innerWidth})"
    )
    assert wide["scroll"] <= wide["inner"], wide
    phone.screenshot(path=str(shots / "poll-phone.png"), full_page=True)

    projector.get_by_role("button", name="Reveal the answer").click()
    projector.get_by_text(re.compile(r"^The answer: ")).first.wait_for(timeout=30_000)
    # Each phone turns to the answer by itself (its watcher reruns every few seconds).
    for _, phone in phones:
        phone.get_by_text(re.compile(r"^The answer: ")).first.wait_for(timeout=20_000)
    phones[0][1].screenshot(path=str(shots / "poll-phone-revealed.png"), full_page=True)
    for context, _ in phones:
        context.close()
    room.close()
