"""Page 6: the chapter's MultiHeadAttention beside PyTorch's own attention: numbers, then speed."""

from ui import entry

entry.guard(__file__)  # a fresh server's first visit: let app.py run this page

import pandas as pd
import streamlit as st

from attnviz import figures as F
from attnviz import implementations as impl
from ui import comparison, panels, state
from ui.text import md_escape

cfg = state.config()
args = cfg.trace_args("multihead")
s = cfg.settings

st.title("6. Your module against PyTorch's")
st.write(
    "PyTorch has attention of its own: the function "
    "`torch.nn.functional.scaled_dot_product_attention` (SDPA) and the class "
    "`torch.nn.MultiheadAttention`. Given the same weights as the chapter's MultiHeadAttention, "
    "both must compute the same numbers. This page checks that on your text, head by head, and "
    "then times the chapter's versions against PyTorch's."
)
st.latex(
    r"\mathrm{SDPA}(Q_h, K_h, V_h) = \mathrm{softmax}\!\left(\frac{Q_h K_h^\top}"
    r"{\sqrt{d_{\text{head}}}} + M\right) V_h"
    r"\quad\text{for each head } h \text{, in one call}"
)

trace = panels.causal_trace_or_stop("multihead", cfg, args)
spec = trace.spec
labels, n = trace.labels, trace.num_tokens
H, head_dim = spec.num_heads, spec.d_out // spec.num_heads
if s.training and not cfg.book:
    st.info(
        "Training mode is on in the sidebar. This page compares in eval mode, where dropout is "
        "the identity: each implementation would draw its own dropout mask, so in training mode "
        "no two of them give the same numbers."
    )
numbers = panels.show_numbers_toggle()
side = comparison.side_by_side(*args)

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
st.code(
    f"torch.manual_seed({spec.seed})\n"
    f"mha = {spec.constructor_call()}.eval()\n"
    f"ours = mha(x)  # x: {tuple(trace.inputs.shape)}\n\n"
    "context = F.scaled_dot_product_attention(queries, keys, values, is_causal=True)"
    "  # (b, H, T, head_dim)\n\n"
    "ref = nn.MultiheadAttention(d_out, num_heads, bias=True, batch_first=True)  # + our weights\n"
    "future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)  # True = may not attend\n"
    "theirs, weights = ref(x, x, x, attn_mask=future, need_weights=True, "
    "average_attn_weights=False)",
    language="python",
)
out_dims = F.dim_labels(spec.d_out, "out")
top = float(side.ours.abs().max()) or 1.0  # one colour scale for all three
annotate = spec.d_out <= 4
cols = st.columns(3)
for col, (name, tensor, key) in zip(
    cols,
    (
        ("Ours: MultiHeadAttention", side.ours, "ours"),
        ("SDPA (+ the same projections)", side.sdpa, "sdpa"),
        ("nn.MultiheadAttention", side.torch_mha, "torch"),
    ),
    strict=True,
):
    with col:
        if tensor is None:
            st.markdown(f"**{name}**")
            st.info(md_escape(f"Not applicable: {side.not_applicable}."))
            continue
        fig = F.heatmap(
            tensor[0],
            labels,
            out_dims,
            title=f"{name} {tuple(tensor[0].shape)}",
            kind="signed",
            zmax=top,
            row_name="token",
            col_name="output dim",
            value_name="value",
            annotate=annotate,
        )
        panels.matrix(fig, tensor[0], labels, out_dims, key=f"p6_{key}", numbers=numbers)
panels.badges(side.checks)
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
if side.torch_weights is None:
    st.info(
        md_escape(
            f"Not applicable: {side.not_applicable}. Set d_in equal to d_out in the sidebar "
            "(book mode uses the chapter's d_in=3, d_out=2) to compare weights."
        )
    )
else:
    head = st.selectbox("Head", list(range(H)), key="p6_head") if H > 1 else 0
    head = min(int(head), H - 1)
    left, right = st.columns(2)
    for col, (name, weights, key) in zip(
        (left, right),
        (
            ("Ours", side.ours_weights, "ours_w"),
            ("nn.MultiheadAttention", side.torch_weights, "torch_w"),
        ),
        strict=True,
    ):
        with col:
            fig = F.heatmap(weights[0, head], labels, labels, title=f"{name}: head {head}")
            panels.matrix(fig, weights[0, head], labels, labels, key=f"p6_{key}", numbers=numbers)
panels.badge(side.weights_check)

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

here_shape = (1, n, spec.d_in, spec.d_out, H, spec.qkv_bias)
book_shape = impl.BOOK_BENCH_SHAPE
left, right = st.columns(2)
with left:
    if st.button("Measure at these settings", key="p6_measure_here"):
        st.session_state["p6_here"] = here_shape
    timing_s = impl.seconds_per_impl_for(here_shape) * len(impl.KEYS)
    st.caption(
        f"1 × {n} tokens, d_in {spec.d_in}, d_out {spec.d_out}, {H} heads: about "
        f"{timing_s:.0f} s of timing, plus building and checking."
    )
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


def show(result: impl.BenchResult, key: str, heading: str) -> None:
    st.subheader(heading)
    timed = sorted((t for t in result.timings if t.timed), key=lambda t: t.median_s)
    if timed:
        fig = F.timing_bars(
            [t.label for t in timed],
            [t.ms for t in timed],
            [t.ratio for t in timed],
            low_ms=[t.low_s * 1e3 for t in timed],
            high_ms=[t.high_s * 1e3 for t in timed],
            highlight={i for i, t in enumerate(timed) if t.key in ("weight_split", "sdpa")},
            title="Median time per forward pass (whiskers: middle half of the samples)",
        )
        panels.chart(fig, key=f"fig_p6_{key}")
        st.caption(
            "Yellow: the chapter's MultiHeadAttention and the fused SDPA kernel. The ratio at "
            "the right of each bar is its median over the fastest median."
        )
    st.write(md_escape(result.verdict()))
    rows = []
    for t in result.timings:
        rows.append(
            {
                "implementation": t.label,
                "status": t.status,
                "median (ms)": None if t.ms is None else round(t.ms, 4),
                "middle half (ms)": (
                    f"{t.low_s * 1e3:.4g}–{t.high_s * 1e3:.4g}" if t.timed else ""
                ),
                "× fastest": None if t.ratio is None else round(t.ratio, 2),
                "largest difference from ours": (
                    None if t.check is None or t.check.max_diff is None else t.check.max_diff
                ),
                "tolerance": None if t.check is None else t.check.tol,
                "note": "" if t.status == "verified" else t.reason,
            }
        )
    st.dataframe(
        pd.DataFrame(rows),
        hide_index=True,
        column_config={
            "largest difference from ours": st.column_config.NumberColumn(format="%.2e"),
            "tolerance": st.column_config.NumberColumn(format="%.2e"),
        },
    )
    b, tokens, d_in, d_out, heads, bias = result.shape
    st.caption(
        f"Batch {b}, {tokens} tokens, d_in {d_in}, d_out {d_out}, {heads} heads"
        f"{', qkv_bias' if bias else ''}; median of {result.rounds} interleaved rounds "
        f"({result.calls_per_sample} call{'s' if result.calls_per_sample > 1 else ''} per sample); "
        f"{result.threads} CPU thread{'s' if result.threads > 1 else ''}, torch "
        f"{result.torch_version}; the whole measurement took {result.seconds:.0f} s. Measured "
        "once in this server process and shared by every session; other students' requests "
        "running at the same time make every number larger."
    )


for key, shape, heading, wanted in (
    ("here", here_shape, "At these settings", st.session_state.get("p6_here") == here_shape),
    ("book", book_shape, "At the book's benchmark shape", st.session_state.get("p6_book", False)),
):
    if wanted:
        show(comparison.measured(shape), key, heading)

panels.source(
    impl.WrapperThenOutProj,
    impl.CombinedQKV,
    impl.SDPA,
    impl.Einsum,
    impl.TorchMHA,
    impl.verify,
    title="The benchmark's implementations (attnviz/implementations.py)",
)
