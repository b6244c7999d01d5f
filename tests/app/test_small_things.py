"""The small things a class notices (issue 36, point 10), each as the student sees it: masked
scores read "−∞" in the numbers tables, the no-future-leak check explains why the later outputs
move so much, the weights note reads plainly, the tokenizer line sits at the foot of the
sidebar, and trained weights switch off the sidebar's sizes, saying why. (The diffs' direction
is tested in tests/engine/test_bugs.py and tests/app/test_break_it.py, the legend of "Why
divide by √d_k" in tests/app/test_content_early.py, a long paste in Chromium:
tests/browser/test_phone_in_chromium.py.)
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from pandas.api.types import is_numeric_dtype

from attnviz.teach import checks
from ui import state
from ui.models import growing

from .conftest import TOKENIZER_CAPTION, check_badges, exceptions, open_app, unescape, values


def test_masked_scores_read_minus_infinity_in_the_numbers_tables():
    # a cell explained too: its softmax chart's table holds the row's masked scores
    at = open_app({"cell": "q4k2"}, page="causal")
    at.toggle(key="numbers").set_value(True).run()
    assert not exceptions(at)
    tables = [d.value for d in at.dataframe]
    assert tables
    texts = [t for t in tables if not any(is_numeric_dtype(d) for d in t.dtypes)]
    # The masked scores' table (and every table with −∞) is text, each −∞ written "−∞" ...
    assert texts, [t.dtypes.unique() for t in tables]
    cells = [str(v) for t in texts for v in t.to_numpy().ravel()]
    assert "−∞" in cells
    assert not [c for c in cells if "inf" in c.lower()]
    # ... its other numbers to 4 decimals, and a numeric table holds no infinity (the grid
    # writes a float −∞ as "-Infinity"; a NaN, a key its row cannot see, is left blank).
    bad = [c for c in cells if not (c == "−∞" or re.fullmatch(r"-?\d+(\.\d+)?(e-?\d+)?", c))]
    assert not bad, bad[:12]
    assert len(texts) >= 2, len(texts)  # the masked scores' table, the derivation's softmax
    for t in tables:
        if any(is_numeric_dtype(d) for d in t.dtypes):
            assert not np.isinf(t.to_numpy(dtype=float)).any()


def test_the_no_future_leak_check_says_why_the_later_outputs_moved_so_much():
    at = open_app(page="causal")
    said = [w for _, text, w, _ in check_badges(at) if text == "No future leak: pass"]
    assert len(said) == 1, check_badges(at)  # once a page (issue 36: it was printed twice)
    found = re.search(
        r"Adding noise (\d+) times a standard normal to tokens (\d+)–(\d+) did not move the "
        r"outputs of tokens 0–(\d+), while the outputs of tokens \2–\3 moved by up to (\S+): "
        r"their inputs changed that much\.$",
        said[0],
    )
    assert not re.search(r"agree|equal", said[0])  # it says how far, not "exactly equal"
    assert found, said[0]
    assert int(found[1]) == checks.FUTURE_NOISE
    assert int(found[4]) == int(found[2]) - 1


def test_the_random_weights_note_reads_plainly_and_points_at_a_sentence_that_is_there():
    at = open_app(page="trainable")
    captions = values(at.caption)
    assert growing.RANDOM_NOTE["random"] in captions
    assert not [c for c in captions if "is said, in numbers" in c]
    # The sentence the note points at stands on the page: how far from an even share.
    assert [p for p in values(at.markdown) + captions if "an even share" in p and "0." in p]


@pytest.mark.parametrize("page", ["simplified", "causal"])
def test_the_tokenizer_line_is_the_last_thing_in_the_sidebar(page):
    at = open_app({"book": "true"} if page == "causal" else None, page=page)
    sidebar = [c.value for c in at.sidebar.caption]
    assert sidebar and sidebar[-1].startswith(TOKENIZER_CAPTION), sidebar
    assert not [c for c in at.main.caption if str(c.value).startswith("Tokenizer:")]


def test_trained_weights_switch_the_sidebars_sizes_off_and_say_why():
    at = open_app({"weights": "trained"}, page="trainable")
    assert not exceptions(at)
    side = at.sidebar
    for key in ("d_in", "d_out", "heads", "ctx", "eseed", "wseed"):
        box = side.number_input(key=key)
        assert box.disabled, key
        assert state.TRAINED_FIXES in box.help, key
    assert side.toggle(key="bias").disabled
    assert not side.slider(key="dropout").disabled and not side.toggle(key="train").disabled
    assert not side.number_input(key="dseed").disabled
    caption = [c for c in values(side.caption) if c.startswith("Trained weights fix the sizes")]
    assert len(caption) == 1 and "switched off here" in caption[0]
    # Pass 1 has no trainable weights: its sizes apply whatever the switch says.
    at.switch_page("pages/simplified-attention.py").run()
    assert not at.sidebar.number_input(key="d_in").disabled
    # Back to random weights on pass 2: every size applies again.
    at.switch_page("pages/trainable-attention.py").run()
    at.sidebar.radio(key="weights").set_value("random").run()
    assert not at.sidebar.number_input(key="d_in").disabled
    assert unescape(str(at.title[0].value)) == "2. Trainable self-attention"
