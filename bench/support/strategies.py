"""Fixed strategies against "Predict first": how often an answer that ignores the numbers is
right, per page and kind of question, over many texts, settings and question seeds.

A strategy answers from the question's form alone, never from its key: click the query itself,
the first token, the token before or after the query, the last token; pick the first (second,
...) option, or always the same option by its words; type 1/(1 − p), 0, 1, or the largest,
smallest, first or last number the prompt states; sketch an even row, or all weight on the
query, the first or the last key it sees; give the first or last shape the prompt states, or
its sizes sorted. ``bench/question_strategies.py`` prints the shares; the test
``tests/questions/test_strategies.py`` fails when one passes ``AT_MOST``.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from attnviz.core.settings import Settings
from attnviz.teach import questions as Q

AT_MOST = 0.40  # no fixed strategy may be right more often than this, on any page and kind

WORDS = (
    "the cat sat on a mat and every effort moves you forward your journey starts with one "
    "step it is 12 < > & the"
).split()
DEFAULT_TEXT = "Your journey starts with one step"


def random_case(rng: random.Random) -> tuple[str, Settings]:
    """A text of 1 to 16 words and sizes, seeds, dropout and mode drawn at random."""
    heads = rng.choice([1, 2, 3, 4])
    s = Settings(
        d_in=rng.choice([1, 2, 3, 4, 8, 16, 32]),
        d_out=heads * rng.choice([1, 2, 3, 4, 8, 16, 32]),
        num_heads=heads,
        context_length=rng.choice([4, 8, 16, 32]),
        dropout=rng.choice([0.0, 0.1, 0.2, 0.5, 0.9]),
        seed_embed=rng.randrange(2**31),
        seed_weights=rng.randrange(2**31),
        seed_dropout=rng.randrange(2**31),
        qkv_bias=rng.random() < 0.5,
        training=rng.random() < 0.5,
        max_tokens=16,
    )
    text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 16)))
    return text, s


def cases(count: int, seed: int = 37) -> Iterator[tuple[str, Settings]]:
    """The defaults first, then ``count - 1`` random cases."""
    yield DEFAULT_TEXT, Settings()
    rng = random.Random(seed)
    for _ in range(count - 1):
        yield random_case(rng)


def strategies(q: Q.Question) -> dict[str, Q.Answer]:
    """Every fixed strategy's answer to ``q`` (strategies that do not apply to it are left
    out)."""
    fmt, out = q.answer_format, {}
    shown = Q.shown_numbers(q.prompt)
    if fmt == Q.TOKEN:
        t, r = len(q.choices), q.query if q.query is not None else 0
        causal = q.page in ("causal", "multihead")
        picks = {
            "the query itself": r,
            "the first token": 0,
            "the token before the query": r - 1,
            "the token after the query": r + 1,
            "the last token": t - 1,
            "the last key the query sees": r if causal else t - 1,
            "the second token": 1,
        }
        out = {name: k for name, k in picks.items() if 0 <= k < t}
    elif fmt == Q.CHOICE:
        out = {f"option {i + 1}": c for i, c in enumerate(q.choices)}
        out |= {f"always “{c}”": c for c in q.choices}
    elif fmt in (Q.NUMBER, Q.INTEGER):
        numbers = {"0": 0.0, "1": 1.0}
        if q.settings.dropout > 0:
            p = q.settings.dropout
            numbers["1/(1 − p)"] = 1 / (1 - p)
        if shown:
            numbers |= {
                "the largest number shown": max(shown),
                "the smallest number shown": min(shown),
                "the first number shown": shown[0],
                "the last number shown": shown[-1],
            }
        out = {k: (round(v) if fmt == Q.INTEGER else v) for k, v in numbers.items()}
    elif fmt == Q.ROW:
        t, r = len(q.choices), q.query if q.query is not None else 0
        seen = list(range(r + 1)) if q.page in ("causal", "multihead") else list(range(t))

        def one_hot(k: int) -> tuple[float, ...]:
            return tuple(1.0 if i == k else 0.0 for i in range(t))

        out = {
            "an even row": tuple(1 / len(seen) if i in seen else 0.0 for i in range(t)),
            "all on the query": one_hot(r),
            "all on the first key": one_hot(0),
            "all on the last key seen": one_hot(seen[-1]),
        }
    elif fmt == Q.SHAPE:
        shapes = [tuple(int(v) for v in s.split(", ")) for s in _shapes(q.prompt)]
        if shapes:
            out = {
                "the first shape shown": shapes[0],
                "the last shape shown": shapes[-1],
                "the first shape shown, sorted": tuple(sorted(shapes[0])),
            }
    return out


def _shapes(prompt: str) -> list[str]:
    import re

    return re.findall(r"\((\d+(?:, \d+)+)\)", prompt)


def right(q: Q.Question, answer) -> bool:
    try:
        return Q.grade(q, answer).right
    except Q.AnswerError:
        return False


def key_class(q: Q.Question) -> str:
    """What the key is, in words that make its spread visible: a token's relation to the
    query, a choice's words, a number's rank among the numbers shown."""
    if q.answer_format == Q.TOKEN and q.query is not None:
        if q.key == q.query:
            return "the query itself"
        if q.key == 0:
            return "the first token"
        if q.key == q.query - 1:
            return "the token before"
        return "another token"
    if q.answer_format == Q.CHOICE:
        return f"“{q.key}” (option {q.choices.index(str(q.key)) + 1})"
    if q.answer_format in (Q.NUMBER, Q.INTEGER):
        shown = Q.shown_numbers(q.prompt)
        above = sum(1 for x in shown if x > float(q.key))  # type: ignore[arg-type]
        return f"{above} of {len(shown)} shown numbers above it"
    if q.answer_format == Q.SHAPE:
        return f"{len(q.key)} sizes"  # type: ignore[arg-type]
    return "a row"


@dataclass
class Tally:
    """Per (page, kind): questions posed, each strategy's right answers, the keys' classes."""

    posed: int = 0
    right: Counter = field(default_factory=Counter)
    keys: Counter = field(default_factory=Counter)

    def share(self, strategy: str) -> float:
        return self.right[strategy] / self.posed if self.posed else 0.0

    def best(self) -> tuple[str, float]:
        if not self.right:
            return "", 0.0
        name = max(self.right, key=lambda k: self.right[k])
        return name, self.share(name)


def tally(
    count: int, seeds: int, pages=Q.PAGES, progress: Callable[[int], None] | None = None
) -> dict[tuple[str, str], Tally]:
    """Every kind of every page, made at ``seeds`` question seeds on each of ``count`` cases
    (the defaults and random ones), scored against every fixed strategy. Each case's seeds start
    at a multiple of 1200, so its first 12 seeds are whole blocks of the balanced draws (3 or 4
    answers, places or relations: ``questions._balanced``)."""
    found: dict[tuple[str, str], Tally] = defaultdict(Tally)
    for i, (text, s) in enumerate(cases(count)):
        for page in pages:
            n = Q.read(page, text, s)
            if n is None:
                continue
            for kind in Q.PAGE_KINDS[page]:
                for seed in range(seeds):
                    q = Q.make(kind, page, text, s, False, 1200 * i + seed, n)
                    if q is None:
                        break  # not clear here, whatever the seed
                    t = found[(page, kind)]
                    t.posed += 1
                    t.keys[key_class(q)] += 1
                    for name, answer in strategies(q).items():
                        t.right[name] += right(q, answer)
        if progress is not None:
            progress(i)
    return dict(found)
