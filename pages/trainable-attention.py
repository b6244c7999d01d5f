"""Pass 2: self-attention with trainable weights, scaled dot-product attention (section 3.4)."""

from ui import entry

entry.guard(__file__)  # a fresh server's first visit: let app.py run this page

import streamlit as st
import torch

from attnviz import book, lesson, scaling
from attnviz import bugs as B
from attnviz import checks as C
from attnviz import figures as F
from attnviz import modules as M
from ui import cache, panels, state

cfg = state.config()
args = cfg.trace_args("trainable")

st.title("2. Trainable self-attention")
st.write(
    "Three trainable matrices project each input vector into a **query** (what this token is "
    "looking for), a **key** (what it offers to be found by) and a **value** (what it passes on), "
    "like a search: the query is matched against every key, and the values of the best matches "
    "are returned, blended. Two different things are called “weights” here: the trainable weight "
    "matrices W_q, W_k, W_v, fixed after training, and the attention weights α, recomputed for "
    "every input."
)
st.latex(
    r"Q = XW_q,\; K = XW_k,\; V = XW_v, \qquad "
    r"A = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right), \qquad Z = AV"
)

prep = panels.prepared_or_stop(args)
labels, n = prep.labels, prep.num_tokens

version = st.radio(
    "Module",
    ["v2", "v1"],
    index=1 if cfg.book else 0,
    format_func=lambda v: {
        "v2": "SelfAttention_v2: nn.Linear layers",
        "v1": "SelfAttention_v1: raw nn.Parameter matrices",
    }[v],
    horizontal=True,
    key="p2_version",
)
trace = cache.trace("trainable", *args, version)
spec = trace.spec
numbers = panels.show_numbers_toggle()
st.code(f"torch.manual_seed({spec.seed})\nsa = {spec.constructor_call()}", language="python")
if cfg.book:
    st.caption(
        "Book mode: the chapter builds SelfAttention_v1 after torch.manual_seed(123) and "
        "SelfAttention_v2 after torch.manual_seed(789), with d_in=3, d_out=2."
    )

d_in, d_out = spec.d_in, spec.d_out
dims_in, dims_out = F.dim_labels(d_in, "in"), F.dim_labels(d_out, "out")


def weight_matrix(tr, name):
    """W as used in x @ W, shape (d_in, d_out), whichever way the module stores it."""
    if tr.spec.kind == "v2":
        return tr.params[f"{name}.weight"].T  # nn.Linear stores (d_out, d_in) and computes x Wᵀ
    return tr.params[name]


@cache.derived
def figures(text, skey, bk, ver):
    tr = cache.trace("trainable", text, skey, bk, ver)
    lab = tr.labels
    din, dout = F.dim_labels(tr.spec.d_in, "in"), F.dim_labels(tr.spec.d_out, "out")
    out = {}
    for name, short in (("W_query", "W_q"), ("W_key", "W_k"), ("W_value", "W_v")):
        out[name] = F.heatmap(
            weight_matrix(tr, name),
            din,
            dout,
            title=f"{short} {(tr.spec.d_in, tr.spec.d_out)}",
            kind="signed",
            row_name="input dim",
            col_name="output dim",
            value_name="weight",
        )
    for name, short in (("queries", "Q"), ("keys", "K"), ("values", "V")):
        out[name] = F.heatmap(
            getattr(tr, name),
            lab,
            dout,
            title=f"{short} = X{'W_' + short.lower()} {tuple(getattr(tr, name).shape)}",
            kind="signed",
            row_name="token",
            col_name="output dim",
            value_name="value",
            annotate=False,
        )
    n_tok = tr.num_tokens
    out["attn_scores"] = F.heatmap(
        tr.attn_scores,
        lab,
        lab,
        title=f"Raw scores Q Kᵀ {(n_tok, n_tok)}",
        kind="signed",
        value_name="score",
    )
    out["scaled_scores"] = F.heatmap(
        tr.scaled_scores,
        lab,
        lab,
        title=f"Scaled scores Q Kᵀ / √{tr.spec.d_out}",
        kind="signed",
        value_name="scaled score",
    )
    out["attn_weights"] = F.heatmap(
        tr.attn_weights, lab, lab, title=f"Weights A {(n_tok, n_tok)}"
    )
    out["context_vec"] = F.heatmap(
        tr.context,
        lab,
        dout,
        title=f"Context Z = A V {tuple(tr.context.shape)}",
        kind="signed",
        row_name="token",
        col_name="output dim",
        value_name="value",
    )
    return out


figs = figures(*args, version)
st.header("The three projections")
cols = st.columns(3)
for col, name in zip(cols, ("W_query", "W_key", "W_value"), strict=True):
    with col:
        panels.matrix(
            figs[name],
            weight_matrix(trace, name),
            dims_in,
            dims_out,
            key=f"p2_{name}",
            numbers=numbers,
        )
if version == "v2":
    st.caption(
        "nn.Linear stores its weight as (d_out, d_in) and computes x Wᵀ; the heatmaps show Wᵀ so they "
        "read like the formula X W."
    )
cols = st.columns(3)
for col, name in zip(cols, ("queries", "keys", "values"), strict=True):
    with col:
        panels.matrix(figs[name], getattr(trace, name), labels, dims_out, key=f"p2_{name}", numbers=numbers)

st.header("Scores, scaling, weights, context")
panels.matrix(
    figs["attn_scores"], trace.attn_scores, labels, labels, key="p2_scores", numbers=numbers
)
panels.matrix(
    figs["scaled_scores"],
    trace.scaled_scores,
    labels,
    labels,
    key="p2_scaled",
    numbers=numbers,
    caption=f"d_k = keys.shape[-1] = {d_out}: every score is divided by √{d_out} = {d_out**0.5:.4f}.",
)
panels.matrix(
    figs["attn_weights"], trace.attn_weights, labels, labels, key="p2_weights", numbers=numbers
)
panels.matrix(
    figs["context_vec"], trace.context, labels, dims_out, key="p2_context", numbers=numbers
)

if cfg.book:
    st.subheader("The chapter's numbers")
    if version == "v1":
        st.write(
            "Section 3.4.1 draws the three matrices with `torch.rand(3, 2)` after "
            "`torch.manual_seed(123)`, exactly what SelfAttention_v1 does, so the step-by-step "
            "walk for x⁽²⁾ = “journey” is row 1 here:"
        )
        panels.book_beside("query_2 = x_2 @ W_query", trace.queries[1], "trainable_query_2")
        panels.book_beside(
            "attn_scores_2 = query_2 @ keys.T", trace.attn_scores[1], "trainable_scores_2"
        )
        panels.book_beside(
            "softmax(attn_scores_2 / d_k**0.5)", trace.attn_weights[1], "trainable_weights_2"
        )
        panels.book_beside("context_vec_2", trace.context[1], "trainable_context_2")
        panels.book_beside("sa_v1(inputs), seed 123", trace.output, "sa_v1")
    else:
        panels.book_beside("sa_v2(inputs), seed 789", trace.output, "sa_v2")

# --- why scale ---------------------------------------------------------------------------------
st.header("Why divide by √d_k")
st.write(
    "Take queries and keys whose entries have variance 1. A dot product over d_k entries then has "
    "variance d_k: the wider the head, the further apart the scores, and the softmax of widely "
    "spread scores is almost one-hot. A one-hot softmax barely changes when the scores change, so "
    "its gradient vanishes and training stalls. Dividing by √d_k brings the variance back to 1 at "
    "every width (16 keys per row, 256 rows, averaged):"
)


@cache.derived
def scaling_figures():
    study = scaling.scaling_study()
    x = study.d_ks
    return (
        F.lines(
            x,
            {
                "÷√d_k": study.entropy_scaled,
                "unscaled": study.entropy_unscaled,
                "uniform": [study.uniform_entropy] * len(x),
            },
            title="Row entropy (bits): how spread out the weights are",
            x_name="d_k",
            y_name="bits",
            log_x=True,
        ),
        F.lines(
            x,
            {"÷√d_k": study.grad_norm_scaled, "unscaled": study.grad_norm_unscaled},
            title="Softmax gradient norm |∂α/∂ω|",
            x_name="d_k",
            y_name="norm",
            log_x=True,
        ),
        study,
    )


entropy_fig, grad_fig, study = scaling_figures()
left, right = st.columns(2)
with left:
    panels.chart(entropy_fig)
with right:
    panels.chart(grad_fig)
st.caption(
    f"At d_k={study.d_ks[-1]}: largest weight {study.max_weight_unscaled[-1]:.3f} unscaled against "
    f"{study.max_weight_scaled[-1]:.3f} scaled."
)

# --- v1 against v2 -----------------------------------------------------------------------------
st.header("SelfAttention_v1 against v2")
st.write(
    "v1 holds raw `nn.Parameter(torch.rand(d_in, d_out))` matrices: every entry in [0, 1), all "
    "positive, so all queries and keys point into the same corner and the scores are large and "
    "similar. v2 uses `nn.Linear`, whose default initialisation draws from U(−1/√d_in, 1/√d_in): "
    "centred at 0, shrinking as d_in grows. Exercise 3.1: copy v2's weights, transposed, into v1 "
    "and the two modules agree."
)


@cache.derived
def v1_v2(text, skey, bk):
    t1 = cache.trace("trainable", text, skey, bk, "v1")
    t2 = cache.trace("trainable", text, skey, bk, "v2")
    w1 = torch.cat([t1.params[n].reshape(-1) for n in ("W_query", "W_key", "W_value")])
    w2 = torch.cat([t2.params[f"{n}.weight"].reshape(-1) for n in ("W_query", "W_key", "W_value")])
    hist_w = F.histograms(
        {"v1: U[0, 1)": w1, "v2: U(±1/√d_in)": w2}, title="Initial weights", x_name="weight"
    )
    hist_s = F.histograms(
        {"v1": t1.scaled_scores, "v2": t2.scaled_scores},
        title="Scaled scores they produce",
        x_name="score",
    )
    # Exercise 3.1: both built with the same seed, v2's weights transposed into v1.
    seed = book.SEED_V1 if bk else t2.spec.seed
    s1 = lesson.T.ModuleSpec("v1", t2.spec.d_in, t2.spec.d_out, seed=seed).build()
    s2 = lesson.T.ModuleSpec(
        "v2", t2.spec.d_in, t2.spec.d_out, qkv_bias=t2.spec.qkv_bias, seed=seed
    ).build()
    x = t2.inputs
    check = C.v1_equals_v2(s1, s2, x)
    with torch.inference_mode():
        out = C.transferred_v1(s1, s2)(x) if check.status != "n/a" else None
    return hist_w, hist_s, check, out


hist_w, hist_s, ex31, ex31_out = v1_v2(*args)
left, right = st.columns(2)
with left:
    panels.chart(hist_w)
with right:
    panels.chart(hist_s)
st.code(
    "sa_v1.W_query = torch.nn.Parameter(sa_v2.W_query.weight.T)\n"
    "sa_v1.W_key = torch.nn.Parameter(sa_v2.W_key.weight.T)\n"
    "sa_v1.W_value = torch.nn.Parameter(sa_v2.W_value.weight.T)",
    language="python",
)
panels.badge(ex31)
if cfg.book and ex31_out is not None:
    panels.book_beside(
        "Exercise 3.1: sa_v1(inputs) after the transfer (both seed 123)", ex31_out, "exercise_3_1"
    )


@cache.derived
def page_checks(text, skey, bk, ver):
    tr = cache.trace("trainable", text, skey, bk, ver)
    return [
        C.rows_sum_to_one(tr.attn_weights),
        C.matches_sdpa(tr.queries, tr.keys, tr.values, tr.context, causal=False),
    ]


panels.badges([*page_checks(*args, version), ex31])
panels.source(
    M.SelfAttention_v1, M.SelfAttention_v2
)


@cache.derived
def bug_outcome(text, skey, bk, ver, bug_key):
    tr = cache.trace("trainable", text, skey, bk, ver)
    bug = B.BUGS_BY_KEY[bug_key]
    return B.run_bug(bug, tr.inputs, tr.spec), B.correct_check(bug, tr.inputs, tr.spec)


hidden = {bug.key: bug.hidden_reason(n, 1, d_out, 0.0, n) for bug in B.bugs_for("trainable")}
panels.break_it("trainable", lambda key: bug_outcome(*args, version, key), hidden, labels, cfg.book)
