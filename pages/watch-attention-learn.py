"""Beyond the book: train one causal attention layer and watch its weights become sharp."""

from ui import entry

entry.guard(__file__)  # a fresh server's first visit: let app.py run this page

import pandas as pd
import streamlit as st

from attnviz import figures as F
from attnviz import learn
from attnviz import modules as M
from ui import learn as ui_learn
from ui import panels

st.title("5. Watch attention learn")
st.write(
    "The chapter's weights are random, so its attention rows are nearly uniform: every token "
    "spreads its attention over all the tokens it can see. Trained heads look sharp. Here one "
    "causal attention layer (the chapter's `MultiHeadAttention` with dropout 0, plus a small "
    "output layer) is trained on a made-up task whose right attention pattern is known in "
    "advance, so you can watch the weights move from uniform to that pattern."
)
st.info(
    "This page has its own inputs and controls: the sidebar's text, sizes and seeds do not "
    "apply here.",
    icon=":material/info:",
)
warning = ui_learn.read_url()
if warning:
    st.warning(warning)

# --- the controls ----------------------------------------------------------------------------
D = ui_learn.DEFAULTS
with st.container(border=True):
    left, middle, right = st.columns(3)
    with left:
        task = st.radio(
            "Task",
            list(learn.TASKS),
            index=list(learn.TASKS).index(D.task),
            captions=[learn.TASKS["shift"], learn.TASKS["marked"]],
            key="task",
            bind="query-params",
        )
        k = st.number_input(
            "k (how far back, shift task)",
            min_value=int(learn.BOUNDS["k"][0]),
            max_value=int(learn.BOUNDS["k"][1]),
            value=D.k,
            step=1,
            key="k",
            bind="query-params",
            disabled=task != "shift",
        )
    with middle:
        heads = st.radio(
            "Heads",
            list(learn.HEAD_CHOICES),
            index=list(learn.HEAD_CHOICES).index(D.num_heads),
            horizontal=True,
            key="lheads",
            bind="query-params",
            help=f"d_out = {D.d_out} in total, split into heads of d_out / heads columns.",
        )
        lr = st.select_slider(
            "Learning rate (Adam)",
            options=list(learn.LR_CHOICES),
            value=D.lr,
            key="lr",
            bind="query-params",
        )
    with right:
        steps = st.number_input(
            "Training steps",
            min_value=ui_learn.STEPS_RANGE[0],
            max_value=ui_learn.STEPS_RANGE[1],
            value=D.steps,
            step=10,
            key="steps",
            bind="query-params",
            help=f"Each step is one Adam update on a fresh batch of {D.batch_size} sequences.",
        )
        seed = st.number_input(
            "Seed",
            min_value=ui_learn.SEED_RANGE[0],
            max_value=ui_learn.SEED_RANGE[1],
            value=D.seed,
            step=1,
            key="lseed",
            bind="query-params",
            help="Fixes the initial weights (torch.manual_seed, as the book) and the batches.",
        )
    config = learn.LearnConfig(
        task=task,
        k=int(k) if task == "shift" else D.k,  # the marked task has no k: one cache entry
        num_heads=int(heads),
        lr=float(lr),
        steps=int(steps),
        seed=int(seed),
    )
    st.caption(
        f"Defaults: one head, Adam at learning rate **{learn.DEFAULT_LR}**, {learn.DEFAULT_STEPS} "
        f"steps of {D.batch_size} sequences. With them both tasks reach 100% held-out accuracy "
        "and more than 0.9 of the attention on the expected key (checked for 30 seeds). "
        f"Inputs: {D.vocab} symbols, sequences of {D.seq_len}, each token encoded as a one-hot "
        f"symbol (plain or marked) beside a one-hot position: d_in = {config.d_in}."
    )
    pressed = st.button("Train", type="primary", key="ltrain", icon=":material/play_arrow:")

# --- the task ----------------------------------------------------------------------------------
if task == "shift":
    st.write(
        f"**Shift**: at every position, output the symbol {config.k} positions earlier. The "
        f"first {config.k} positions have nothing to copy, so they have no target and count "
        f"neither in the loss nor in the accuracy. The right attention pattern is one "
        f"off-diagonal: query i looks at key i − {config.k}."
    )
else:
    st.write(
        "**Marked**: every sequence holds exactly one marked symbol (shown with *). From the "
        "mark on, every position outputs the marked symbol; before it, the answer is “none”. "
        "The right attention pattern is the mark's column: every query at or after the mark "
        "looks at it."
    )
example_table = pd.DataFrame(
    [
        {"": row, **{str(i): cell for i, cell in enumerate(cells)}}
        for row, cells in learn.example_rows(config).items()
    ]
)
st.dataframe(example_table, hide_index=True)
st.caption("The fixed example the heatmaps below show (it is never trained on). — : no target.")
st.latex(
    r"A = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}} + M_{\text{causal}}\right),\quad "
    r"\hat y = \mathrm{Linear}(\mathrm{out\_proj}(AV)),\quad "
    r"\mathcal{L} = -\frac{1}{|P|}\sum_{i \in P} \log \mathrm{softmax}(\hat y_i)_{y_i}"
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

    result = ui_learn.train(config, on_progress)
    if shown[0] < 0:
        bar.progress(100, text="Already trained with these settings: shown from the cache.")
    else:
        bar.progress(100, text=f"Trained {config.steps} steps in {result.seconds:.2f} s.")
else:
    result = ui_learn.existing_run(config)

if result is None:
    st.info(
        "Press **Train** to train the layer with these settings (nothing trains until you do).",
        icon=":material/play_arrow:",
    )
    st.stop()

# --- the result --------------------------------------------------------------------------------
st.header("Result")
H = config.num_heads
cols = st.columns(4)
cols[0].metric("Held-out accuracy", f"{result.held_out_accuracy:.1%}")
cols[1].metric("Held-out loss", f"{result.held_out_loss:.4f}")
cols[2].metric("Steps", f"{config.steps}")
cols[3].metric("Training time", f"{result.seconds:.2f} s")
st.caption(
    f"Held out: {learn.HELD_OUT_SIZE:,} fresh sequences from their own generator, never trained "
    "on. Loss and accuracy count only positions that have a target."
)
st.markdown(
    "**Share of attention on the expected key** (held out, averaged over positions that have one)"
)
share_cols = st.columns(min(H, 4))
for h, share in enumerate(result.head_share):
    with share_cols[h % len(share_cols)]:
        good = share >= 0.9
        st.badge(
            f"Head {h}: {share:.3f}",
            color="green" if good else "orange",
            icon=":material/check_circle:" if good else ":material/info:",
        )
if H > 1:
    st.caption(
        "With several heads, one head may solve the task while the others do something else: "
        "the output layer reads from all of them."
    )
elif max(result.head_share) < 0.9 and result.held_out_accuracy >= 0.99:
    st.caption(
        "The task is solved, but the attention is still blurry: once the loss is near 0 the "
        "gradients vanish, so nothing pushes the weights to sharpen further. A larger learning "
        "rate sharpens before that happens."
    )

step_axis = list(range(1, config.steps + 1))
curves = (
    ("loss", "training loss", result.loss, "Loss on each training batch", "cross-entropy", None),
    (
        "accuracy",
        "training accuracy",
        result.accuracy,
        "Accuracy on each training batch",
        "accuracy",
        (0.0, 1.02),
    ),
)
for column, (key, name, series, title, y_name, y_range) in zip(st.columns(2), curves, strict=True):
    figure = F.lines(
        step_axis,
        {name: series},
        title=title,
        x_name="step",
        y_name=y_name,
        markers=config.steps <= 60,
        y_range=y_range,
    )
    panels.chart(figure, key=f"fig_p5_{key}", container=column)


def head_figure(weights, h: int, step: int):
    return F.heatmap(weights[h], result.labels, result.labels, title=f"Head {h}, step {step}")


@st.fragment
def snapshots(res: learn.LearnResult) -> None:
    """Scrub through training: only this part reruns when the slider moves."""
    steps_recorded = [s.step for s in res.snapshots]
    step = st.select_slider(
        "Training step (snapshot)",
        options=steps_recorded,
        value=steps_recorded[-1],
        key=f"lsnap_{res.config.steps}_{res.config.snapshots}",
    )
    snap = res.snapshots[steps_recorded.index(step)]
    shares = ", ".join(
        f"head {h} {share:.2f}"
        for h, share in enumerate(learn.pattern_share(snap.weights, res.expected))
    )
    if step == 0:
        where = "Step 0: the freshly initialised layer, before any update"
    else:
        where = (
            f"Step {step}: training loss {res.loss[step - 1]:.4f}, "
            f"batch accuracy {res.accuracy[step - 1]:.1%}"
        )
    st.caption(f"{where}. Attention on the expected key in this example: {shares}.")
    grid = st.columns(2)
    for h in range(res.config.num_heads):
        with grid[h % len(grid)]:
            panels.chart(head_figure(snap.weights, h, step), key=f"fig_p5_snap_{h}")
    if res.config.num_heads == 1:  # room beside the one head: the target, for comparison
        with grid[1]:
            expected = F.heatmap(
                res.expected,
                res.labels,
                res.labels,
                title="Expected (for comparison)",
                value_name="expected",
            )
            panels.chart(expected, key="fig_p5_snap_expected")


st.header("Watch the weights change")
st.write(
    f"The attention weights on the fixed example, recorded at {len(result.snapshots)} steps. "
    "Move the slider from step 0 (nearly uniform rows, as in the chapter) to the end."
)
snapshots(result)

st.header("Learnt against expected")
figures = [
    (
        F.heatmap(
            result.expected,
            result.labels,
            result.labels,
            title="Expected: the key that solves the task",
            value_name="expected",
        ),
        result.expected,
        "p5_expected",
    )
] + [
    (
        F.heatmap(
            result.final_weights[h],
            result.labels,
            result.labels,
            title=f"Learnt: head {h} after {config.steps} steps",
        ),
        result.final_weights[h],
        f"p5_final_{h}",
    )
    for h in range(H)
]
for row in range(0, len(figures), 2):
    pair = st.columns(2)
    for col, (fig, z, key) in zip(pair, figures[row : row + 2], strict=False):
        with col:
            panels.matrix(fig, z, result.labels, result.labels, key=key, numbers=False)
st.caption(
    "Rows of the expected pattern that are all 0 have no expected key (no target, or a position "
    "before the mark)."
)

panels.source(
    learn.AttentionLearner,
    learn.shift_batch,
    learn.marked_batch,
    learn.masked_loss,
    learn.train,
    M.MultiHeadAttention,
    title="The engine's code for this",
)
