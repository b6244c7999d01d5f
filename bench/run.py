"""The benchmark suite: one command, loopback only, writes bench/results.md.

    .venv/bin/python bench/run.py            # everything (a few minutes)
    .venv/bin/python bench/run.py --skip-browser

1. Page rerun time (AppTest, median of 5 reruns after a warm-up) for every page at the default
   settings, in book mode and at GPT-2-small settings with 64 and 256 tokens; the bytes of figure
   data each page sends; the same for a one-heatmap reference app, measured in the same run.
2. Engine cost at the book's bonus-benchmark shape with batch 1 (1024 tokens, 768 wide, 12 heads):
   the traced MultiHeadAttention forward against the plain chapter-style forward and against
   page 6's SDPA implementation (attnviz.models.implementations.SDPA: one combined QKV projection,
   then scaled_dot_product_attention), interleaved, as ratios.
3. Start-up: from `streamlit run` to the first page drawn in Chromium; the first-run cost of
   loading the tokenizer.
4. Browser: from a slider move to the charts redrawn, in headless Chromium.
Plus what one cached trace costs in memory and how many the caches hold.
"""

from __future__ import annotations

import argparse
import datetime
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import suite

ROOT = suite.ROOT
RESULTS = ROOT / "bench" / "results.md"


def engine_cost(repeats: int = 7) -> dict:
    """Traced forward against the plain forward and SDPA, interleaved, at the bonus shape."""
    import torch

    from attnviz.core import modules as M
    from attnviz.core.trace import ModuleSpec, trace_multihead
    from attnviz.models import implementations

    spec = ModuleSpec("mha", 768, 768, 1024, 0.0, 12, False, 123)
    module = spec.build().eval()
    x = torch.randn(1, 1024, 768, generator=torch.Generator().manual_seed(0))
    labels = tuple(str(i) for i in range(1024))

    def plain():
        return module(x)

    def traced_forward():
        with M.recording():  # the same forward, its tap points recording
            return module(x)

    def traced_full():  # builds the module too, as the app's trace call does
        return trace_multihead(spec, x, labels)

    sdpa = implementations.SDPA(module).eval()  # page 6's fused implementation, same weights

    runs = {"plain": [], "traced forward": [], "trace (with build)": [], "sdpa": []}
    fns = {
        "plain": plain,
        "traced forward": traced_forward,
        "trace (with build)": traced_full,
        "sdpa": lambda: sdpa(x),
    }
    with torch.inference_mode():
        for fn in fns.values():
            fn()
        order = list(fns.items())
        for r in range(repeats):
            random.Random(r).shuffle(order)
            for name, fn in order:
                start = time.perf_counter()
                fn()
                runs[name].append(time.perf_counter() - start)
    med = {k: statistics.median(v) for k, v in runs.items()}
    return {
        "median_ms": {k: v * 1e3 for k, v in med.items()},
        "ratio_to_plain": {k: v / med["plain"] for k, v in med.items()},
    }


def tokenizer_first_load() -> dict:
    """A fresh process: import time of the engine, then the first tokenizer load."""
    code = (
        "import time; t0 = time.perf_counter(); import attnviz.core.tokens as T; t1 = time.perf_counter(); "
        "T.get_tokenizer(); t2 = time.perf_counter(); T.tokenize('warm'); t3 = time.perf_counter(); "
        "print(t1 - t0, t2 - t1, t3 - t2)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    imp, load, first = (float(v) for v in out.stdout.split())
    return {"import_ms": imp * 1e3, "first_load_ms": load * 1e3, "first_tokenize_ms": first * 1e3}


# Every page, with the slider a student would move there. "sidebar dropout" is the one slider
# every page shares: on most pages it changes no number in eval mode, but it reruns the whole
# page, which is what any click costs. Page 1's stretch slider, the dropout lab and the learn
# page's snapshot slider change what is drawn.
# The third value is the first key pressed (a slider at its end moves one way only).
BROWSER_PAGES = (
    ("", "sidebar dropout", "ArrowRight"),  # the home page lives at "/"
    ("simplified-attention", "sidebar dropout", "ArrowRight"),
    ("simplified-attention", "Multiply the inputs by a", "ArrowRight"),
    ("trainable-attention", "sidebar dropout", "ArrowRight"),
    ("causal-attention", "sidebar dropout", "ArrowRight"),
    ("multi-head-attention", "sidebar dropout", "ArrowRight"),
    ("watch-attention-learn", "Training step (snapshot)", "ArrowLeft"),
    ("against-pytorch", "sidebar dropout", "ArrowRight"),
)

_TWO_FRAMES = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"


def browser_figures(slider_moves: int = 5) -> dict:
    """Start-up to the first page drawn, and a slider move to the charts redrawn on every page,
    in Chromium. The browser is started before the clock, so start-up is the server's alone."""
    from bench.support.browser import chromium, wait_for_app
    from bench.support.network import Blackhole, proxy_env
    from bench.support.server import running_app

    hole = Blackhole()
    env = proxy_env(hole)
    try:
        with chromium(hole.port) as browser:
            page = browser.new_page(viewport={"width": 1400, "height": 3000})
            finished = _count_finished_runs(page)
            start = time.perf_counter()
            with running_app(env=env) as (url, _proc):
                healthy = time.perf_counter() - start
                page.goto(url)
                wait_for_app(page)
                page.locator("[data-testid='stPlotlyChart'] .main-svg").first.wait_for(
                    timeout=60_000
                )
                first_drawn = time.perf_counter() - start
                moves = {}
                for path, slider_name, first_key in BROWSER_PAGES:
                    page.goto(f"{url}/{path}")
                    wait_for_app(page)
                    if path == "watch-attention-learn":
                        page.locator("button", has_text="Train").first.click()
                        page.get_by_text("Training step (snapshot)").first.wait_for(timeout=120_000)
                        wait_for_app(page)
                    _wait_charts(page)
                    if slider_name == "sidebar dropout":
                        slider = page.locator("[data-testid='stSidebar']").get_by_role("slider")
                    else:
                        slider = (
                            page.locator("[data-testid='stSlider']")
                            .filter(has_text=slider_name)
                            .get_by_role("slider")
                        )
                    slider = slider.first
                    times = []
                    for i in range(slider_moves):
                        back = "ArrowLeft" if first_key == "ArrowRight" else "ArrowRight"
                        done = len(finished)
                        t0 = _move(slider, back if i % 2 else first_key)
                        _wait_until(page, lambda n=done: len(finished) > n)
                        _wait_charts(page)
                        page.evaluate(_TWO_FRAMES)
                        times.append(time.perf_counter() - t0)
                    moves[(path, slider_name)] = statistics.median(times) * 1e3
                    print(f"    /{path:24s} {slider_name:28s} {moves[(path, slider_name)]:6.0f} ms")
        return {
            "server_healthy_s": healthy,
            "first_page_drawn_s": first_drawn,
            "slider_to_redrawn_ms": moves,
            "slider_moves": slider_moves,
        }
    finally:
        hole.close()


def _count_finished_runs(page) -> list[float]:
    """A list that grows by one each time the server tells this page a run (or a fragment's
    run) has finished: the ``script_finished`` message of Streamlit's websocket protocol, read
    off the frames the browser receives. (The app element's "running" state can flip to
    running and back within one render when a rerun is fast, so it cannot be counted.)"""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    finished: list[float] = []

    def on_frame(payload) -> None:
        if isinstance(payload, (bytes, bytearray)):
            msg = ForwardMsg()
            msg.ParseFromString(bytes(payload))
            if msg.WhichOneof("type") == "script_finished":
                finished.append(time.perf_counter())

    page.on("websocket", lambda ws: ws.on("framereceived", on_frame))
    return finished


def _wait_until(page, condition, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("the page's run did not finish")
        page.wait_for_timeout(5)  # lets Playwright deliver the websocket events


def _move(slider, key: str) -> float:
    """Press ``key`` on the slider until its value moves (a page that has just drawn can
    re-render the slider and drop its focus). Returns the time of the press that moved it."""
    for _ in range(5):
        slider.focus()
        before = slider.evaluate("e => e.value")
        t0 = time.perf_counter()
        slider.page.keyboard.press(key)
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            if slider.evaluate("e => e.value") != before:
                return t0
            time.sleep(0.005)
    raise RuntimeError(f"the slider did not move with {key}")


def _wait_charts(page) -> None:
    charts = page.locator("[data-testid='stPlotlyChart']")
    for i in range(charts.count()):
        charts.nth(i).locator(".main-svg").first.wait_for(timeout=60_000)


def learn_default_run(repeats: int = 3) -> dict:
    """Wall time of the "Watch attention learn" page's default training run, per task."""
    from attnviz.models import toy_tasks

    toy_tasks.train(
        toy_tasks.LearnConfig(steps=1)
    )  # the optimizer's first use imports more of torch
    out = {}
    for task in toy_tasks.TASKS:
        runs = [toy_tasks.train(toy_tasks.LearnConfig(task=task)) for _ in range(repeats)]
        out[task] = {
            "median_s": statistics.median(r.seconds for r in runs),
            "accuracy": runs[0].held_out_accuracy,
            "share": runs[0].head_share[0],
        }
    return out


def trace_memory() -> dict:
    """Bytes held by one cached trace at the default and at GPT-2-small settings."""
    from attnviz.core.settings import Settings
    from attnviz.core.trace import tensors_of
    from attnviz.teach import prepare as lesson
    from ui import cache

    def size(trace) -> int:
        return sum(t.untyped_storage().nbytes() for t in tensors_of(trace))

    out = {
        f"cache cap, {m.name} (MB, at most {m.max_entries} entries)": m.max_bytes / 2**20
        for m in cache.MEMOS
    }
    for name, s, n in (
        ("default, 6 tokens", Settings(), 6),
        (
            "gpt2-small, 256 tokens",
            Settings(d_in=768, d_out=768, num_heads=12, context_length=1024),
            256,
        ),
    ):
        prep = lesson.prepare(suite.text_of_tokens(n), s)
        out[f"multihead trace, {name} (MB)"] = size(lesson.multihead(prep, s)) / 2**20
        out[f"causal trace, {name} (MB)"] = size(lesson.causal(prep, s)) / 2**20
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--skip-browser", action="store_true")
    parser.add_argument("--reruns", type=int, default=5)
    args = parser.parse_args()
    from attnviz.server import runtime

    runtime.configure_threads()  # torch threads as the server sets them (ATTNVIZ_TORCH_THREADS)
    runtime.configure_memory()  # and the allocator's mmap threshold

    lines = [
        f"# attnviz benchmark results\n\n{datetime.datetime.now():%Y-%m-%d %H:%M}, "
        f"`python bench/run.py`. Machine and packages: {suite.machine()}.\n",
        "Medians; every ratio is measured side by side in this one run.\n",
    ]

    print("1. page reruns ...", flush=True)
    reference = suite.measure_reference(args.reruns)
    runs = suite.measure_pages(list(suite.SETTINGS), args.reruns)
    lines.append("## 1. Page rerun time (server side, AppTest) and figure bytes\n")
    lines.append(
        f"Reference app (one 64×64 heatmap): {reference.median_ms:.1f} ms, "
        f"{reference.figure_bytes / 1e3:.1f} kB of figure data.\n"
    )
    lines.append(
        "| page | settings | median rerun (ms) | × reference | charts | figure data (kB) | target |"
    )
    lines.append("|---|---|---:|---:|---:|---:|---|")
    for r in runs:
        target = 100 if r.setting in ("default", "book") else 1000 if "256" in r.setting else None
        verdict = (
            "" if target is None else ("met" if r.median_ms < target else f"MISSED (< {target} ms)")
        )
        if r.error:
            verdict = f"error: {r.error[:60]}"
        lines.append(
            f"| {r.page} | {r.setting} | {r.median_ms:.1f} | {r.median_ms / reference.median_ms:.2f} | "
            f"{r.charts} | {r.figure_bytes / 1e3:.0f} | {verdict} |"
        )
        print(
            f"  {r.page:28s} {r.setting:24s} {r.median_ms:8.1f} ms  {r.figure_bytes / 1e3:8.0f} kB  {verdict}"
        )

    print("2. engine cost at the bonus shape ...", flush=True)
    eng = engine_cost()
    lines.append("\n## 2. Engine cost, batch 1, 1024 tokens, 768 wide, 12 heads\n")
    lines.append("| forward | median (ms) | × plain |")
    lines.append("|---|---:|---:|")
    for k, v in eng["median_ms"].items():
        lines.append(f"| {k} | {v:.1f} | {eng['ratio_to_plain'][k]:.2f} |")
    lines.append(
        f"\nTarget: the traced forward costs at most 25% over the plain one: "
        f"{'met' if eng['ratio_to_plain']['traced forward'] <= 1.25 else 'MISSED'} "
        f"({eng['ratio_to_plain']['traced forward']:.2f}×)."
    )
    print("  ", eng)

    print("3. start-up ...", flush=True)
    tok = tokenizer_first_load()
    lines.append("\n## 3. Start-up\n")
    lines.append(
        f"Fresh process: importing the engine {tok['import_ms']:.0f} ms; first tokenizer load "
        f"(from the cache) {tok['first_load_ms']:.0f} ms; first tokenize {tok['first_tokenize_ms']:.1f} ms."
    )
    if not args.skip_browser:
        print("4. browser ...", flush=True)
        br = browser_figures()
        lines.append(
            f"`streamlit run` to healthy: {br['server_healthy_s']:.1f} s; to the first page drawn "
            f"in Chromium: {br['first_page_drawn_s']:.1f} s."
        )
        lines.append("\n## 4. Browser\n")
        lines.append(
            f"Default settings: a slider move (keyboard) to the page's run finished and every "
            f"chart drawn again, median of {br['slider_moves']} moves. Target < 1 s.\n"
        )
        lines.append("| page | slider | median (ms) | target |")
        lines.append("|---|---|---:|---|")
        for (path, slider_name), ms in br["slider_to_redrawn_ms"].items():
            verdict = "met" if ms < 1000 else "MISSED"
            lines.append(f"| /{path} | {slider_name} | {ms:.0f} | {verdict} |")
        print("  ", br)

    print("5. watch attention learn, default run ...", flush=True)
    learn = learn_default_run()
    lines.append("\n## Watch attention learn: the default training run\n")
    for task, r in learn.items():
        lines.append(
            f"- {task}: {r['median_s']:.2f} s (median of 3), held-out accuracy "
            f"{r['accuracy']:.3f}, attention share on the expected key {r['share']:.3f}"
        )
    print("  ", learn)

    mem = trace_memory()
    lines.append("\n## Cached traces\n")
    for k, v in mem.items():
        lines.append(f"- {k}: {v:.2f}" if isinstance(v, float) else f"- {k}: {v}")
    print("  ", mem)
    RESULTS.write_text("\n".join(lines) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
