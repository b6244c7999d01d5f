"""Each named misconception, answered on purpose on a pass page, shows its one-sentence
explanation (AppTest; one page run per misconception, so the module is in the slow set)."""

from __future__ import annotations

import pytest

from attnviz.teach import questions as Q
from tests.app.conftest import exceptions, unescape

from .answer import give, open_predict, verdicts
from .pages import Setting, question

pytestmark = pytest.mark.slow
TRAIN = {"train": "true", "dropout": "0.5"}

# --- misconceptions ---------------------------------------------------------------------------
SEARCH = [
    ("simplified", {}),
    ("trainable", {}),
    ("trainable", {"d_out": "128"}),
    ("causal", {}),
    ("causal", TRAIN),
    ("causal", {"d_in": "2", "wseed": "3"}),  # a sketched row the mask leaves unnormalised
    ("multihead", {}),
    ("multihead", TRAIN | {"heads": "4"}),
]


def _find(name: str):
    """A page, setting and seed whose question knows misconception ``name``."""
    for page, query in SEARCH:
        s = Setting.of(page, query)
        for seed in range(30):
            q = question(s, seed)
            if q is not None and any(m.name == name for m in q.misconceptions):
                return page, query, seed, q
    raise AssertionError(f"no question with misconception {name!r} in the search")


@pytest.mark.parametrize(
    "name",
    [
        Q.COLUMN,
        Q.NO_RENORMALISE,
        Q.MASK_WITH_ZERO,
        Q.ROWS_SUM_TO_ONE,
        Q.NO_RESCALE,
        Q.DIAGONAL_MASKED,
        Q.NO_TRANSPOSE,
        Q.SCALING_BACKWARDS,
    ],
)
def test_each_misconception_answered_on_purpose_shows_its_explanation(name):
    page, query, seed, q = _find(name)
    wrong = next(m for m in q.misconceptions if m.name == name)
    at = give(open_predict(page, query, seed), q, wrong.answer)
    assert not exceptions(at)
    assert verdicts(at)[0].startswith("Not quite")
    infos = [unescape(i.value) for i in at.info]
    assert f"That is the answer of a common slip. {Q.EXPLANATIONS[name]}" in infos
