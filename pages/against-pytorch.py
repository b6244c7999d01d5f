"""Page 6: the chapter's MultiHeadAttention beside PyTorch's own attention: numbers, then speed."""

from ui import entry

entry.guard(__file__)  # a fresh server's first visit: let app.py run this page

import streamlit as st

from attnviz.models import implementations as impl
from ui import render as panels
from ui import state
from ui.models import comparison
from ui.text import md_escape

cfg = state.config()
args = cfg.trace_args("multihead", random=True)  # trained weights are for passes 2–4
training = cfg.settings.training and not cfg.book

panels.page_top(__file__)  # title, paragraph and formula: ui/intros.toml

panels.causal_trace_or_stop("multihead", cfg, args)  # stops with the reason when it cannot run
view = comparison.lesson(*args, training)
if view.training_note:
    st.info(view.training_note)
numbers = panels.show_numbers_toggle()

# --- outputs -----------------------------------------------------------------------------------
st.header("Outputs side by side")
st.write(
    "The same input X, three implementations. Ours is the chapter's MultiHeadAttention. For "
    "SDPA the queries, keys and values are projected and split into heads as ours are, then "
    "`scaled_dot_product_attention(q, k, v, is_causal=True)` replaces the scores, the mask, the "
    "softmax and the weighted sum, and the same `out_proj` follows. nn.MultiheadAttention gets "
    "our three projection matrices stacked into its `in_proj_weight`, our `out_proj`, and a "
    "boolean causal `attn_mask`."
)
st.code(view.code, language="python")
for column, output in zip(st.columns(3), view.outputs, strict=True):
    with column:
        if output.panel is None:
            st.markdown(f"**{output.name}**")
            st.info(md_escape(output.not_applicable))
        else:
            panels.show(output.panel, numbers=numbers)
panels.badges(view.checks)
st.caption(
    "Not bit for bit: the implementations add and multiply in different orders, and float32 "
    "rounding follows the order. Each check allows the engine's tolerance, which grows with the "
    "size of the numbers and the length of the sums."
)

# --- weights -----------------------------------------------------------------------------------
st.header("Per-head attention weights")
st.write(
    "`scaled_dot_product_attention` returns only the context vectors: its weights are never "
    "stored, so there is nothing of SDPA's to draw here. nn.MultiheadAttention can return them "
    "(`need_weights=True`); with `average_attn_weights=False` it gives one (T, T) matrix per "
    "head instead of their mean."
)
if view.weights_na:
    st.info(md_escape(view.weights_na))
else:
    head = panels.pick_head(view.num_heads, key="head")
    panels.beside(*comparison.head_panels(view, args, head), numbers=numbers)
    panels.claims(view.claims)
panels.badge(view.weights_check)

# --- speed -------------------------------------------------------------------------------------
st.header("Speed")
st.write(
    "Seven ways to compute the same function, each built from the weights of one "
    "MultiHeadAttention and checked against it (the same check as above) before it is timed: "
    "the chapter's wrapper of CausalAttention heads (followed by the same `out_proj`, to compare "
    "like with like), the chapter's weight-split MultiHeadAttention, one combined QKV projection, "
    "einsum, SDPA, and nn.MultiheadAttention with and without `need_weights`. Batch 1, eval "
    "mode, `torch.inference_mode()`, random inputs of the chosen shape; the implementations take "
    "turns (round-robin), so a busy moment of the server slows all of them alike, and the chart "
    "shows the median of each."
)
st.subheader("Why the fused kernel can be faster, and what it gives up")
st.write(
    "The explicit version writes every head's T×T matrix to memory and reads it back at each "
    "step: the scores, the masked scores, the scaled scores, the weights, then the product with V. "
    "At 1,024 tokens and 12 heads one such matrix is 12 × 1,024 × 1,024 floats, 48 MB, far more "
    "than fits in a CPU's caches. `scaled_dot_product_attention` is one call into one fused "
    "kernel: it works through the keys block by block, keeps a running maximum and a running sum "
    "for each query's softmax (the online softmax of FlashAttention), and adds each block's share "
    "to the output. The T×T matrix never exists as a whole, and with `is_causal=True` the kernel "
    "can skip the blocks above the diagonal instead of computing scores only to mask them."
)
st.write(
    "What it gives up: because the weights never exist, there is nothing to draw or inspect. "
    "That is why every other page of this app runs the explicit version, and why "
    "nn.MultiheadAttention has to compute the weights the slow way when you ask for them "
    "(`need_weights=True`, its default). Whether the fused kernel wins at all depends on the "
    "shape and the machine: the sentence under each chart says what this measurement shows."
)
left, right = st.columns(2)
with left:
    if st.button("Measure at these settings", key="p6_measure_here"):
        st.session_state["p6_here"] = view.here_shape
    st.caption(view.here_caption)
with right:
    if st.button(
        "Measure at the book's benchmark shape (1024 tokens, 768 wide, 12 heads)",
        key="p6_measure_book",
    ):
        st.session_state["p6_book"] = True
    st.caption(
        "GPT-2 small's attention, as in the book's bonus notebook (which uses batch 8; here "
        "batch 1): about half a minute on an idle two-core server, longer on a busy one."
    )

for key, shape, heading, wanted in (
    (
        "here",
        view.here_shape,
        "At these settings",
        st.session_state.get("p6_here") == view.here_shape,
    ),
    (
        "book",
        impl.BOOK_BENCH_SHAPE,
        "At the book's benchmark shape",
        st.session_state.get("p6_book"),
    ),
):
    if not wanted:
        continue
    speed = comparison.speed(shape)
    st.subheader(heading)
    if speed.figure is not None:
        panels.plot(speed.figure, key=f"p6_{key}", numbers=numbers)
        st.caption(
            "Yellow: the chapter's MultiHeadAttention and the fused SDPA kernel. The ratio at "
            "the right of each bar is its median over the fastest median."
        )
    st.write(md_escape(speed.sentences))
    panels.formatted_table(
        speed.table, {"largest difference from ours": "%.2e", "tolerance": "%.2e"}
    )
    st.caption(speed.caption)

panels.source(
    impl.WrapperThenOutProj,
    impl.CombinedQKV,
    impl.SDPA,
    impl.Einsum,
    impl.TorchMHA,
    impl.verify,
    title="The benchmark's implementations (attnviz/models/implementations.py)",
)
