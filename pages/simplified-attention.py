"""Pass 1: simplified self-attention, with no trainable weights (section 3.3)."""

from ui import entry

entry.guard(__file__)  # a fresh server's first visit: let app.py run this page

import time

import streamlit as st
import torch

from attnviz import bugs as B
from attnviz import checks as C
from attnviz import figures as F
from attnviz import modules as M
from attnviz import trace as T
from ui import cache, panels, state

cfg = state.config()
args = cfg.trace_args("simplified")

st.title("1. Simplified self-attention")
st.write(
    "No trainable weights yet. Each token scores every token (itself included) by a dot product "
    "of their input vectors, turns its row of scores into weights with a softmax, and takes the "
    "weighted sum of the input vectors: its **context vector**."
)
st.latex(
    r"\omega_{ij} = x^{(i)} \cdot x^{(j)}, \qquad "
    r"\alpha_{ij} = \frac{\exp(\omega_{ij})}{\sum_k \exp(\omega_{ik})}, \qquad "
    r"z^{(i)} = \sum_j \alpha_{ij}\, x^{(j)}"
)

panels.prepared_or_stop(args)
trace = cache.trace("simplified", *args)
labels, n = trace.labels, trace.num_tokens
numbers = panels.show_numbers_toggle()

# --- one query ------------------------------------------------------------------------------
st.header("One query at a time")
query = st.selectbox(
    "Query token",
    list(range(n)),
    index=min(1, n - 1),
    format_func=lambda i: labels[i],
    key="p1_query",
)
st.write(
    f"The query is `inputs[{query}]`. Its score with each token is a dot product; the highest "
    "scores go to the tokens whose vectors point the same way."
)


@cache.derived
def query_scores_figure(text, skey, book, q):
    tr = cache.trace("simplified", text, skey, book)
    return F.bars(tr.attn_scores[q], tr.labels, title=f"Scores ω for query {q}", highlight=q)


panels.chart(query_scores_figure(*args, query))

st.subheader("From scores to weights")
st.write(
    "Three ways to make the scores sum to 1. Dividing by the sum works only while every score is "
    "positive. The naive softmax `exp(x) / sum(exp(x))` is right in exact arithmetic but "
    "overflows in float32 once a score passes 88.7 (and gives 0/0 when every score is below about "
    "−103). `torch.softmax` subtracts the row's maximum first, which changes nothing "
    "mathematically and keeps every exp() in range. Stretch and shift the scores to see it."
)
c1, c2 = st.columns(2)
with c1:
    stretch = st.select_slider(
        "Multiply the inputs by a (scores grow by a²)",
        options=[1, 2, 3, 5, 10, 20, 50],
        value=1,
        key="p1_stretch",
    )
with c2:
    shift = st.select_slider(
        "Add to every score", options=[-300, -200, -100, -50, 0, 50, 100], value=0, key="p1_shift"
    )


@cache.derived
def walk(text, skey, book, q, a, c):
    tr = cache.trace("simplified", text, skey, book)
    with torch.inference_mode():
        row = tr.attn_scores[q] * float(a) ** 2 + float(c)
        series = {
            "divide by sum": T.sum_normalize(row),
            "naive softmax": T.naive_softmax(row),
            "torch.softmax": torch.softmax(row, dim=-1),
        }
    fig = F.grouped_bars(series, tr.labels, title=f"Weights for query {q}")
    return row, series, fig, C.naive_softmax_matches(row.unsqueeze(0))


row, series, walk_fig, naive_check = walk(*args, query, stretch, shift)
panels.chart(walk_fig)
panels.badge(naive_check)
st.caption(
    f"Scores used: max {float(row.max()):.4g}, min {float(row.min()):.4g}. "
    f"Sums: divide-by-sum {float(series['divide by sum'].sum()):.4f}, "
    f"torch.softmax {float(series['torch.softmax'].sum()):.4f}."
)

st.subheader("The context vector")
st.write(
    f"z for query {query} is the weighted sum of all input vectors, each scaled by its weight."
)


@cache.derived
def context_walk_figure(text, skey, book, q):
    tr = cache.trace("simplified", text, skey, book)
    x, w = tr.inputs, tr.attn_weights[q]
    contributions = w.unsqueeze(1) * x  # row j: alpha_qj * x_j
    rows = [*tr.labels, f"z (query {q})"]
    z = torch.cat([contributions, tr.context[q].unsqueeze(0)])
    return (
        z,
        rows,
        F.heatmap(
            z,
            rows,
            F.dim_labels(x.shape[1]),
            title=f"α_{q}j · x_j, and their sum z",
            kind="signed",
            row_name="term",
            col_name="dimension",
            value_name="value",
        ),
    )


cz, crows, cfig = context_walk_figure(*args, query)
panels.matrix(cfig, cz, crows, F.dim_labels(cz.shape[1]), key="p1_context_walk", numbers=numbers)

if cfg.book and query == 1:
    st.write("The chapter computes exactly this for x⁽²⁾ = “journey” (`inputs[1]`):")
    panels.book_beside("Scores for query 1", trace.attn_scores[1], "simple_scores_2")
    panels.book_beside("Divide by the sum", trace.sum_weights[1], "simple_sum_weights_2")
    panels.book_beside("Softmax weights", trace.attn_weights[1], "simple_weights_2")
    panels.book_beside("Context vector z⁽²⁾", trace.context[1], "simple_context_2")

# --- all queries ------------------------------------------------------------------------------
st.header("All tokens at once")
st.write("The loops become three matrix products: Ω = X Xᵀ, α = softmax(Ω) row by row, Z = α X.")
st.latex(r"\Omega = X X^\top, \qquad A = \mathrm{softmax}_{\text{row}}(\Omega), \qquad Z = A X")


@cache.derived
def all_figures(text, skey, book):
    tr = cache.trace("simplified", text, skey, book)
    lab = tr.labels
    n_tok, d = tr.inputs.shape
    sums = tr.attn_weights.sum(dim=-1)
    return {
        "scores": F.heatmap(
            tr.attn_scores,
            lab,
            lab,
            title=f"Scores Ω = X Xᵀ {(n_tok, n_tok)}",
            kind="signed",
            value_name="score",
        ),
        "weights": F.heatmap(
            tr.attn_weights, lab, lab, title=f"Weights A = softmax(Ω) {(n_tok, n_tok)}"
        ),
        "context": F.heatmap(
            tr.context,
            lab,
            F.dim_labels(d),
            title=f"Context Z = A X {(n_tok, d)}",
            kind="signed",
            col_name="dimension",
            value_name="value",
        ),
        "sums": sums,
        "one_hot": float(tr.attn_weights.max(dim=-1).values.mean()),
    }


figs = all_figures(*args)
d_in = trace.inputs.shape[1]
panels.matrix(
    figs["scores"],
    trace.attn_scores,
    labels,
    labels,
    key="p1_scores",
    numbers=numbers,
    caption="Symmetric: x⁽ⁱ⁾·x⁽ʲ⁾ = x⁽ʲ⁾·x⁽ⁱ⁾. The softmax below is not, since each row is normalised on its own.",
)
panels.matrix(
    figs["weights"],
    trace.attn_weights,
    labels,
    labels,
    key="p1_weights",
    numbers=numbers,
    caption="Row sums: "
    + ", ".join(f"{float(v):.4f}" for v in figs["sums"][:16])
    + (" …" if n > 16 else ""),
)
if figs["one_hot"] > 0.9 and n > 1:
    st.info(
        f"The rows are nearly one-hot (the average largest weight is {figs['one_hot']:.2f}). With "
        f"d_in={d_in}, each token's score with itself is |x|², a sum of {d_in} positive squares, "
        "while its scores with other tokens mix positive and negative products and stay near 0. "
        "The softmax turns that gap into almost all the weight: the reason pass 2 scales by √d_k."
    )
panels.matrix(
    figs["context"],
    trace.context,
    labels,
    F.dim_labels(d_in),
    key="p1_context",
    numbers=numbers,
)
if cfg.book:
    panels.book_beside("Ω = inputs @ inputs.T", trace.attn_scores, "simple_scores")
    panels.book_beside("softmax(Ω, dim=-1)", trace.attn_weights, "simple_weights")
    panels.book_beside(
        "all_context_vecs = attn_weights @ inputs", trace.context, "simple_context"
    )

# --- loop against matrix ----------------------------------------------------------------------
st.header("Loops against one matrix product")
st.write(
    f"The chapter first fills Ω with two nested loops of `torch.dot`, then replaces them with "
    f"`inputs @ inputs.T`. The loop runs on at most {T.LOOP_TOKEN_CAP} tokens here."
)
if trace.loop_scores is not None:
    loop_n = trace.loop_scores.shape[0]
else:
    loop_n = T.LOOP_TOKEN_CAP
if st.button(f"Time the loop and the matrix product on {min(n, loop_n)} tokens", key="p1_time"):
    x16 = trace.inputs[: T.LOOP_TOKEN_CAP]
    with torch.inference_mode():

        def best(fn, repeat=5):
            times = []
            for _ in range(repeat):
                start = time.perf_counter()
                fn()
                times.append(time.perf_counter() - start)
            return min(times)

        t_loop = best(lambda: T.loop_scores(x16))
        t_mat = best(lambda: x16 @ x16.T)
    st.session_state["p1_timing"] = (args, x16.shape[0], t_loop, t_mat)
# A timing belongs to the inputs it was measured on: after the text or d_in change, it is gone.
timing = st.session_state.get("p1_timing")
if timing is not None and timing[0] == args:
    _, k, t_loop, t_mat = timing
    st.write(
        f"On {k} tokens: the loop took {t_loop * 1e3:.3f} ms, the matrix product "
        f"{t_mat * 1e3:.3f} ms, **{t_loop / max(t_mat, 1e-9):.0f}×** faster (best of 5 on this "
        "server; the loop pays Python's overhead for each of the k² dot products)."
    )


@cache.derived
def page_checks(text, skey, book):
    tr = cache.trace("simplified", text, skey, book)
    results = [
        C.rows_sum_to_one(tr.attn_weights),
        C.weights_are_softmax(tr.attn_scores, tr.attn_weights),
        C.naive_softmax_matches(tr.attn_scores),
    ]
    if tr.loop_scores is not None:
        results.append(C.loops_equal_matmul(tr.inputs, tr.loop_scores))
    else:
        results.append(
            C.loops_equal_matmul(
                tr.inputs[: T.LOOP_TOKEN_CAP], T.loop_scores(tr.inputs[: T.LOOP_TOKEN_CAP])
            )
        )
    return results


panels.badges(page_checks(*args))
panels.source(
    M.simplified_attention,
    T.sum_normalize,
    T.naive_softmax,
    T.loop_scores,
    T.trace_simplified,
)


# --- break it ----------------------------------------------------------------------------------
@cache.derived
def bug_outcome(text, skey, book, bug_key):
    tr = cache.trace("simplified", text, skey, book)
    bug = B.BUGS_BY_KEY[bug_key]
    return B.run_bug(bug, tr.inputs), B.correct_check(bug, tr.inputs)


hidden = {bug.key: bug.hidden_reason(n, 1, d_in, 0.0, n) for bug in B.bugs_for("simplified")}
panels.break_it("simplified", lambda key: bug_outcome(*args, key), hidden, labels, cfg.book)
