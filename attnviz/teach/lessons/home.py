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
from attnviz.teach.panel import WEIGHTS, Claim, Panel
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
class AlignLesson:
    """One English sentence through both recorded models."""

    words: tuple[str, ...]
    table: pd.DataFrame  # one row per target position
    panels: dict[str, Panel]  # "why_align": the attention weights (target × source)
    outcome: str  # both models' scores and the bottleneck's first mistake
    argmax: str  # where the alignment's largest weights fall
    hits: int  # target words whose largest weight is on their source word
    first_wrong: int | None  # the bottleneck's first wrong target position (0-based)
    width: int  # the models' hidden width: the length of a query and a key

    @property
    def claims(self) -> tuple[Claim, ...]:
        return (Claim(self.argmax, "why_align", "rows_sum_to_one"),)

    def derive(self, t: int) -> tuple[str, ...]:
        """Row ``t``'s (0-based) largest weight, from the dot products up: what the panel's
        cell holds, recomputed in float64."""
        scores = self.panels["why_scores"].values[t].double()
        weights = self.panels["why_align"].values[t]
        j = int(weights.argmax())
        top = float(scores.max())
        terms = torch.exp(scores - top)
        alpha = float(terms[j] / terms.sum())
        rows, cols = self.panels["why_align"].rows, self.panels["why_align"].cols
        width = self.width
        return (
            f"Row {rows[t]}: the decoder's state s_{t + 1} (its {width} numbers as it writes "
            f"this word) is the query; each English word's encoder state h_j is a key.",
            f"The row's largest weight is in column {cols[j]}; its score is ω = s_{t + 1} · "
            f"h_{j + 1} = {float(scores[j]):.4f} (the row's scores run from "
            f"{float(scores.min()):.4f} to {top:.4f}).",
            f"Softmax over the row: α = exp(ω − {top:.4f}) / Σ_k exp(ω_k − {top:.4f}) = "
            f"{float(terms[j]):.4f} / {float(terms.sum()):.4f} = {alpha:.4f}.",
            f"The panel's cell ({t + 1}, {j + 1}) holds {float(weights[j]):.4f}"
            + (
                f"; it translates English word {j + 1}, the right one."
                if j == len(cols) - 1 - t
                else f"; the word this row translates is English word {len(cols) - t}."
            ),
        )


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
    scores = matrix_panel(
        "why_scores",
        (att.queries[0] @ att.keys[0].T).clone(),
        rows,
        cols,
        colour="signed",
        row_name="Mirror word written",
        col_name="English word",
        value_name="score",
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
    width = rec.attention.model.cfg.hidden
    return AlignLesson(
        words,
        table,
        {"why_align": panel, "why_scores": scores},
        outcome,
        argmax,
        hits,
        first,
        width,
    )
