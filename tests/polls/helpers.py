"""Questions the poll tests ask (the store treats their payload as opaque JSON)."""

from __future__ import annotations

from attnviz.classroom.polls import Choice, Created, Number, PollQuestion, Refused, Sketch

OPTIONS = ("0: Your", "1: ␣journey", "2: ␣starts", "3: ␣with")
SETTINGS = {"text": "Your journey starts with one step", "d_in": 8, "d_out": 8, "heads": 2}
COLUMN = "reading a column instead of a row"


def choice_question(key: int = 1) -> PollQuestion:
    return PollQuestion(
        payload={"kind": "argmax", "query": 3, "prompt": "Which key does query 3 weigh most?"},
        settings=SETTINGS,
        answer=Choice(OPTIONS),
        key=key,
        misconceptions={COLUMN: 2},
    )


def number_question() -> PollQuestion:
    return PollQuestion(
        payload={"kind": "dropout_survivor", "p": 0.5},
        settings=SETTINGS,
        answer=Number(decimals=2, lo=0, hi=10),
        key=0.5,
        misconceptions={"expecting rows to still sum to 1": 0.25},
    )


def sketch_question() -> PollQuestion:
    return PollQuestion(
        payload={"kind": "sketch_row", "query": 2},
        settings=SETTINGS,
        answer=Sketch(length=3, tolerance=0.10),
        key=(0.2, 0.3, 0.5),
        misconceptions={COLUMN: (0.6, 0.3, 0.1)},
    )


def created(result: Created | Refused) -> Created:
    assert isinstance(result, Created), result
    return result
