"""Open a pass page with "Predict first" on (at a given question seed) and answer its question
through its widgets, as a student would."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from attnviz.teach import questions as Q
from tests.app.conftest import open_app, unescape

SEEDS_KEY = "_attnviz_predict_seeds"


def open_predict(page: str, query: dict[str, str], seed: int = 0, **more: str) -> AppTest:
    """The page with ``predict=true`` and the session's question seed at ``seed``."""
    at = open_app({**query, "predict": "true", **more}, page)
    at.session_state[SEEDS_KEY] = {("predict", page): seed}  # a session draws its own
    return at.run()


def prompts(at: AppTest) -> list[str]:
    return [unescape(m.value) for m in at.markdown if m.value.startswith("**Predict first.**")]


def _widget(at: AppTest, kind: str, suffix: str):
    found = [
        w for w in getattr(at, kind) if w.key and w.key.startswith("q_") and w.key.endswith(suffix)
    ]
    assert len(found) == 1, f"{len(found)} {kind} widgets ending {suffix!r}"
    return found[0]


def give(at: AppTest, q: Q.Question, answer) -> AppTest:
    """Put ``answer`` into the question's widgets and press "Check my answer"."""
    fmt = q.answer_format
    if fmt == Q.TOKEN:
        kind = "pills" if len(q.choices) <= 24 else "selectbox"
        _widget(at, kind, "_token").set_value(int(answer))
    elif fmt == Q.ROW:
        for j, v in enumerate(answer):
            _widget(at, "slider", f"_row_{j}").set_value(round(float(v), 2))
    elif fmt in (Q.INTEGER, Q.NUMBER):
        _widget(at, "number_input", f"_{fmt}").set_value(answer)
    elif fmt == Q.CHOICE:
        _widget(at, "radio", "_choice").set_value(q.choices.index(answer))
    elif fmt == Q.SHAPE:
        _widget(at, "text_input", "_shape").input(", ".join(str(v) for v in answer))
    submit = [b for b in at.button if b.label == "Check my answer"]
    assert len(submit) == 1
    return submit[0].click().run()


def verdicts(at: AppTest) -> list[str]:
    return [unescape(e.value) for e in (*at.success, *at.error)]
