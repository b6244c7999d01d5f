"""Random settings and texts for the question and mystery tests: texts up to 16 tokens, small
sizes, every seed, eval and training mode."""

from __future__ import annotations

import random

from hypothesis import strategies as st

from attnviz.core.settings import Settings

# Words GPT-2 keeps whole (one token each, most with a leading space), repeats, digits and
# characters that look like HTML among them.
WORDS = (
    "the cat sat on a mat and every effort moves you forward your journey starts with one "
    "step it is 12 < > & the"
).split()
MAX_TOKENS = 16

# Untrained attention on typed text is close to even at most sizes; narrow inputs with wide
# heads give sharper rows, where more row questions are clear (the "sharp" draws).
D_IN = [1, 2, 3, 4, 8, 16, 32]
HEAD_DIM = [1, 2, 3, 4, 8, 16, 32, 64]
SHARP_D_IN = [1, 2, 3, 4]
SHARP_HEAD_DIM = [16, 32, 64]


def settings_from(draw_int, draw_choice, draw_bool, sharp: bool = False) -> Settings:
    heads = draw_choice([1, 2, 3, 4])
    return Settings(
        d_in=draw_choice(SHARP_D_IN if sharp else D_IN),
        d_out=heads * draw_choice(SHARP_HEAD_DIM if sharp else HEAD_DIM),
        num_heads=heads,
        context_length=draw_choice([8, 16, 32] if sharp else [2, 4, 8, 16, 32]),
        dropout=draw_choice([0.0, 0.1, 0.2, 0.5, 0.9]),
        seed_embed=draw_int(0, 2**31 - 1),
        seed_weights=draw_int(0, 2**31 - 1),
        seed_dropout=draw_int(0, 2**31 - 1),
        qkv_bias=draw_bool(),
        training=draw_bool(),
        max_tokens=MAX_TOKENS,
    )


@st.composite
def settings(draw, sharp: bool = False) -> Settings:
    return settings_from(
        lambda a, b: draw(st.integers(a, b)),
        lambda xs: draw(st.sampled_from(xs)),
        lambda: draw(st.booleans()),
        sharp,
    )


def _texts(shortest: int):
    # The length first, so that long texts are as likely as short ones (a plain list strategy
    # favours short lists).
    return st.sampled_from(range(shortest, MAX_TOKENS + 1)).flatmap(
        lambda n: st.lists(st.sampled_from(WORDS), min_size=n, max_size=n).map(" ".join)
    )


texts = _texts(1)
# (text, settings): any text and sizes; or 8 to 16 words and sharp sizes.
cases = st.tuples(texts, settings())
sharp_cases = st.tuples(_texts(8), settings(sharp=True))


def random_case(rng: random.Random) -> tuple[str, Settings]:
    """The plain distribution of ``texts`` and ``settings`` from a seeded generator (for the
    simulations that count outcomes over a fixed number of settings)."""
    s = settings_from(rng.randint, rng.choice, lambda: rng.random() < 0.5)
    text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, MAX_TOKENS)))
    return text, s
