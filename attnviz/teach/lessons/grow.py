"""Page 8, "Grow an induction head", as data: what the page shows at one step of the recorded
run, on the student's text, with a layer-0 head ablated, and of a run grown live.

Everything is read from :mod:`attnviz.models.induction.api` (the shipped reference run and its one-layer
control); nothing here trains. Heads are named only from their measured scores
(:func:`attnviz.models.detectors.name_of`), and every sentence about the maps is a
:class:`~attnviz.teach.panel.Claim` on the map it names.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from attnviz import figures
from attnviz.models import detectors as D
from attnviz.models.induction import api, mechanism
from attnviz.models.induction.passes import RULE, map_tokens
from attnviz.models.induction.recorded import MEASURE_EVERY, recorded
from attnviz.models.induction.train import HELD_OUT_SIZE, Measures, Progress
from attnviz.teach.lessons.heads import article, name_claims, pattern_claim
from attnviz.teach.panel import CAUSAL_WEIGHTS, Claim, Panel, Style, token_panel


def head_label(layer: int, head: int) -> str:
    """A head as "layer.head", the way induction heads are usually named ("1.2")."""
    return f"{layer}.{head}"


def _steps_words(steps: int) -> str:
    return f"{steps:,}"


# --- the recorded run at one step -------------------------------------------------------------
def recorded_words() -> str:
    """How the shipped run was recorded, read off its configuration."""
    cfg = recorded().reference.config
    steps, control = api.steps(), api.steps("control")
    return (
        f"Recorded once with seed {cfg.seed} for {cfg.steps:,} steps (Adam at learning rate "
        f"{cfg.lr:g}, batches of {cfg.batch_size} sequences of {cfg.model.context} random "
        f"tokens whose last {cfg.min_repeat} to {cfg.max_repeat} tokens repeat the ones before "
        f"them), with a checkpoint every {steps[1]:,} steps and measurements on "
        f"{HELD_OUT_SIZE} held-out sequences every {MEASURE_EVERY}. The one-layer control was "
        f"recorded the same way, with a checkpoint every {control[1]:,} steps."
    )


@dataclass(frozen=True)
class RunView:
    """The recorded run at one checkpoint: the numbers at that step, the curves over the whole
    run with the step marked, and what each head's held-out scores name it."""

    step: int
    metrics: tuple[tuple[str, str], ...]  # (label, value)
    loss: figures.Chart
    previous: figures.Chart
    induction: figures.Chart
    names: tuple[str, ...]  # one sentence per head, layer by layer: inside and before the repeat
    phase: str  # where the loss on the repeat falls fastest, and what the heads do then
    layer0: str  # which layer-0 head carries the most of the token before (the intro's claim)


def phase_sentence(curves: api.Curves, window: int = 8) -> str:
    """Where the loss on the repeat falls fastest over ``window`` logged steps, and the last
    layer's best induction score before and after: the phase change, found in the numbers."""
    repeat = np.asarray(curves.loss_repeat)
    if len(repeat) <= window:
        return ""
    drops = repeat[:-window] - repeat[window:]
    i = int(np.argmax(drops))
    a, b = curves.steps[i], curves.steps[i + window]
    best = curves.scores["induction"][:, -1].max(axis=-1)  # (steps,): the last layer's best head
    return (
        f"The loss on the repeat falls fastest between steps {_steps_words(a)} and "
        f"{_steps_words(b)}: from {repeat[i]:.2f} to {repeat[i + window]:.2f} nats, while the best "
        f"induction score of layer {curves.scores['induction'].shape[1] - 1} rises from "
        f"{best[i]:.2f} to {best[i + window]:.2f}. That jump is the phase change: before it the "
        "model can only guess the repeat's tokens; after it, a head finds the earlier copy."
    )


def held_out_names(measures: Measures) -> tuple[str, ...]:
    """What each head's held-out scores name it (a head is named at 0.5 or more), or its
    highest score when none is that high: the average over every query of a sequence (a live
    run keeps no weights to measure inside and before the repeat apart)."""
    names = api.head_names(measures)
    out = []
    for layer, row in enumerate(names):
        for head, name in enumerate(row):
            scores = {k: float(measures.scores[k][layer, head]) for k in D.DETECTORS}
            best = max(scores, key=lambda k: scores[k])
            what = name or (
                f"not named (its highest score, {D.NAMES[best].removesuffix(' head')}, "
                f"is {scores[best]:.2f})"
            )
            out.append(f"Head {head_label(layer, head)}: {what}")
    return tuple(out)


def role_names(roles: Sequence[mechanism.Role]) -> tuple[str, ...]:
    """Each head of the recorded run named from its scores measured inside the repeat and
    before it (:meth:`attnviz.models.induction.mechanism.Role.label`)."""
    return tuple(f"Head {head_label(r.layer, r.head)}: {r.label()}" for r in roles)


def layer0_previous_sentence(roles: Sequence[mechanism.Role]) -> str:
    """Layer 1 reads the token before a position only through what a layer-0 head wrote there:
    the highest previous-token score in layer 0 at this step (inside or before the repeat),
    and whether it names a previous-token head (0.5 or more). What layer 1's induction rests
    on is not said here: the ablations measure it (:func:`mechanism_sentences`)."""
    best = max(
        (
            (r.scores[part]["previous"], r.head, part)
            for r in roles
            if r.layer == 0
            for part in mechanism.PARTS
        ),
    )
    score, head, part = best
    where = f"{score:.2f} (head {head_label(0, head)}, {mechanism.PART_WORDS[part]})"
    if score >= D.NAMED_AT:
        return (
            f"Layer 0's highest previous-token score at this step: {where}, a previous-token "
            "head there."
        )
    return (
        f"No layer-0 head is a previous-token head at this step: the highest previous-token "
        f"score in layer 0 is {where}, below the {D.NAMED_AT} that names a head. Which "
        "layer-0 heads layer 1's induction rests on is measured under “Ablate” below."
    )


def _head_series(curves: api.Curves, score: str) -> dict[str, np.ndarray]:
    s = curves.scores[score]  # (steps, layers, heads)
    return {
        f"head {head_label(layer, head)}": s[:, layer, head]
        for layer in range(s.shape[1])
        for head in range(s.shape[2])
    }


def _score_lines(
    name: str, series: dict[str, np.ndarray], x, step: int, beside: dict[str, np.ndarray]
) -> figures.Chart:
    """One score of every head against the steps, from 0 to 1, ``step`` marked."""
    return figures.lines(
        x,
        series,
        title=f"{name} score of every head",
        x_name="step",
        y_name="score",
        markers=False,
        y_range=(0.0, 1.0),
        mark_x=step,
        mark_label=f"step {_steps_words(step)}",
        beside=len(beside),
    )


def run_view(step: int) -> RunView:
    """The reference run at checkpoint ``step`` (one of :func:`attnviz.models.induction.api.steps`)."""
    if step not in api.steps():
        raise ValueError(f"no checkpoint at step {step}")
    curves, control = api.curves(), api.curves("control")
    m = api.at_step(step)
    roles = mechanism.roles_at(step)
    x, mark = curves.steps, f"step {_steps_words(step)}"
    chance = curves.chance
    loss = figures.lines(
        x,
        {
            "first copy": curves.loss_first,
            "repeat": curves.loss_repeat,
            f"chance, ln {round(np.exp(chance))}": [chance] * len(x),
        },
        title="Loss on held-out sequences (nats)",
        x_name="step",
        y_name="loss",
        markers=False,
        mark_x=step,
        mark_label=mark,
    )
    induction_series = _head_series(curves, "induction")
    induction_series["control (best)"] = control.scores["induction"][:, -1].max(-1)
    previous_series = _head_series(curves, "previous")
    # The two charts are drawn side by side: each keeps room for the other's legend.
    previous = _score_lines("Previous-token", previous_series, x, step, beside=induction_series)
    induction = _score_lines("Induction", induction_series, x, step, beside=previous_series)
    last = m.scores["induction"].shape[0] - 1
    metrics = (
        ("Step", f"{_steps_words(step)} of {_steps_words(curves.steps[-1])}"),
        (f"Loss, first copy (chance {chance:.2f})", f"{m.loss_first:.2f}"),
        ("Loss, repeat", f"{m.loss_repeat:.2f}"),
        (f"Best induction score, layer {last}", f"{api.layer_induction(m):.2f}"),
    )
    return RunView(
        step,
        metrics,
        loss,
        previous,
        induction,
        role_names(roles),
        phase_sentence(curves),
        layer0_previous_sentence(roles),
    )


# --- the heads' maps on the student's text ------------------------------------------------------
@dataclass(frozen=True)
class MapsView:
    """Every head of the reference run at one step, and of the one-layer control at its latest
    checkpoint up to that step, on the student's text laid out as the model saw repeats."""

    step: int
    control_step: int
    probe: api.Probe
    layers: tuple[Panel, ...]  # one (heads, T, T) stack per layer of the reference run
    control: Panel  # the control's one layer
    claims: tuple[Claim, ...]  # on the panels above, by key
    layout: str  # how the text was laid out, in words

    @property
    def panels(self) -> dict[str, Panel]:
        return {p.key: p for p in (*self.layers, self.control)}

    def claims_for(self, key: str) -> tuple[Claim, ...]:
        return tuple(c for c in self.claims if c.panel == key)


def control_words(control_step: int) -> str:
    cfg = recorded().control.config
    return (
        f"Against layer 1, the one-layer control: the same design with {cfg.model.layers} "
        f"layer, trained as long (this is its checkpoint at step {control_step:,}). With no "
        "layer before it, nothing tells its heads which token came before each position; what "
        "its heads do on your text is said under its map."
    )


def control_step_for(step: int) -> int:
    """The control's latest checkpoint at or before ``step``."""
    return max(s for s in api.steps("control") if s <= step)


def _head_words(layer: int, head: int | None) -> str:
    return f"Head {head_label(layer, head or 0)}"


def _stack(key: str, weights: torch.Tensor, labels, title: str) -> Panel:
    return token_panel(key, weights, labels, title, kind=CAUSAL_WEIGHTS, style=Style(labelled=True))


def _probe_keys(n: int, repeat: int) -> dict[str, dict[str, tuple[int, ...]]]:
    """The detectors' expected keys on a probe, per part: inside the repeat (the text's second
    copy, queries n − L … n − 1) the token before, itself, the first token, the earlier copy of
    its own token (duplicate-token, key i − L) and the token after that copy (induction, key
    i − L + 1); before the repeat (queries 1 … n − L − 1) the token before, itself and the first
    token. A query outside the part has no key (its weights are not counted)."""
    i = torch.arange(n)
    inside = i >= n - repeat
    before = (~inside) & (i >= 1)

    def only(keys: torch.Tensor, where: torch.Tensor) -> tuple[int, ...]:
        return tuple(int(k) for k in torch.where(where, keys, D.NO_KEY).tolist())

    rules = {"previous": i - 1, "current": i, "first": torch.zeros_like(i)}
    return {
        "inside": {
            **{k: only(v, inside) for k, v in rules.items()},
            "duplicate": only(i - repeat, inside),
            "induction": only(D.repeat_keys(n, repeat), inside),
        },
        "before": {k: only(v, before) for k, v in rules.items()},
    }


PART_DETECTORS = {  # what each score measures on one part of a probe
    "previous": "mean weight on the token before (key i − 1)",
    "current": "mean weight on itself (key i)",
    "first": "mean weight on the first token (key 0)",
    "duplicate": "mean weight on the earlier copy of its own token (key i − L)",
    "induction": "mean weight on the token right after that earlier copy (key i − L + 1)",
}


def _part_claims(
    key: str, weights: torch.Tensor, labels, keys, who: Callable[[int | None], str]
) -> list[Claim]:
    """Each head named from its scores inside the repeat and before it, apart: a head can do
    one thing in the repeat and another before it (layer 0's head 2 does)."""
    out: list[Claim] = []
    for part, part_keys in keys.items():
        where = mechanism.PART_WORDS[part]
        words = {k: f"{v}, queries {where}" for k, v in PART_DETECTORS.items()}

        def in_part(h: int | None, where: str = where) -> str:
            return f"{who(h)}, {where},"

        out += name_claims(key, weights, labels, in_part, keys=part_keys, words=words)
    return out


def maps_view(step: int, token_ids: Sequence[int], displays: Sequence[str]) -> MapsView:
    """The maps at checkpoint ``step`` on the student's tokens (GPT-2 ids and their displays),
    mapped into the model's vocabulary by :data:`attnviz.models.induction.passes.RULE` and laid out
    by :func:`attnviz.models.induction.api.probe`."""
    laid = api.probe(map_tokens(token_ids).ids, displays)
    n = len(laid.ids)
    keys = _probe_keys(n, laid.repeat)
    ref = api.maps_at(step, laid.ids, laid.repeat)
    layers, claims = [], []
    for layer in range(ref.weights.shape[0]):
        key = f"p8_layer{layer}"
        panel = _stack(
            key,
            ref.weights[layer],
            laid.labels,
            f"Layer {layer}, {{heads}}, at step {_steps_words(step)}",
        )
        layers.append(panel)
        pattern = pattern_claim(key, panel.values)
        claims += [pattern] if pattern is not None else []
        claims += _part_claims(
            key, panel.values, laid.labels, keys, functools.partial(_head_words, layer)
        )
    c_step = control_step_for(step)
    ctl = api.maps_at(c_step, laid.ids, laid.repeat, name="control")
    control = _stack(
        "p8_control",
        ctl.weights[0],
        laid.labels,
        f"One-layer control, {{heads}}, at step {_steps_words(c_step)}",
    )
    claims += _part_claims(
        control.key, control.values, laid.labels, keys, lambda h: f"The control's head {h}"
    )
    fill = laid.start
    layout = (
        f"Your text, {laid.repeat} tokens, twice, after {fill} filler tokens (·): the model only "
        f"saw repeats that end at its last position ({n - 1}), after random tokens, so the "
        "filler puts your text where it learned to look. The filler tokens are ones your text "
        "does not use. Your tokens are mapped into the model's vocabulary by one rule. " + RULE
    )
    return MapsView(
        step,
        c_step,
        laid,
        tuple(layers),
        control,
        tuple(claims),
        " ".join((*laid.messages, layout)),
    )


# --- ablation -----------------------------------------------------------------------------------
ABLATION_HOW = (
    "Layer 1's heads can find the earlier copy of a token only through what layer 0 wrote into "
    "each position: nothing else before them moves information between positions. Zero "
    "layer-0 heads (their slice of the context, before out_proj), alone and together, and "
    f"measure layer 1's induction score again on {HELD_OUT_SIZE} held-out sequences."
)


def _heads_words(heads: Sequence[int], layer: int = 0) -> str:
    """ "head 0.2", "heads 0.0 and 0.1", "heads 0.0, 0.1 and 0.3"."""
    names = [head_label(layer, h) for h in heads]
    if len(names) == 1:
        return f"head {names[0]}"
    return f"heads {', '.join(names[:-1])} and {names[-1]}"


def _role_sentence(role: mechanism.Role) -> str:
    """One layer-0 head's three scores inside the repeat and before it, and its name where a
    score names it."""

    def part(where: str) -> str:
        s = role.scores[where]
        name = role.name_in(where)
        named = f" ({article(name)} {name} head there)" if name else ""
        return (
            f"{mechanism.PART_WORDS[where]}: {s['previous']:.2f} on the token before, "
            f"{s['duplicate']:.2f} on earlier copies of its own token and {s['current']:.2f} on "
            f"itself{named}"
        )

    return f"Head {head_label(role.layer, role.head)}, {part('inside')}; {part('before')}."


def mechanism_sentences(m: mechanism.Mechanism) -> tuple[str, ...]:
    """What the ablations at one step say layer 1's induction rests on, every number measured
    (:func:`attnviz.models.induction.mechanism.mechanism_at`), then what each layer-0 head
    does inside the repeat and before it."""
    every = tuple(range(m.heads))
    lowest, highest = min(m.zeroed.values()), max(m.zeroed.values())
    roles = tuple(_role_sentence(m.role(0, h)) for h in every)
    span = (
        f"at {lowest:.2f}"
        if f"{lowest:.2f}" == f"{highest:.2f}"
        else f"between {lowest:.2f} and {highest:.2f}"
    )
    if m.base < D.NAMED_AT:
        return (
            f"Layer 1 has no induction head yet at this step (its best induction score is "
            f"{m.base:.2f}, below the {D.NAMED_AT} that names one): zeroing any set of layer-0 "
            f"heads leaves it {span}.",
            *roles,
        )
    carriers = m.carriers
    others = tuple(h for h in every if h not in carriers)
    out = []
    if others:
        out.append(
            f"Layer 1's induction rests on {_heads_words(carriers)}: with "
            f"{_heads_words(others)} zeroed {'together' if len(others) > 1 else ''}".rstrip()
            + f", its score is {m.kept(carriers):.2f} (every head on: {m.base:.2f}); with "
            f"{_heads_words(carriers)} zeroed, {m.zeroed[carriers]:.2f} (all {m.heads} zeroed: "
            f"{m.zeroed[every]:.2f})."
        )
    else:
        out.append(
            f"No smaller set of layer-0 heads keeps {mechanism.KEEPS:.0%} of layer 1's induction "
            f"score ({m.base:.2f}) on its own: it rests on all {m.heads} (all zeroed: "
            f"{m.zeroed[every]:.2f})."
        )
    more = "inside the repeat" if m.zeroed_inside < m.zeroed_before else "before the repeat"
    out.append(
        f"Where {_heads_words(carriers)} {'is' if len(carriers) == 1 else 'are'} needed: zeroed "
        f"only inside the repeat (where layer 1's induction queries are), layer 1's score falls "
        f"to {m.zeroed_inside:.2f}; zeroed only before the repeat, to {m.zeroed_before:.2f}. "
        f"It is needed most {more}."
    )
    return (*out, *roles)


@dataclass(frozen=True)
class AblationView:
    step: int
    base: float  # the last layer's induction score, every head on
    sentences: tuple[str, ...]  # one per layer-0 head: what zeroing it does
    scores: tuple[float, ...]  # the last layer's induction score: every head on, then each zeroed
    mechanism: tuple[str, ...]  # what the ablations say it rests on, and each head's role

    def chart(self, head: int) -> figures.Chart:
        """The scores as bars, the zeroed ``head`` highlighted."""
        labels = ["every head on", *(f"head 0.{h} zeroed" for h in range(len(self.scores) - 1))]
        return figures.bars(
            self.scores,
            labels,
            title=f"Layer 1's induction score at step {_steps_words(self.step)}",
            value_name="induction score",
            ymax=1.0,
            highlight=1 + head,
        )


def ablation_view(step: int) -> AblationView:
    """Zero each layer-0 head in turn at ``step`` (:func:`attnviz.models.induction.api.ablation_at`)
    and say what each does to the last layer's induction score, in numbers; then what every
    set of them zeroed says (:func:`mechanism_sentences`)."""
    ab = api.ablation_at(step)
    m = mechanism.mechanism_at(step)
    sentences = []
    for h in ab.heads:
        if f"{h.drop:.0%}" in ("0%", "-0%"):
            change = "unchanged to the percent"
        elif h.drop > 0:
            change = f"{h.drop:.0%} of it lost"
        else:
            change = f"{-h.drop:.0%} gained"
        sentences.append(
            f"Zeroing head {head_label(0, h.head)}: layer 1's induction score goes from "
            f"{ab.base:.2f} to {h.induction:.2f} ({change})."
        )
    scores = (ab.base, *(h.induction for h in ab.heads))
    return AblationView(step, ab.base, tuple(sentences), scores, mechanism_sentences(m))


# --- a run grown live ---------------------------------------------------------------------------
@dataclass(frozen=True)
class GrownView:
    """A finished live run: its curves and what its heads' scores name them at the end."""

    seed: int
    steps: int
    seconds: float
    curves: figures.Chart
    names: tuple[str, ...]
    summary: str


def grown_chart(reports: Sequence[Progress], title: str) -> figures.Chart:
    """Loss on the repeat and the last layer's best induction score over a run's reports."""
    x = [p.step for p in reports]
    return figures.lines(
        x,
        {
            "loss on the repeat (nats)": [p.measures.loss_repeat for p in reports],
            "best induction score, last layer": [api.layer_induction(p.measures) for p in reports],
        },
        title=title,
        x_name="step",
        y_name="value",
        markers=False,
    )


def grown_view(seed: int, reports: Sequence[Progress]) -> GrownView:
    if not reports:
        raise ValueError("a run has at least its step-0 report")
    last = reports[-1]
    m = last.measures
    first_at = next(
        (p.step for p in reports if api.layer_induction(p.measures) >= D.NAMED_AT), None
    )
    when = (
        f"an induction score of {D.NAMED_AT} or more first appeared at step {first_at:,}"
        if first_at is not None
        else f"no head reached an induction score of {D.NAMED_AT}"
    )
    summary = (
        f"Seed {seed}, {last.step:,} steps in {last.seconds:.0f} s: {when}; at the end the loss "
        f"on the repeat is {m.loss_repeat:.2f} nats and layer 1's best induction score "
        f"{api.layer_induction(m):.2f} (measured on {api.GROW_HELD_OUT} held-out sequences)."
    )
    chart = grown_chart(reports, f"Your run: seed {seed}")
    return GrownView(seed, last.step, last.seconds, chart, held_out_names(m), summary)
