"""Pass 4: multi-head attention, two ways (section 3.6)."""

from ui import entry

entry.guard(__file__)  # a fresh server's first visit: let app.py run this page

import pandas as pd
import streamlit as st
import torch

from attnviz import book, lesson, speed
from attnviz import bugs as B
from attnviz import checks as C
from attnviz import figures as F
from attnviz import modules as M
from attnviz import trace as T
from attnviz.settings import GPT2_SMALL, GPT2_XL, attention_flops, mha_parameter_count
from ui import cache, panels, state

cfg = state.config()
args = cfg.trace_args("multihead")
s = cfg.settings

st.title("4. Multi-head attention")
st.write(
    "One causal attention head learns one way of relating tokens. Multi-head attention runs "
    "several heads side by side, each with its own projections of width head_dim = d_out / "
    "num_heads, and joins their context vectors. The chapter builds it twice: first by stacking "
    "CausalAttention modules (the wrapper), then with one projection per role split into heads "
    "(the weight-split MultiHeadAttention, with an output projection that mixes the heads)."
)
st.latex(
    r"\mathrm{head}_h = \mathrm{softmax}\!\left(\frac{Q_h K_h^\top}{\sqrt{d_{\text{head}}}} + M\right)V_h,"
    r"\qquad \mathrm{MultiHead}(X) = \big[\mathrm{head}_1, \dots, \mathrm{head}_H\big]\,W_o + b_o"
)

# --- presets -----------------------------------------------------------------------------------
EX_3_2 = book.SPEC_EXERCISE_3_2  # the wrapper with d_out=1 per head: d_out=2 in total
PRESETS = {
    "Defaults": dict(
        d_in=state.DEFAULTS.d_in,
        d_out=state.DEFAULTS.d_out,
        heads=state.DEFAULTS.num_heads,
        ctx=state.DEFAULTS.context_length,
    ),
    "Exercise 3.2 (two heads, 2-dim output)": dict(
        d_in=EX_3_2.d_in,
        d_out=EX_3_2.d_out * EX_3_2.num_heads,
        heads=EX_3_2.num_heads,
        ctx=EX_3_2.context_length,
    ),
    "Exercise 3.3 (GPT-2 small)": dict(
        d_in=GPT2_SMALL["d_in"],
        d_out=GPT2_SMALL["d_out"],
        heads=GPT2_SMALL["num_heads"],
        ctx=GPT2_SMALL["context_length"],
    ),
    "GPT-2 XL": dict(
        d_in=GPT2_XL["d_in"],
        d_out=GPT2_XL["d_out"],
        heads=GPT2_XL["num_heads"],
        ctx=GPT2_XL["context_length"],
    ),
}


def apply_preset(values: dict) -> None:
    # Bound widgets are changed through session_state, in a callback, before they are built.
    st.session_state["book"] = False
    for key, value in values.items():
        st.session_state[key] = value


with st.expander("Presets", expanded=False):
    rows = []
    for name, p in PRESETS.items():
        rows.append(
            {
                "preset": name,
                "d_in": p["d_in"],
                "d_out": p["d_out"],
                "num_heads": p["heads"],
                "context_length": p["ctx"],
                "head_dim": p["d_out"] // p["heads"],
                "parameters": f"{mha_parameter_count(p['d_in'], p['d_out']):,}",
            }
        )
    st.dataframe(pd.DataFrame(rows), hide_index=True)
    st.caption(
        "Parameters of MultiHeadAttention with qkv_bias=False: 3·d_in·d_out + d_out² + d_out. "
        f"Exercise 3.3: {book.EXERCISE_3_3_PARAMETERS:,} for GPT-2 small, a small share of its "
        "124M: most parameters sit "
        "in the feed-forward layers and the embeddings."
    )
    cols = st.columns(len(PRESETS))
    for col, (name, p) in zip(cols, PRESETS.items(), strict=True):
        with col:
            st.button(f"Use {name}", key=f"preset_{name}", on_click=apply_preset, args=(p,))
    in_use = next(
        (
            name
            for name, p in PRESETS.items()
            if not cfg.book
            and (s.d_in, s.d_out, s.num_heads, s.context_length)
            == (p["d_in"], p["d_out"], p["heads"], p["ctx"])
        ),
        None,
    )
    if in_use:
        st.caption(
            f"Preset in use: {in_use}. MultiHeadAttention({s.d_in}, {s.d_out}, "
            f"{s.context_length}, num_heads={s.num_heads}, qkv_bias={s.qkv_bias}) has "
            f"{mha_parameter_count(s.d_in, s.d_out, s.qkv_bias):,} parameters."
        )
    st.write(
        "**Exercise 3.2**: two heads and a 2-dimensional output from the wrapper: give each head "
        f"d_out = {EX_3_2.d_out}. Its preset takes the book's sizes (d_in={EX_3_2.d_in}, "
        f"context_length={EX_3_2.context_length}) with d_out = {EX_3_2.d_out * EX_3_2.num_heads} "
        f"in total, so the wrapper further down is built with d_out // num_heads = "
        f"{EX_3_2.d_out} per head."
    )

    @cache.derived
    def exercise_3_2():
        module = EX_3_2.build()
        with torch.inference_mode():
            shape = tuple(module(book.book_batch_inputs()).shape)
        return shape, sum(p.numel() for p in module.parameters())

    shape, wrapper_parameters = exercise_3_2()
    ok = shape == book.EXERCISE_3_2_SHAPE
    st.code(
        f"torch.manual_seed(123)\nmha = {EX_3_2.constructor_call()}\nmha(batch).shape  # {shape}",
        language="python",
    )
    st.caption(
        f"This wrapper has {wrapper_parameters} parameters: {EX_3_2.num_heads} heads × 3 "
        f"projections of {EX_3_2.d_in}×{EX_3_2.d_out}, and no out_proj."
    )
    st.badge(
        f"Shape {shape}: {'as the book says' if ok else 'differs from the book'}",
        color="green" if ok else "red",
    )
    st.caption(
        "Only the shape is checked: the solution's printed numbers were made before a fix to the "
        "chapter's softmax axis (dim=1 → dim=-1) and no current code reproduces them."
    )

trace = panels.causal_trace_or_stop("multihead", cfg, args)
spec = trace.spec
H, head_dim = spec.num_heads, spec.d_out // spec.num_heads
labels, n = trace.labels, trace.num_tokens
numbers = panels.show_numbers_toggle()

# --- all heads ---------------------------------------------------------------------------------
st.header("All heads")
GRID_CELL_BUDGET = 4 * 256 * 256  # cells in one figure; more would slow the browser down


@cache.derived
def heads_figure(text, skey, bk):
    tr = cache.trace("multihead", text, skey, bk)
    w = tr.attn_weights[0]  # (H, T, T)
    if w.numel() <= GRID_CELL_BUDGET:
        return F.heads_grid(
            w, tr.labels, title=f"Attention weights of all {w.shape[0]} heads (one shared scale)"
        ), None
    reason = (
        f"{w.shape[0]} heads × {w.shape[1]}×{w.shape[2]} = {w.numel():,} cells is past this page's "
        f"figure budget ({GRID_CELL_BUDGET:,}), which keeps the browser responsive; one head is drawn "
        "at full size instead. Pick any head below."
    )
    return F.heatmap(w[0], tr.labels, tr.labels, title="Head 0 (full size)"), reason


grid, grid_reason = heads_figure(*args)
panels.matrix(grid, trace.attn_weights[0], labels, labels, key="p4_grid", numbers=numbers)
if grid_reason:
    st.info(grid_reason)

st.subheader("One head in detail")
head = st.selectbox("Head", list(range(H)), key="p4_head") if H > 1 else 0
head = min(int(head), H - 1)


@cache.derived
def head_figures(text, skey, bk, h):
    tr = cache.trace("multihead", text, skey, bk)
    lab = tr.labels
    hd = tr.spec.d_out // tr.spec.num_heads
    dims = F.dim_labels(hd, "head dim")
    out = {}
    for name, short in (("queries_heads", "Q"), ("keys_heads", "K"), ("values_heads", "V")):
        out[name] = F.heatmap(
            getattr(tr, name)[0, h],
            lab,
            dims,
            title=f"{short} of head {h} {(tr.num_tokens, hd)}",
            kind="signed",
            row_name="token",
            col_name="head dim",
            value_name="value",
            annotate=False,
        )
    out["attn_scores"] = F.heatmap(
        tr.attn_scores[0, h],
        lab,
        lab,
        title=f"Masked scores of head {h} (blank = −∞)",
        kind="signed",
        value_name="score",
    )
    out["attn_weights"] = F.heatmap(
        tr.attn_weights[0, h], lab, lab, title=f"Weights of head {h}"
    )
    out["context_vec"] = F.heatmap(
        tr.context_heads[0, h],
        lab,
        dims,
        title=f"Context of head {h}",
        kind="signed",
        row_name="token",
        col_name="head dim",
        value_name="value",
    )
    return out, dims


hfigs, hdims = head_figures(*args, head)
cols = st.columns(3)
for col, name in zip(cols, ("queries_heads", "keys_heads", "values_heads"), strict=True):
    with col:
        panels.matrix(
            hfigs[name], getattr(trace, name)[0, head], labels, hdims, key=f"p4_{name}", numbers=numbers
        )
left, right = st.columns(2)
with left:
    panels.matrix(
        hfigs["attn_scores"],
        trace.attn_scores[0, head],
        labels,
        labels,
        key="p4_scores",
        numbers=numbers,
    )
with right:
    panels.matrix(
        hfigs["attn_weights"],
        trace.attn_weights[0, head],
        labels,
        labels,
        key="p4_weights",
        numbers=numbers,
    )
panels.matrix(
    hfigs["context_vec"],
    trace.context_heads[0, head],
    labels,
    hdims,
    key="p4_context",
    numbers=numbers,
)
st.caption(f"Scores are divided by √head_dim = √{head_dim} = {head_dim**0.5:.4f}, not by √d_out.")

# --- reshape walk ------------------------------------------------------------------------------
st.header("The reshape walk")
st.write(
    "The weight-split module computes all heads with the same few large matmuls. `view` splits the "
    "last dimension into (heads, head_dim) without moving memory; `transpose(1, 2)` brings the head "
    "axis forward so each head is a batch of its own T×head_dim matrices, again by changing "
    "strides only. After attention, the transpose back leaves the memory in the wrong order for a "
    "plain `view`, so `.contiguous()` copies it into the new order first. Real shapes and strides "
    "of this run:"
)
st.dataframe(pd.DataFrame(T.strides_table(trace)), hide_index=True)

# --- wrapper against weight split --------------------------------------------------------------
st.header("The wrapper against the weight split")
wspec = book.SPEC_WRAPPER if cfg.book else lesson.spec_wrapper(s)
mspec = book.SPEC_MHA if cfg.book else lesson.spec_multihead(s)
left, right = st.columns(2)
with left:
    st.code(f"torch.manual_seed({wspec.seed})\nmha = {wspec.constructor_call()}", language="python")
with right:
    st.code(f"torch.manual_seed({mspec.seed})\nmha = {mspec.constructor_call()}", language="python")
if cfg.book:
    st.write(
        "The chapter's own arguments: the wrapper's d_out=2 is per head (output width 4), the "
        "weight-split module's d_out=2 is the total (head_dim 1), so the two are not the same "
        "computation here."
    )
    wtrace = cache.trace("wrapper", *args)
    panels.book_beside(
        "MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2): context_vecs[0]",
        wtrace.output[0],
        "wrapper",
    )
    panels.book_beside(
        "MultiHeadAttention(3, 2, 6, 0.0, num_heads=2): context_vecs[0]",
        trace.output[0],
        "multihead",
    )
else:
    st.write(
        f"The wrapper is built with d_out // num_heads = {head_dim} per head so both give "
        f"{spec.d_out} columns. With the weight split's rows copied into the heads (head h takes "
        f"rows h·{head_dim} to (h+1)·{head_dim} of each projection), the concatenated heads equal "
        "the weight-split context before `out_proj`, in eval mode:"
    )


@cache.derived
def equivalence(text, skey, bk):
    tr = cache.trace("multihead", text, skey, bk)
    return C.wrapper_equals_split(tr.spec.build(), tr.inputs)


panels.badge(equivalence(*args))
flops = attention_flops(n, spec.d_in, spec.d_out)
st.write(
    f"Arithmetic, one example of {n} tokens, before out_proj: **{flops['total']:,} FLOPs for both** "
    f"({flops['projections']:,} in the projections, {flops['attention']:,} in the scores and "
    f"context). The wrapper calls {3 * H} projection matmuls (3 per head), the weight-split "
    "module 3."
)


@st.cache_resource(show_spinner="Timing both modules…", max_entries=32)
def timing(shape: tuple) -> dict:
    """Median forward time of both modules at one shape; once per process and shape."""
    return speed.wrapper_against_split(*shape)


# Everything that changes the work is in the key: qkv_bias adds a bias to every projection.
shape = (1, n, spec.d_in, spec.d_out, H, spec.context_length, spec.qkv_bias)
if st.button("Measure both at these settings", key="p4_time"):
    st.session_state["p4_timing"] = shape
if st.session_state.get("p4_timing") == shape:
    result = timing(shape)
    tw, tm = result["median"]["wrapper"], result["median"]["weight split"]
    ratio = tw / tm
    verdict = (
        f"the weight split was {ratio:.2f}× as fast"
        if ratio > 1.05
        else f"the wrapper was {1 / ratio:.2f}× as fast"
        if ratio < 1 / 1.05
        else "no real difference"
    )
    st.write(
        f"Median of {result['runs']} interleaved runs on this server: wrapper {tw * 1e3:.3f} ms, "
        f"weight split {tm * 1e3:.3f} ms: {verdict}. Fewer, larger matmuls win when each small "
        "one is too small to keep the cores busy or Python's per-call overhead dominates (many "
        "heads, short texts); at large sizes both are limited by the same arithmetic."
    )


@cache.derived
def page_checks(text, skey, bk):
    tr = cache.trace("multihead", text, skey, bk)
    mask = torch.triu(torch.ones(tr.num_tokens, tr.num_tokens, dtype=torch.bool), diagonal=1)
    module = tr.spec.build()
    return [
        C.rows_sum_to_one(tr.attn_weights),
        C.heads_equal_loop(
            tr.queries,
            tr.keys,
            tr.values,
            # the context before dropout, heads merged: what eval mode computes
            (tr.attn_weights @ tr.values_heads).transpose(1, 2).flatten(2),
            tr.spec.num_heads,
            mask,
        ),
        C.matches_sdpa(
            tr.queries_heads,
            tr.keys_heads,
            tr.values_heads,
            tr.attn_weights @ tr.values_heads,
            causal=True,
        ),
        C.matches_torch_mha(module, tr.inputs),
        C.no_future_leak(module.eval(), tr.inputs),
    ]


panels.badges(page_checks(*args))
panels.source(
    M.MultiHeadAttention,
    M.MultiHeadAttentionWrapper,
)


@cache.derived
def bug_outcome(text, skey, bk, bug_key):
    tr = cache.trace("multihead", text, skey, bk)
    bug = B.BUGS_BY_KEY[bug_key]
    return B.run_bug(bug, tr.inputs, tr.spec), B.correct_check(bug, tr.inputs, tr.spec)


hidden = {
    bug.key: bug.hidden_reason(n, H, head_dim, spec.dropout, spec.context_length)
    for bug in B.bugs_for("multihead")
}
panels.break_it("multihead", lambda key: bug_outcome(*args, key), hidden, labels, cfg.book)
