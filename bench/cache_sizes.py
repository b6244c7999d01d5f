"""How big are the cached values, and what do the byte caps of ui/memo.py buy?

    .venv/bin/python bench/cache_sizes.py            # sizes, then memory with and without caps
    .venv/bin/python bench/cache_sizes.py --sizes    # sizes only (a few seconds)

Sizes: ``attnviz.server.budget.size_of`` of each pass's trace and of one T x T heatmap figure (and that
figure's JSON), at the default settings, at GPT-2 small (768 wide, 12 heads) with 256 tokens, and
at the largest request that is still "light" (predicted under ``budget.HEAVY_BYTES``) at GPT-2
small widths. Memory: a fresh process fills a memo shaped like the light-trace cache (same entry
count) with distinct multi-head traces of that largest light request, once with the byte cap and
once without, and reports the growth of its resident memory.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from attnviz import figures  # noqa: E402
from attnviz.core.settings import Settings  # noqa: E402
from attnviz.server import budget  # noqa: E402
from attnviz.teach import prepare as lesson  # noqa: E402

MB = 2**20
TEXT = "the cat sat on the mat and looked at the dog " * 60
GPT2_SMALL = dict(d_in=768, d_out=768, num_heads=12, context_length=1024)


def largest_light(s: Settings) -> Settings:
    """``s`` with the largest token count (and a context that just holds it) whose request is
    still light: at GPT-2 small widths with GPT-2's context of 1,024 even one token is heavy
    (the mask buffers alone are 1,024² floats each)."""
    light = [t for t in range(1, 1025) if not budget.is_heavy(_fit(s, t), t)]
    return _fit(s, max(light))


def _fit(s: Settings, tokens: int) -> Settings:
    return s.with_changes(context_length=tokens, max_tokens=tokens)


def sizes(label: str, s: Settings, text: str) -> dict:
    prep = lesson.prepare(text, s)
    traces = {
        "simplified": lesson.simplified(prep),
        "trainable": lesson.trainable(prep, s),
        "causal": lesson.causal(prep, s),
        "multihead": lesson.multihead(prep, s),
        "wrapper": lesson.wrapper(prep, s),
    }
    t = prep.num_tokens
    import torch

    square = torch.rand(t, t, generator=torch.Generator().manual_seed(0))
    fig = figures.heatmap(square, prep.labels, prep.labels, title="w")
    row = {"settings": label, "tokens": t}
    row |= {f"{k} trace MB": round(budget.size_of(v) / MB, 3) for k, v in traces.items()}
    row["heatmap MB"] = round(budget.size_of(fig) / MB, 3)
    row["heatmap JSON MB"] = round(figures.figure_bytes(fig) / MB, 3)
    row["predicted request MB"] = round(budget.predicted_bytes(s, t) / MB, 1)
    return row


FILL = """
import json, sys, psutil
sys.path.insert(0, {root!r})
from attnviz.teach import prepare as lesson
from attnviz.core.settings import Settings
from ui.memo import Memo
capped, n, tokens = {capped}, {n}, {tokens}
s0 = Settings(**{gpt2!r}).with_changes(context_length=tokens, max_tokens=tokens)
prep = lesson.prepare({text!r}, s0)
proc = psutil.Process()
memo = Memo({entries}, {cap} if capped else None)
lesson.multihead(prep, s0)  # warm: allocator, kernels
start = proc.memory_info().rss
for seed in range(n):
    s = s0.with_changes(seed_weights=seed)
    memo.get(seed, lesson.multihead, (prep, s))
print(json.dumps(dict(entries=len(memo), held_mb=memo.nbytes / 2**20,
                      rss_growth_mb=(proc.memory_info().rss - start) / 2**20)))
"""


def fill(capped: bool, n: int, tokens: int) -> dict:
    from ui.cache import TRACE_ENTRIES

    code = FILL.format(
        root=str(ROOT),
        capped=capped,
        n=n,
        tokens=tokens,
        gpt2=GPT2_SMALL,
        text=TEXT,
        entries=TRACE_ENTRIES,
        cap=budget.CACHE_BYTES["light traces"],
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", action="store_true", help="sizes only")
    parser.add_argument("--fill", type=int, default=60, help="traces put in the memo")
    args = parser.parse_args()
    small = Settings(**GPT2_SMALL)
    light = largest_light(small)
    light_t = light.max_tokens
    rows = [
        sizes("default", Settings(), "Your journey starts with one step"),
        sizes("GPT-2 small, 256 tokens", small, TEXT),
        sizes(
            f"GPT-2 small, {light_t} tokens (largest light)",
            light,
            TEXT,
        ),
    ]
    for row in rows:
        print(json.dumps(row))
    if args.sizes:
        return
    for capped in (True, False):
        result = fill(capped, args.fill, light_t)
        print(json.dumps({"byte cap": capped, "traces asked": args.fill, **result}))


if __name__ == "__main__":
    main()
