"""How often a fixed strategy beats "Predict first", per page and kind of question.

    .venv/bin/python bench/question_strategies.py --cases 200 --seeds 8

Makes every kind of every pass page at ``--seeds`` question seeds on the defaults and
``--cases - 1`` random texts and settings, answers each with every fixed strategy of
``bench/support/strategies.py`` (the query itself, the first option, 1/(1 − p), the largest
number shown, ...), and prints per page and kind: how many were posed, the best strategy's
share, every strategy's share, and how the keys are spread. A share above 40 % is flagged.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.support.strategies import AT_MOST, tally


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--cases", type=int, default=200, help="texts and settings (defaults first)"
    )
    parser.add_argument("--seeds", type=int, default=8, help="question seeds per case and kind")
    args = parser.parse_args()
    found = tally(args.cases, args.seeds)
    worst = 0.0
    for (page, kind), t in sorted(found.items()):
        name, share = t.best()
        worst = max(worst, share)
        flag = "  OVER" if share > AT_MOST else ""
        print(f"\n{page} / {kind}: {t.posed} posed; best fixed strategy {name!r} {share:.1%}{flag}")
        for strategy in sorted(t.right, key=lambda k: -t.right[k]):
            print(f"    {t.share(strategy):6.1%}  {strategy}")
        print("  keys:")
        for what, count in t.keys.most_common():
            print(f"    {count / t.posed:6.1%}  {what}")
    print(f"\nWorst fixed strategy over every page and kind: {worst:.1%} (limit {AT_MOST:.0%}).")
    return 1 if worst > AT_MOST else 0


if __name__ == "__main__":
    raise SystemExit(main())
