"""Predict first and Spot the bug in a real browser: before the answer, neither the page's text
nor the numbers any chart holds for its hover (what Plotly would print at 3 or 4 decimals)
carry a hidden number, and the URL carries no key; clicking the key's token and "Check my
answer" reveals them, marked. A mystery names no bug until the diagnosis. Screenshots of a
question before and after its answer, at 1400 and 390 px: ``test-artifacts/screens/``."""

from __future__ import annotations

import pytest

from attnviz.teach import bugs
from attnviz.teach import mystery as MY
from attnviz.teach import questions as Q
from bench.support.browser import settle, wait_for_app
from tests.predict.pages import Setting, found_strings, question, secret

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

TITLE = "1. Simplified self-attention"
LINK = "/simplified-attention?predict=true"

# Everything a student's browser holds: the page's text, and every number of every chart's
# data (Plotly's hover prints these), each as Plotly would print it at 3 and 4 decimals.
DOM = """() => {
    const numbers = [];
    const TYPES = {f4: Float32Array, f8: Float64Array, i1: Int8Array, u1: Uint8Array,
                   i2: Int16Array, u2: Uint16Array, i4: Int32Array, u4: Uint32Array};
    const decode = o => {
        const bytes = Uint8Array.from(atob(o.bdata), c => c.charCodeAt(0));
        return new TYPES[o.dtype](bytes.buffer);
    };
    const walk = v => {
        if (v == null) return;
        if (typeof v === 'number') { if (isFinite(v)) numbers.push(v); return; }
        if (ArrayBuffer.isView(v)) { for (const x of v) if (isFinite(x)) numbers.push(x); return; }
        if (Array.isArray(v)) { for (const x of v) walk(x); return; }
        if (typeof v === 'object' && typeof v.bdata === 'string') walk(decode(v));
    };
    let charts = 0;
    for (const gd of document.querySelectorAll('.js-plotly-plot')) {
        charts += 1;
        for (const t of [...(gd.data || []), ...(gd._fullData || [])]) {
            for (const k of ['z', 'x', 'y', 'customdata', 'text']) walk(t[k]);
        }
    }
    return {text: document.body.innerText, numbers, charts};
}"""


def held(page) -> str:
    found = page.evaluate(DOM)
    assert found["charts"] == 0 or found["numbers"], "no chart numbers read"
    printed = " ".join(f"{v:.3f} {v:.4f}" for v in found["numbers"])
    return found["text"] + "\n" + printed


def _shoot(page, artifacts, name: str, box: str) -> None:
    """A screenshot of the question's box (``predict_box``) or its answer's."""
    shots = artifacts / "screens"
    shots.mkdir(exist_ok=True)
    found = page.locator(f"[class*='st-key-{box}_']").first
    found.scroll_into_view_if_needed()
    found.screenshot(path=str(shots / name))


@pytest.mark.parametrize("width", [1400, 390])
def test_a_question_hides_its_numbers_in_the_browser_until_answered(
    page, app_in_chromium, artifacts, width
):
    s = Setting.of("simplified", {})
    q = question(s, 0)
    assert q is not None and q.answer_format in (Q.TOKEN, Q.CHOICE)
    said = q.choices[q.key] if q.answer_format == Q.TOKEN else str(q.key)  # the key in words
    hidden = secret(s, q)
    assert len(hidden.strings) >= 20
    page.set_viewport_size({"width": width, "height": 3000})
    page.goto(app_in_chromium.url + LINK)
    settle(page, TITLE)
    page.get_by_text("Check my answer").first.wait_for(timeout=60_000)
    assert found_strings(held(page), hidden.strings) == set()
    assert "predict=true" in page.url
    for leak in (said, said.replace(" ", "+"), "answer", "key="):
        assert leak not in page.url, page.url
    _shoot(page, artifacts, f"predict-before-{width}.png", "predict_box")

    if q.answer_format == Q.TOKEN:
        pill = page.locator("[data-testid='stButtonGroup'] button", has_text=said)
        pill.first.click()
    else:  # a choice: its radio option, by its words
        page.locator("[data-testid='stRadio'] label", has_text=said).first.click()
    page.get_by_role("button", name="Check my answer").click()
    page.get_by_text("Right:").first.wait_for(timeout=60_000)
    wait_for_app(page)
    settle(page, TITLE)
    shown = found_strings(held(page), hidden.strings)
    assert len(shown) >= 0.9 * len(hidden.strings)
    for leak in (said, said.replace(" ", "+"), "answer", "key="):
        assert leak not in page.url, page.url
    _shoot(page, artifacts, f"predict-after-{width}.png", "predict_answer")
    overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0


def test_a_mystery_names_no_bug_in_the_browser_until_diagnosed(page, app_in_chromium, artifacts):
    text = "Your journey starts with one step"
    s = Setting.of("causal", {"text": text})
    m = MY.pose("causal", text, s.settings, False, 0)
    assert m is not None and m.answer != MY.NONE
    bug = bugs.BUGS_BY_KEY[m.answer]
    secrets = (bug.key, bug.symptom, bug.replacement.strip(), m.reveal.summary)
    page.set_viewport_size({"width": 1400, "height": 3000})
    page.goto(app_in_chromium.url + "/causal-attention?mystery=true")
    settle(page, "3. Causal attention and dropout")
    page.get_by_text("Your diagnosis").first.wait_for(timeout=60_000)
    before = held(page)
    for secret_text in secrets:
        assert secret_text not in before, secret_text
        assert secret_text not in page.url
    assert before.count(m.reveal.title) == 1  # one choice among all
    page.get_by_text("Your diagnosis").first.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "screens" / "mystery-before-1400.png"))
    page.get_by_text(m.reveal.title, exact=True).first.click()
    page.get_by_role("button", name="Diagnose").click()
    page.get_by_text(f"Right: {m.reveal.title}.").first.wait_for(timeout=60_000)
    wait_for_app(page)
    # The diff is a code block whose highlighter loads after the run: wait until the page is
    # drawn and quiet (a CI run read it while the block was still a loading placeholder).
    settle(page, "3. Causal attention and dropout")
    page.get_by_text("The one line that changed").first.wait_for(timeout=60_000)
    after = held(page)
    assert bug.replacement.strip() in after  # the one-line diff the engine ran
    page.get_by_text("The one line that changed").first.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "screens" / "mystery-after-1400.png"))
