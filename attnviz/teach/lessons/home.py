"""The home page as data: why attention, measured (the toy translation, the two recorded
encoder–decoders, one sentence's alignment), and the current text as tokens and X."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd
import torch

from attnviz import figures
from attnviz.core.inputs import BOOK_WORDS
from attnviz.models.bottleneck import bottleneck_run, bottleneck_training, toy_language
from attnviz.teach.lessons.common import matrix_panel, vectors_panel
from attnviz.teach.panel import WEIGHTS, Claim, Declared, Panel
from attnviz.teach.prepare import Prepared


@dataclass(frozen=True)
class HomeLesson:
    book: bool
    tokens: pd.DataFrame  # one row per token (book mode: per word)
    panels: dict[str, Panel]  # "x" (none when there is no text)
    count: Claim | None  # how the text became rows (above the table)
    shape: Claim | None  # X's shape (above X)

    @property
    def claims(self) -> tuple[Claim, ...]:
        return tuple(c for c in (self.count, self.shape) if c is not None)


def home_lesson(prep: Prepared) -> HomeLesson:
    """The token table and X for one prepared text (or the book's six words)."""
    if prep.book:
        table = pd.DataFrame({"position": range(len(BOOK_WORDS)), "word": BOOK_WORDS})
    else:
        table = pd.DataFrame(prep.tokens.table_rows() if prep.tokens is not None else [])
    if prep.empty:
        return HomeLesson(prep.book, table, {}, None, None)
    x = prep.x[0]
    n, d_in = x.shape
    dims = tuple(figures.dim_labels(d_in))
    panel = vectors_panel("home_x", x, prep.labels, dims, col_name="dimension")
    if prep.book:
        count = (
            "Book mode: the chapter's six 3-dimensional vectors for “Your journey starts with "
            "one step”, one per word (the book's x⁽¹⁾…x⁽⁶⁾ are rows 0…5 here)."
        )
        made = "."
    else:
        count = (
            f"GPT-2's tokenizer splits it into {n} token{'s' if n != 1 else ''}. A leading "
            "space shows as ␣, a newline as ↵; a token that holds only part of a character "
            "shows its bytes in hex, and the 'forms' column shows the character its pieces "
            "make together."
        )
        made = (
            ": a token embedding plus a position embedding, as in chapter 2 (random, fixed by "
            "the embedding seed; the same token always gets the same token row)."
        )
    shape = f"Each token becomes a row of X, shape {(n, d_in)} (tokens × d_in){made}"
    return HomeLesson(
        prep.book,
        table,
        {"x": panel},
        Claim(count, "x", "num_rows", n),
        Claim(shape, "x", "num_rows", n),
    )


# --- why attention, measured (issue 38) --------------------------------------------------------
# The home page's one panel with cells to explain: "Explain a cell" opens a cell clicked on the
# alignment (its rows and columns are counted from 1, as the page counts the toy's words, so
# cell=q3k38 is Mirror word 3 against English word 38).
DECLARED = (Declared("why_align", "home", cell=("", 0, 0)),)
WHY_SEED = 0  # the seed that names the word-by-word example
WHY_EXAMPLE_LENGTH = 6
AT_WORDS = 30  # the length the bridge sentence quotes
NAMES = {"bottleneck": "one vector (no attention)", "attention": "with attention"}


def percent(share: float) -> str:
    return f"{100 * share:.0f} %"


@dataclass(frozen=True)
class WordByWord:
    """A seeded English sentence, looked up word by word beside its right translation."""

    table: pd.DataFrame  # rows: English, word by word, right
    text: str  # how many words word by word puts at their right place


def word_by_word(seed: int = WHY_SEED, length: int = WHY_EXAMPLE_LENGTH) -> WordByWord:
    t = toy_language.translate(toy_language.seeded_sentence(seed, length))
    table = pd.DataFrame(
        [
            {"": "English", **{str(i + 1): w for i, w in enumerate(t.source)}},
            {"": "Mirror, word by word", **{str(i + 1): w for i, w in enumerate(t.word_by_word)}},
            {"": "Mirror, right", **{str(i + 1): w for i, w in enumerate(t.right)}},
        ]
    )
    right = len(t.source) - len(t.wrong_positions)
    text = (
        f"Looked up word by word, {right} of the {len(t.source)} words land where Mirror "
        f"puts them: the translation has to see the last English word before it can write its "
        f"first one."
    )
    return WordByWord(table, text)


@dataclass(frozen=True)
class RunLesson:
    """The two recorded runs, as the home page shows them."""

    by_length: figures.Chart  # held-out token accuracy against sentence length
    during: tuple[figures.Chart, figures.Chart]  # held-out accuracy against step, each model
    during_caption: str  # how those curves were measured
    sizes: str  # the two models' width and parameters
    at_words: str  # "at 30 words the one-vector decoder gets N %; with attention M %"
    alignment: str  # how often the recorded attention model's argmax is the right word
    bridge: str  # from this cross-attention to pass 1's self-attention


def run_lesson(rec: bottleneck_run.Recorded) -> RunLesson:
    b, a = rec.bottleneck, rec.attention
    lengths = sorted(b.accuracy)
    by_length = figures.lines(
        lengths,
        {NAMES[r.kind]: [r.accuracy[n] for n in lengths] for r in (b, a)},
        title="Token accuracy against sentence length (held out)",
        x_name="words in the sentence",
        y_name="token accuracy",
        y_range=(0, 1.02),
    )
    steps = [p.step for p in b.curve]
    one, att = (
        figures.lines(
            steps,
            {
                f"{n} words": [p.accuracy[n] for p in r.curve]
                for n in bottleneck_training.CURVE_LENGTHS
            },
            title=f"{NAMES[r.kind].capitalize()}: token accuracy during training (held out)",
            x_name="step",
            y_name="token accuracy",
            markers=False,
            y_range=(0, 1.02),
        )
        for r in (b, a)
    )
    width = b.config.model.hidden
    same = b.parameters == a.parameters
    sizes = (
        f"Both models have the same hidden width ({width}) and "
        + (
            f"the same {b.parameters:,} parameters: dot-product attention adds none."
            if same
            else f"{b.parameters:,} and {a.parameters:,} parameters."
        )
        + f" Each trained {b.config.steps:,} steps of {b.config.batch_size} sentences of "
        f"{b.config.min_length}–{b.config.max_length} words, from seed {b.config.seed}; the "
        f"accuracies are measured on {rec.final_size} sentences of each length that neither saw."
    )
    nb, na = b.accuracy[AT_WORDS], a.accuracy[AT_WORDS]
    at_words = (
        f"At {AT_WORDS} words the one-vector decoder gets {percent(nb)} of the words right; "
        f"with attention, {percent(na)}."
    )
    short = min(lengths)
    at_words += (
        f" At {short} words they are {percent(b.accuracy[short])} and "
        f"{percent(a.accuracy[short])}: the same decoder, the same size: the length breaks the "
        f"one vector, not the model's capacity."
        if b.accuracy[short] >= 0.9
        else ""
    )
    hits = a.alignment_hits if a.alignment_hits is not None else math.nan
    alignment = (
        f"On held-out sentences of every length from {short} to {max(lengths)}, the attention "
        f"model's largest weight falls on the English word being translated for "
        f"{percent(hits)} of the words it writes."
    )
    bridge = (
        f"This is cross-attention: the query is the decoder's state (one vector of {width} "
        "numbers), the keys and the values are the encoder's states, one per English word. "
        "Pass 1 does the same arithmetic inside one sequence: every token's row of X is a query "
        "against every row of X (scores XXᵀ), a row softmax, a weighted sum αX: self-attention."
    )
    during_caption = (
        f"Measured every {rec.measure_every} steps on {rec.curve_size} held-out sentences of "
        f"each length. Each training batch holds sentences of one length, drawn from "
        f"{b.config.min_length}–{b.config.max_length} words."
    )
    return RunLesson(by_length, (one, att), during_caption, sizes, at_words, alignment, bridge)


@dataclass(frozen=True)
class AlignStep:
    """One step of a cell's derivation: a title and a sentence computed from the numbers."""

    name: str  # "states", "score", "softmax", "cell"
    title: str
    sentence: str


@dataclass(frozen=True)
class AlignCell:
    """Every number behind one weight of the alignment: Mirror word ``row`` (0-based) against
    English word ``col``, recomputed in float64 from the decoder's and the encoder's states."""

    row: int
    col: int
    heading: str
    steps: tuple[AlignStep, ...]
    score_chart: figures.Chart  # the score as the sum of its terms s_t[d] h_j[d]
    softmax_chart: figures.Chart  # the row's softmax, the cell marked
    score: float  # s_t · h_j, the terms added up in float64
    weight: float  # the row's softmax at the cell, in float64
    cell: float  # what the panel's cell holds (the model's own weight)


@dataclass(frozen=True)
class AlignLesson:
    """One English sentence through both recorded models."""

    words: tuple[str, ...]
    table: pd.DataFrame  # one row per target position
    panels: dict[str, Panel]  # "why_align": the attention weights (target × source)
    outcome: str  # both models' scores and the bottleneck's first mistake
    argmax: str  # where the alignment's largest weights fall
    hits: int  # target words whose largest weight is on their source word
    first_wrong: int | None  # the bottleneck's first wrong target position (0-based)
    queries: torch.Tensor  # the decoder's states s_t, one per word written: (n, width)
    keys: torch.Tensor  # the encoder's states h_j, one per English word: (n, width)

    @property
    def claims(self) -> tuple[Claim, ...]:
        return (Claim(self.argmax, "why_align", "rows_sum_to_one"),)

    @property
    def width(self) -> int:
        """The models' hidden width: the length of a query and a key."""
        return int(self.queries.shape[1])

    def cell(self, t: int, j: int) -> AlignCell:
        """The weight of Mirror word ``t`` on English word ``j`` (both 0-based), from the dot
        products up: what the panel's cell holds, recomputed in float64."""
        panel = self.panels["why_align"]
        rows, cols = panel.rows, panel.cols
        n = len(cols)
        s, h = self.queries[t], self.keys[j]
        scores = self.queries[t].double() @ self.keys.double().T  # the whole row, float64
        score = float((s.double() * h.double()).sum())
        top = float(scores.max())
        exps = torch.exp(scores - top)
        total = float(exps.sum())
        weights = exps / total
        weight = float(weights[j])
        cell = float(panel.values[t, j])
        big = int(panel.values[t].argmax())
        right = n - 1 - t  # the English word this row translates
        qs, kh = f"s_{t + 1}", f"h_{j + 1}"
        positive = int(((s * h) > 0).sum())
        steps = (
            AlignStep(
                "states",
                "The query and the key",
                f"The query is the decoder's state {qs} as it writes Mirror word {rows[t]} "
                f"({self.width} numbers); the key is the encoder's state {kh} of English word "
                f"{cols[j]} ({self.width} numbers). The model has no W_q or W_k: it compares "
                "the two states themselves.",
            ),
            AlignStep(
                "score",
                "The score",
                f"ω = {qs} · {kh} = Σ_d {qs}[d] × {kh}[d]: {self.width} terms, {positive} of "
                f"them positive, adding up to {score:.4f}.",
            ),
            AlignStep(
                "softmax",
                "The row's softmax",
                f"α = exp(ω − m) / Σ_k exp(ω_k − m), with m = {top:.4f} the row's largest "
                f"score: exp({score:.4f} − {top:.4f}) / {total:.4f} = {float(exps[j]):.4f} / "
                f"{total:.4f} = {weight:.4f}.",
            ),
            AlignStep(
                "cell",
                "The cell",
                f"The alignment's cell ({rows[t]}, {cols[j]}) holds {cell:.4f}"
                + (
                    ", the row's largest weight"
                    if big == j
                    else f"; the row's largest weight, {float(panel.values[t, big]):.4f}, is "
                    f"on English word {cols[big]}"
                )
                + f". Row {rows[t]} translates English word {cols[right]}"
                + (": this one." if j == right else "."),
            ),
        )
        score_chart = figures.score_terms(
            s, h, query=t + 1, key=j + 1, score=score, names=("s", "h")
        )
        softmax_chart = figures.softmax_row(
            scores,
            exps,
            weights,
            cols,
            query=t + 1,
            key=j,
            row_sum=total,
            shift=top,
            title=f"Softmax of row {rows[t]}: weight = exp(ω − {top:.4f}) ÷ {total:.4f}",
            score_name="score ω",
            symbol="ω",
        )
        heading = f"Mirror word {rows[t]} → English word {cols[j]}: weight {cell:.4f}"
        return AlignCell(t, j, heading, steps, score_chart, softmax_chart, score, weight, cell)


def align_lesson(words: tuple[str, ...], rec: bottleneck_run.Recorded) -> AlignLesson:
    """Translate ``words`` (known toy words, 1–40 of them) with both recorded models."""
    source = toy_language.ids_of(words)
    right = toy_language.target_ids(source)[0]
    with torch.inference_mode():
        att = rec.attention.model.greedy(source)
        one = rec.bottleneck.model.greedy(source)
    assert att.weights is not None
    n = len(words)
    att_words, one_words = toy_language.words_of(att.ids[0]), toy_language.words_of(one.ids[0])
    right_words = toy_language.words_of(right)
    table = pd.DataFrame(
        {
            "target word": range(1, n + 1),
            "right": right_words,
            "with attention": [
                w + ("" if w == r else " ✗") for w, r in zip(att_words, right_words, strict=True)
            ],
            "one vector": [
                w + ("" if w == r else " ✗") for w, r in zip(one_words, right_words, strict=True)
            ],
            "translates English word": [n - t for t in range(n)],
        }
    )
    weights = att.weights[0].clone()
    rows = tuple(f"{t + 1}: {w}" for t, w in enumerate(att_words))
    cols = tuple(f"{j + 1}: {w}" for j, w in enumerate(words))
    panel = matrix_panel(
        "why_align",
        weights,
        rows,
        cols,
        kind=WEIGHTS,
        row_name="Mirror word written",
        col_name="English word",
        value_name="weight",
        annotate=n <= 12,
    )
    a_right = sum(w == r for w, r in zip(att_words, right_words, strict=True))
    o_right = sum(w == r for w, r in zip(one_words, right_words, strict=True))
    wrong = [t for t in range(n) if one_words[t] != right_words[t]]
    first = wrong[0] if wrong else None
    outcome = (
        f"With attention, {a_right} of the {n} words are right; from one vector, {o_right}. "
        + (
            f"The one-vector decoder first goes wrong at word {first + 1}: it writes "
            f"“{one_words[first]}” where “{right_words[first]}” (English “{words[n - 1 - first]}”) "
            "belongs."
            if first is not None
            else "The one-vector decoder gets every word of this sentence right: lengthen it."
        )
    )
    truth = torch.tensor(toy_language.true_source_position(n))
    hits = int((weights.argmax(-1) == truth).sum())
    argmax = (
        f"Each row is one softmax over the {n} English words (it sums to 1). In {hits} of the "
        f"{n} rows the largest weight is on the English word that row translates."
    )
    return AlignLesson(
        words,
        table,
        {"why_align": panel},
        outcome,
        argmax,
        hits,
        first,
        att.queries[0].clone(),
        att.keys[0].clone(),
    )
