"""The batched hand-over (ui/handover.py) on and off, beside the trivial app, in one run.

    .venv/bin/python bench/handover.py --repeat 3     # ~3 minutes

Each round runs bench/measure.py's own-sentence class (50 sessions, each with a sentence of its
own, changing one sidebar value at each of six page runs) on a fresh attnviz server as deployed
(batched), on one with ``ATTNVIZ_BATCHED_HANDOVER=0`` (Streamlit's one wake-up of the event loop
per message), and on the trivial app, back to back with one seed, so the machine's load moves
them alike; the ratios of each round are printed and written to bench/handover-results.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import gate  # noqa: E402
from ui import handover  # noqa: E402

WAYS = (("batched hand-over (default)", {}), ("one wake-up per message", {handover.ENV: "0"}))

if __name__ == "__main__":
    sys.exit(
        gate.main(
            ways=WAYS,
            results=ROOT / "bench" / "handover-results.md",
            title="Batched hand-over: a run's messages to the event loop in batches, or one by one",
            doc=__doc__,
        )
    )
