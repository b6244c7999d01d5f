"""The trained-heads page with GPT-2 weights, on the live server as deployed (issue 18).

    .venv/bin/python bench/trained_live.py --make-gpt2 /tmp/gpt2small   # random GPT-2 small
    .venv/bin/python bench/trained_live.py --gpt2-dir /tmp/gpt2small

bench/live.py's servers and measurement, with ``ATTNVIZ_GPT2_DIR`` set on the attnviz server:
the server's RSS before and after the page first loads the model, then the server CPU per warm
run of /trained-heads (median of alternating blocks beside the trivial app) at the default text
and at a text of 256 tokens (the app's token cap). ``--make-gpt2 DIR`` writes a GPT-2-small-shaped
model with random weights (as tests/pretrained/conftest.py's ``small_folder``) and exits.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import live, loadtest  # noqa: E402
from bench.support import aio  # noqa: E402
from bench.support.pages import app_pages  # noqa: E402

PAGE = "trained-heads"
MB = 2**20


def make_gpt2(folder: Path) -> None:
    """GPT-2 small's shape (12 layers, 12 heads, 768 wide, 50,257 tokens, 1,024 positions) with
    random weights, saved as the bare GPT2Model the published files hold."""
    import torch
    from transformers import GPT2Config, GPT2Model

    torch.manual_seed(0)
    GPT2Model(GPT2Config()).save_pretrained(folder)


def long_text(tokens: int = 256) -> str:
    """bench/loadtest.py's longer text repeated and cut to exactly ``tokens`` GPT-2 tokens."""
    import tiktoken

    enc = tiktoken.get_encoding("gpt2")
    ids = enc.encode(" ".join([loadtest.LONGER_TEXT] * 5))[:tokens]
    text = enc.decode(ids)
    assert len(enc.encode(text)) == tokens, len(enc.encode(text))
    return text


def step(page, text: str | None, label: str) -> loadtest.Step:
    query = dict(loadtest.DEFAULTS)
    if text is not None:
        query["text"] = text
    return loadtest.Step(
        label, urlencode(query), page.url_path, "" if page.default else page.url_path
    )


async def _one_run(server: live.Server, st: loadtest.Step) -> tuple[loadtest.RunResult, float]:
    session = loadtest.Session(server.url, timeout=300)
    await session.connect()
    try:
        before = server.cpu_seconds()
        result = await session.rerun(st)
        await asyncio.sleep(0.3)
        return result, server.cpu_seconds() - before
    finally:
        await session.close()


def one_run(server: live.Server, st: loadtest.Step) -> tuple[loadtest.RunResult, float]:
    result, cpu = aio.run(_one_run(server, st))
    if result.errors:
        raise RuntimeError(f"{st.page} ({st.setting}): {result.errors[0]}")
    return result, cpu


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--gpt2-dir", type=Path, help="the folder ATTNVIZ_GPT2_DIR names")
    parser.add_argument("--make-gpt2", type=Path, help="write a random GPT-2 small here, exit")
    parser.add_argument("--runs", type=int, default=10, help="warm reruns per block (10)")
    parser.add_argument("--blocks", type=int, default=3, help="alternating blocks (3)")
    parser.add_argument("--tokens", type=int, default=256, help="the long text's tokens (256)")
    args = parser.parse_args(argv)
    if args.make_gpt2:
        make_gpt2(args.make_gpt2)
        print(f"written to {args.make_gpt2}")
        return 0
    if not args.gpt2_dir:
        parser.error("--gpt2-dir or --make-gpt2")
    pages = app_pages()
    index = next(i for i, p in enumerate(pages) if p.url_path == PAGE)
    page, home = pages[index], next(p for p in pages if p.default)
    texts = {"default text": None, f"{args.tokens}-token text": long_text(args.tokens)}
    env = {"ATTNVIZ_GPT2_DIR": str(args.gpt2_dir.resolve())}
    with ExitStack() as stack:
        app = stack.enter_context(live.attnviz_server(extra_env=env))
        trivial = stack.enter_context(live.trivial_server())
        print(f"attnviz {app.url} (pid {app.pid}), trivial {trivial.url} (pid {trivial.pid})")
        print(f"RSS at start: {app.rss() / MB:.0f} MB")
        one_run(app, step(home, None, "home"))
        print(f"RSS after one run of the home page: {app.rss() / MB:.0f} MB")
        rss_home = app.rss()
        for label, text in texts.items():
            started = time.perf_counter()
            result, cpu = one_run(app, step(page, text, label))
            print(
                f"first run of /{PAGE}, {label}: {time.perf_counter() - started:.1f} s wall, "
                f"{cpu:.1f} s server CPU, {len(result.charts)} charts; RSS {app.rss() / MB:.0f} MB "
                f"(+{(app.rss() - rss_home) / MB:.0f} MB since the home page)",
                flush=True,
            )
        for label, text in texts.items():
            ours, theirs, wall, kb = [], [], [], []
            for block in range(args.blocks):
                warm = 3 if block == 0 else 1
                a = live.cpu_per_run(app, step(page, text, label), args.runs, warm)
                t = live.cpu_per_run(
                    trivial, live.trivial_step(index % live.TRIVIAL_PAGES), args.runs, warm
                )
                ours.append(a["cpu_ms"])
                theirs.append(t["cpu_ms"])
                wall.append(a["wall_ms"])
                kb.append(a["kb"])
            app_ms, trivial_ms = statistics.median(ours), statistics.median(theirs)
            print(
                f"/{PAGE}, {label}: server CPU per warm run {app_ms:.1f} ms "
                f"(blocks {', '.join(f'{x:.1f}' for x in ours)}), wall {statistics.median(wall):.0f} ms; "
                f"trivial {trivial_ms:.1f} ms (blocks {', '.join(f'{x:.1f}' for x in theirs)}); "
                f"ratio {app_ms / trivial_ms:.2f}; {statistics.median(kb):.0f} kB a run; "
                f"RSS {app.rss() / MB:.0f} MB",
                flush=True,
            )
    print(f"load average at the end: {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
