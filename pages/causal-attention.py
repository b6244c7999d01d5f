"""Pass 3: causal attention, dropout, and batches (section 3.5)."""

from ui import entry

entry.guard(__file__)  # a fresh server's first visit: let app.py run this page

import pandas as pd
import streamlit as st
import torch

from attnviz import book
from attnviz import bugs as B
from attnviz import checks as C
from attnviz import figures as F
from attnviz import modules as M
from attnviz import trace as T
from attnviz.seeding import seeded
from ui import cache, panels, state
from ui.text import md_escape

cfg = state.config()
args = cfg.trace_args("causal")
s = cfg.settings

st.title("3. Causal attention and dropout")
st.write(
    "A language model predicts the next token, so while it reads a token it must not see the "
    "tokens after it. Causal attention hides every future key: their scores become −∞ before the "
    "softmax, so their weights are exactly 0 and each row still sums to 1. During training, "
    "dropout then zeroes random attention weights (and scales the survivors) so the model cannot "
    "lean on a few positions."
)
st.latex(
    r"\omega^{\text{masked}}_{ij} = \begin{cases}\omega_{ij} & j \le i\\ -\infty & j > i\end{cases},"
    r"\qquad A = \mathrm{dropout}\!\left(\mathrm{softmax}\!\left(\frac{\omega^{\text{masked}}}{\sqrt{d_k}}\right)\right),"
    r"\qquad Z = AV"
)

trace = panels.causal_trace_or_stop("causal", cfg, args)
spec = trace.spec
context_length = spec.context_length
labels, n = trace.labels, trace.num_tokens
numbers = panels.show_numbers_toggle()
st.code(f"torch.manual_seed({spec.seed})\nca = {spec.constructor_call()}", language="python")
if cfg.book:
    st.caption(
        "Book mode: the walkthrough reuses SelfAttention_v2's weights from seed 789 (CausalAttention "
        "creates its layers in the same order, so seed 789 gives the same matrices)."
    )

# --- the mask ----------------------------------------------------------------------------------
st.header("The mask is a buffer")
shown = min(context_length, n + 4)


@cache.derived
def mask_figure(text, skey, bk):
    tr = cache.trace("causal", text, skey, bk)
    ctx = tr.spec.context_length
    k = min(ctx, tr.num_tokens + 4)
    # Token labels already start with their position ("2: ␣starts").
    pos = [tr.labels[i] if i < tr.num_tokens else f"{i} (unused)" for i in range(k)]
    fig = F.heatmap(
        tr.mask[:k, :k],
        pos,
        pos,
        title=f"mask = triu(ones({ctx}, {ctx}), diagonal=1): rows and columns 0–{k - 1} of {ctx}",
        kind="mask",
        row_name="query position",
        col_name="key position",
        value_name="mask",
    )
    return fig, pos


@cache.derived
def buffer_table(text, skey, bk):
    module = cache.trace("causal", text, skey, bk).spec.build()
    names = {
        "buffers()": [n for n, _ in module.named_buffers()],
        "state_dict()": list(module.state_dict().keys()),
        "parameters()": [n for n, _ in module.named_parameters()],
    }
    return pd.DataFrame([{"listed by": k, "names": ", ".join(v)} for k, v in names.items()])


mfig, mpos = mask_figure(*args)
panels.matrix(
    mfig, trace.mask[:shown, :shown], mpos, mpos, key="p3_mask", numbers=numbers
)
st.write(
    f"The mask is built once at `context_length = {context_length}` and sliced to the "
    f"{n} tokens in use: `self.mask.bool()[:num_tokens, :num_tokens]`. 1 marks a future key. It is "
    "registered with `register_buffer`, so it is saved in `state_dict()` and moves with "
    "`.to(device)`, but it is not a parameter and the optimiser never touches it:"
)
st.dataframe(buffer_table(*args), hide_index=True)

# --- two routes --------------------------------------------------------------------------------
st.header("Two ways to mask")
st.write(
    "Route 1: softmax over every key, zero the future weights, and divide each row by its new sum. "
    "Route 2 (what the module does): put −∞ on the future scores, then one softmax. The result "
    "is the same, and route 2 does less work and never divides 0 by 0."
)


@cache.derived
def routes(text, skey, bk):
    tr = cache.trace("causal", text, skey, bk)
    lab = tr.labels
    route1 = T.renormalized_weights(tr)[0]
    with torch.inference_mode():
        unmasked = T.unmasked_scores(tr)
        full = torch.softmax(unmasked / tr.keys.shape[-1] ** 0.5, dim=-1)[0]
    return {
        "masked_scores": F.heatmap(
            tr.attn_scores[0],
            lab,
            lab,
            title="Masked scores (blank = −∞)",
            kind="signed",
            value_name="score",
        ),
        "route1": F.heatmap(route1, lab, lab, title="Route 1: softmax → zero → renormalize"),
        "route2": F.heatmap(tr.attn_weights[0], lab, lab, title="Route 2: −∞ → softmax"),
        "uniform": F.relative_to_uniform(
            tr.attn_weights[0], lab, title="Each weight relative to uniform"
        ),
        "uniform_ratio": F.ratio_to_uniform(tr.attn_weights[0]),
        "route1_tensor": route1,
        "full": full,
        "checks": [
            C.masking_routes_agree(
                T.renormalized_weights(tr), tr.attn_weights, tr.scaled_scores
            ),
            C.no_future_leak(tr.spec.build().eval(), tr.inputs),
        ],
    }


r = routes(*args)
panels.matrix(
    r["masked_scores"], trace.attn_scores[0], labels, labels, key="p3_masked", numbers=numbers
)
left, right = st.columns(2)
with left:
    panels.matrix(r["route1"], r["route1_tensor"], labels, labels, key="p3_route1", numbers=numbers)
with right:
    panels.matrix(
        r["route2"], trace.attn_weights[0], labels, labels, key="p3_route2", numbers=numbers
    )
for result in r["checks"]:
    panels.badge(result)
st.write(
    "On a 0–1 colour scale the first rows dominate: row 0 always puts 1.0 on its only key, row i "
    "spreads 1 over i + 1 keys. Multiplying each weight by the number of keys its row can see "
    "shows how much more (or less) than an even share each key receives:"
)
panels.matrix(r["uniform"], r["uniform_ratio"], labels, labels, key="p3_uniform", numbers=numbers)

if cfg.book:
    st.subheader("The chapter's masking walkthrough")
    panels.book_beside(
        "attn_weights before masking (sa_v2, seed 789)", r["full"], "masking_weights_unmasked"
    )
    panels.book_beside(
        "attn_scores.masked_fill(mask.bool(), -torch.inf)",
        trace.attn_scores[0],
        "masking_masked_scores",
    )
    panels.book_beside(
        "softmax(masked / keys.shape[-1]**0.5)", trace.attn_weights[0], "masking_weights"
    )
    panels.book_beside(
        "the renormalized route gives the same", r["route1_tensor"], "masking_weights"
    )

# --- dropout lab -------------------------------------------------------------------------------
st.header("Dropout lab")
p_drop = book.DROPOUT_EXAMPLE_P if cfg.book else s.dropout
seed_drop = book.SEED_DROPOUT if cfg.book else s.seed_dropout
scale = 1 / (1 - p_drop)
st.write(
    f"In training mode `nn.Dropout(p)` zeroes each weight with probability p and multiplies the "
    f"survivors by 1/(1−p) so that the expected value is unchanged. Here p = {p_drop:g} (the sidebar's "
    f"dropout) and the dropout seed is {seed_drop}: survivors are multiplied by "
    f"1/(1−{p_drop:g}) = **{scale:.4g}**. In eval mode dropout is the identity."
)
if s.dropout_is_illustrative and not cfg.book:
    st.caption("Rates above 0.2 are for illustration, as the chapter says: GPT models use 0.1–0.2.")

if cfg.book:
    st.write(
        "The chapter's own examples: `torch.manual_seed(123)` then `nn.Dropout(0.5)` on a 6×6 matrix "
        "of ones, and on the causal weights above. On torch 2.13 (Linux) both reproduce the "
        "book's printout; the book warns that masks may differ on other platforms."
    )

    @cache.derived
    def book_dropout():
        dropout = torch.nn.Dropout(book.DROPOUT_EXAMPLE_P)
        walk = cache.trace("causal", "", state.DEFAULTS, True)
        with torch.inference_mode():
            with seeded(book.SEED_DROPOUT):
                ones = dropout(torch.ones(6, 6))
            with seeded(book.SEED_DROPOUT):
                weights = dropout(walk.attn_weights[0])
        return ones, weights

    ones, dropped_book = book_dropout()
    panels.book_beside("dropout(torch.ones(6, 6))", ones, "dropout_ones")
    panels.book_beside("dropout(attn_weights)", dropped_book, "dropout_weights")
elif p_drop == 0:
    st.info("dropout is 0 in the sidebar: nothing is dropped. Raise it to see the lab at work.")
else:

    @cache.derived
    def lab(text, skey, bk):
        tr = cache.trace("causal", text, skey, bk, "train")
        lab_labels = tr.labels
        w, d = tr.attn_weights[0], tr.weights_dropped[0]
        mask = T.dropout_mask(tr)[0]
        sums = d.sum(dim=-1)
        zero_rows = [i for i in range(len(lab_labels)) if float(d[i].abs().sum()) == 0.0]
        outlined = " · outlined: rows dropped to zero" if zero_rows else ""
        return {
            "mask": F.heatmap(
                mask,
                lab_labels,
                lab_labels,
                title="Dropout mask (1 kept, 0 dropped, blank: weight was 0)",
                kind="weights",
                value_name="kept",
            ),
            "dropped": F.heatmap(
                d,
                lab_labels,
                lab_labels,
                title=f"Weights after dropout (scale 0 to {1 / (1 - tr.spec.dropout):.3g}){outlined}",
                kind="weights",
                zmax=1 / (1 - tr.spec.dropout),
                outline_rows=zero_rows,
            ),
            "mask_t": mask,
            "dropped_t": d,
            "sums": sums,
            "zero_rows": zero_rows,
            "before": w,
            "context_weights": tr.context[0],
            "context_after": T.context_dropout(tr, tr.spec.dropout, tr.dropout_seed)[0],
        }

    L = lab(*args)
    left, right = st.columns(2)
    with left:
        panels.matrix(L["mask"], L["mask_t"], labels, labels, key="p3_dmask", numbers=numbers)
    with right:
        panels.matrix(
            L["dropped"], L["dropped_t"], labels, labels, key="p3_dropped", numbers=numbers
        )
    # Plain text, not a table: the lab is what changes when the dropout slider moves, and a
    # table costs the browser a redraw on every move.
    shown_sums = ", ".join(f"{float(v):.3f}" for v in L["sums"][:24]) + (" …" if n > 24 else "")
    st.caption(f"Row sums after dropout, row 0 first: {shown_sums}")
    if L["zero_rows"]:
        st.warning(
            "Rows that dropped to zero (outlined in red above: every visible weight dropped, so "
            "these tokens' context vectors are all zeros for this step): "
            + ", ".join(md_escape(labels[i]) for i in L["zero_rows"])
        )
    st.write(
        "Row sums are no longer 1: dropout keeps the *expected* sum at 1, not each sum. The "
        "common placement drops attention weights (as above, and in the chapter); another "
        "option drops the context vectors after the weighted sum."
    )
    dims = F.dim_labels(spec.d_out, "out")
    compare = st.toggle("Compare with dropout on the context vectors", key="p3_placement")

    @cache.derived
    def placement(text, skey, bk):
        tr = cache.trace("causal", text, skey, bk, "train")
        return (
            F.heatmap(
                tr.context[0],
                tr.labels,
                dims,
                title="Dropout on the weights: context",
                kind="signed",
                row_name="token",
                col_name="output dim",
                value_name="value",
            ),
            F.heatmap(
                T.context_dropout(tr, tr.spec.dropout, tr.dropout_seed)[0],
                tr.labels,
                dims,
                title="Dropout on the context vectors",
                kind="signed",
                row_name="token",
                col_name="output dim",
                value_name="value",
            ),
        )

    if compare:
        pw, pc = placement(*args)
        left, right = st.columns(2)
        with left:
            panels.matrix(pw, L["context_weights"], labels, dims, key="p3_place_w", numbers=numbers)
        with right:
            panels.matrix(pc, L["context_after"], labels, dims, key="p3_place_c", numbers=numbers)
mode = "training" if (s.training and not cfg.book) else "eval"
st.caption(f"The sidebar is in {mode} mode: the figures above the lab use {mode}-mode weights.")

# --- batch -------------------------------------------------------------------------------------
st.header("A batch of two texts")
bargs = cfg.batch_args()
batch = cache.batch(*bargs)
panels.notes(batch.messages)
if batch.num_tokens == 0:
    st.info("One of the two texts is empty, so there is no batch to show.")
else:
    btrace = cache.batch_trace(*bargs)
    st.write(
        f"`x.shape = {tuple(btrace.inputs.shape)}` (batch, tokens, d_in). The module runs both at "
        "once; every matrix product is batched, and the mask is applied to each example's own "
        f"{batch.num_tokens}×{batch.num_tokens} scores."
    )

    @cache.derived
    def batch_figures(*key):
        bt = cache.batch_trace(*key)
        bb = cache.batch(*key)
        return [
            F.heatmap(
                bt.attn_weights[i], bb.labels[i], bb.labels[i], title=f"Example {i}: weights"
            )
            for i in range(2)
        ] + [C.batch_rows_independent(bt.spec.build().eval(), bt.inputs)]

    bfigs = batch_figures(*bargs)
    left, right = st.columns(2)
    for i, col in enumerate((left, right)):
        with col:
            panels.matrix(
                bfigs[i],
                btrace.attn_weights[i],
                batch.labels[i],
                batch.labels[i],
                key=f"p3_batch{i}",
                numbers=numbers,
            )
    panels.badge(bfigs[2])
    if cfg.book:
        panels.book_beside(
            "CausalAttention(3, 2, 6, 0.0) after torch.manual_seed(123): context_vecs[0]",
            btrace.output[0],
            "causal_attention",
        )
        st.caption(
            f"context_vecs.shape: {tuple(btrace.output.shape)} (the chapter prints torch.Size([2, 6, 2]))"
        )


@cache.derived
def page_checks(text, skey, bk):
    tr = cache.trace("causal", text, skey, bk)
    sp = tr.spec

    def build(p):
        return T.ModuleSpec(
            sp.kind, sp.d_in, sp.d_out, sp.context_length, p, sp.num_heads, sp.qkv_bias, sp.seed
        ).build()

    return [
        C.rows_sum_to_one(tr.attn_weights),
        C.matches_sdpa(
            tr.queries,
            tr.keys,
            tr.values,
            tr.attn_weights @ tr.values,  # the context before dropout
            causal=True,
        ),
        C.eval_ignores_dropout(
            lambda m, x: m(x), build, tr.inputs, max(sp.dropout, 0.5 if bk else sp.dropout)
        ),
    ]


panels.badges([*r["checks"], *page_checks(*args)])
panels.source(
    M.CausalAttention,
    M.renormalized_causal_weights,
)


# --- break it ----------------------------------------------------------------------------------
@cache.derived
def bug_outcome(key, bug_key):
    bt = cache.batch_trace(*key)
    bug = B.BUGS_BY_KEY[bug_key]
    return B.run_bug(bug, bt.inputs, bt.spec), B.correct_check(bug, bt.inputs, bt.spec)


if batch.num_tokens:
    bspec = btrace.spec
    hidden = {
        bug.key: bug.hidden_reason(
            batch.num_tokens, 1, bspec.d_out, bspec.dropout, bspec.context_length
        )
        for bug in B.bugs_for("causal")
    }
    panels.break_it(
        "causal", lambda key: bug_outcome(bargs, key), hidden, batch.labels[0], cfg.book
    )
