"""Beyond the book: train one causal attention layer and watch its weights become sharp."""

from ui import entry

entry.guard(__file__)  # a fresh server's first visit: let app.py run this page

import functools

import streamlit as st

from attnviz.core import modules as M
from attnviz.models import toy_tasks as learn
from attnviz.teach.lessons import watch_learn as lessons
from ui import cache
from ui import render as panels
from ui.models import watch as ui_learn
from ui.text import md_escape

panels.page_top(__file__)  # title, paragraph and formula: ui/intros.toml
st.info(
    "This page has its own inputs and controls, below: book mode and the text and settings in "
    "the sidebar do not apply here.",
    icon=":material/info:",
)
warning = ui_learn.read_url()
if warning:
    st.warning(warning)

# --- the controls (on the page, bound to the URL under their own names: ui/models/watch.py) -----------
config, pressed = ui_learn.controls()

# --- the task ----------------------------------------------------------------------------------
task_view = cache.lesson_of(("learn task", config), lambda: lessons.task_view(config))
st.write(task_view.sentence)
st.dataframe(task_view.example, hide_index=True)
st.caption("The fixed example the heatmaps below show (it is never trained on). — : no target.")
panels.formula(
    r"A = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}} + M_{\text{causal}}\right),\quad "
    r"\hat y = \mathrm{Linear}(\mathrm{out\_proj}(AV)),\quad "
    r"\mathcal{L} = -\frac{1}{|P|}\sum_{i \in P} \log \mathrm{softmax}(\hat y_i)[y_i]"
)
st.caption(
    "P: the positions that have a target. There is no residual path: the only way to the "
    "answer is through the attention weights."
)

# --- training (only on the button) -------------------------------------------------------------
if pressed:
    bar = st.progress(
        0, text="Starting (the first run after a server start also loads PyTorch's optimizer)…"
    )
    shown = [-1]

    def on_progress(step: int, total: int) -> None:
        percent = int(100 * step / total)
        if percent != shown[0]:  # at most 100 updates, however many steps
            shown[0] = percent
            bar.progress(percent, text=f"Training: step {step} of {total}")

    result: learn.LearnResult | None = ui_learn.train(config, on_progress)
else:
    result = ui_learn.existing_run(config)

if result is None:
    st.info(
        "Press **Train** to train the layer with these settings (nothing trains until you do).",
        icon=":material/play_arrow:",
    )
    st.stop()
view = cache.lesson_of(("learn", config, result.seconds), functools.partial(lessons.lesson, result))
if pressed:
    done = "Already trained with these settings: shown from the cache."
    bar.progress(100, text=done if shown[0] < 0 else view.trained_line)

# --- the result --------------------------------------------------------------------------------
st.header("Result")
for column, (label, value) in zip(st.columns(4), view.metrics, strict=True):
    column.metric(label, value)
st.caption(
    f"Held out: {learn.HELD_OUT_SIZE:,} fresh sequences from their own generator, never trained "
    "on. Loss and accuracy count only positions that have a target."
)
st.markdown(
    "**Share of attention on the expected key** (held out, averaged over positions that have one)"
)
share_cols = st.columns(min(config.num_heads, 4))
for h, (text, good) in enumerate(view.shares):
    with share_cols[h % len(share_cols)]:
        st.badge(
            text,
            color="green" if good else "orange",
            icon=":material/check_circle:" if good else ":material/info:",
        )
if view.share_note:
    st.caption(view.share_note)
for column, (key, figure) in zip(st.columns(2), view.curves, strict=True):
    panels.plot(figure, key=f"p5_{key}", numbers=False, container=column)


@st.fragment
def snapshots(snaps: tuple[lessons.SnapshotView, ...], steps: int) -> None:
    """Scrub through training: only this part reruns when the slider moves."""
    recorded = [s.step for s in snaps]
    step = st.select_slider(
        "Training step (snapshot)",
        options=recorded,
        value=recorded[-1],
        key=f"lsnap_{steps}_{len(recorded)}",
    )
    snap = snaps[recorded.index(step)]
    st.caption(snap.caption)
    grid = st.columns(2)
    for i, panel in enumerate(snap.panels):
        tail = panel.key.rsplit("_", 1)[-1]  # the head (or "expected"): stable across steps
        panels.chart(panel, key=f"fig_p5_snap_{tail}", container=grid[i % 2])


st.header("Watch the weights change")
st.write(
    f"The attention weights on the fixed example, recorded at {len(view.snapshots)} steps. "
    "Move the slider from step 0 (the untrained layer) to the end."
)
panels.claims(c for c in view.claims if c.panel.startswith("p5_snap"))
snapshots(view.snapshots, config.steps)

st.header("Learned against expected")
for row in range(0, len(view.compare), 2):
    for column, panel in zip(st.columns(2), view.compare[row : row + 2], strict=False):
        with column:
            panels.show(panel, numbers=False)
st.caption(
    "Rows of the expected pattern that are all 0 have no expected key (no target, or a position "
    "before the mark)."
)
for claim in view.claims:
    if claim.panel.startswith("p5_final"):
        st.caption(md_escape(claim.text))

panels.source(
    learn.AttentionLearner,
    learn.shift_batch,
    learn.marked_batch,
    learn.masked_loss,
    learn.train,
    M.MultiHeadAttention,
    title="The engine's code for this",
)
