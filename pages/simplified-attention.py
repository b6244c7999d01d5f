"""Pass 1: simplified self-attention, with no trainable weights (section 3.3)."""

from ui import entry

entry.guard(__file__)  # a fresh server's first visit: let app.py run this page

import streamlit as st

from attnviz.core import modules as M
from attnviz.core import trace as tracing
from attnviz.teach import questions as Q
from attnviz.teach.lessons import simplified
from ui import cache, links, state, url
from ui import render as panels
from ui.teach import breakit, explain
from ui.text import md_escape, token_legend

cfg = state.config()
args = cfg.trace_args("simplified")

mode = panels.pass_page_top(__file__, "simplified", cfg, args)  # intro, Predict first, Spot the bug
panels.prepared_or_stop(args)
if cfg.settings.training and not cfg.book:
    st.info(simplified.TRAINING_NOTE)
trace = cache.trace("simplified", *args)
lesson = cache.lesson_of(
    ("simplified", *args), lambda: simplified.simplified_lesson(trace, cfg.book)
)
plan = panels.plan_or_present(  # what "Predict first" hides on this run; or presenter mode
    "simplified", args, lambda: Q.numbers_of("simplified", trace), mode, cfg, lesson
)
labels, n = lesson.labels, lesson.num_tokens
panels.jump_to_weights()  # one tap from the top to the weights map
# the exact numbers, the colour scale and the token window, for every panel below
numbers, panel_view = panels.pass_view_controls(plan, args, n)


# --- one query ------------------------------------------------------------------------------
st.header("One query at a time")
links.unknown_choices(url.QUERY, labels, labels[min(1, n - 1)])
query = st.selectbox(
    "Query token",
    list(range(n)),
    index=min(1, n - 1),
    format_func=lambda i: labels[i],
    key=url.QUERY,
    bind="query-params",
)
st.write(
    f"The query is `inputs[{query}]`, the book's {simplified.book_name('x', query)} (rows count from 0 "
    "here, from 1 in the book). Its score with each token is a dot product; the highest "
    "scores go to the tokens whose vectors point the same way."
)
scores_chart = st.empty()  # filled below, once the walk's sliders are read
st.subheader("From scores to weights")
st.write(
    "Three ways to make the scores sum to 1. Dividing by the sum works only while every score is "
    "positive. The naive softmax `exp(x) / sum(exp(x))` is right in exact arithmetic but "
    "overflows in float32 once a score passes 88.7 (and gives 0/0 when every score is below about "
    "−103). `torch.softmax` subtracts the row's maximum first, which changes nothing "
    "mathematically and keeps every exp() in range. Stretch and shift the scores to see it."
)
sliders = (  # (label, options, default, URL name), side by side
    ("Multiply the inputs by a (scores grow by a²)", links.STRETCHES, 1, url.STRETCH),
    ("Add to every score", links.SHIFTS, 0, url.SHIFT),
)
stretch, shift = (
    column.select_slider(label, options=options, value=value, key=key, bind="query-params")
    for column, (label, options, value, key) in zip(st.columns(2), sliders, strict=True)
)
view = cache.lesson_of(
    ("simplified_query", *args, query, stretch, shift),
    lambda: simplified.query_view(trace, query, stretch, shift, cfg.book),
)
if plan.slot("p1_query_walk"):  # this query's row of scores and of weights
    panels.plot(view.scores_figure, key="p1_query_scores", numbers=numbers, container=scores_chart)
    panels.plot(view.walk_figure, key="p1_walk", numbers=numbers)
    panels.badge(view.walk_check, plan=plan)
    st.caption(view.walk_caption)

st.subheader("The context vector")
st.write(
    f"z for query {query} (`context[{query}]`, the book's {simplified.book_name('z', query)}) is the "
    "weighted sum of all input vectors, each scaled by its weight."
)
panels.show(view.context_walk, numbers=numbers, view=panel_view, plan=plan)
st.caption(md_escape(token_legend(labels)))  # how to read the labels, under the first matrix
if view.book_blocks and plan.slot("p1_query_book"):
    st.write("The chapter computes exactly this for x⁽²⁾ = “journey” (`inputs[1]`):")
    panels.book_blocks(view.book_blocks)

# --- all queries ------------------------------------------------------------------------------
st.header("All tokens at once")
st.write("The loops become three matrix products: Ω = X Xᵀ, α = softmax(Ω) row by row, Z = α X.")
panels.formula(
    r"\Omega = X X^\top, \qquad A = \mathrm{softmax}_{\text{row}}(\Omega), \qquad Z = A X"
)
for name in ("scores", "weights", "context"):
    if name == "weights":
        panels.weights_heading()
    panels.show(lesson.panels[name], numbers=numbers, view=panel_view, plan=plan)
    panels.lesson_claims(lesson, lesson.panels[name], plan=plan)
if lesson.book_blocks and plan.slot("p1_book"):
    panels.book_blocks(lesson.book_blocks)
source = explain.Source(trace, ("simplified", *args))
explain.lines(source, page="p1", window=panel_view.window, numbers=numbers, plan=plan)
explain.block({"": source}, explain.heatmaps("simplified", {""}), window=panel_view.window,
              numbers=numbers, plan=plan)  # fmt: skip

# --- loop against matrix ----------------------------------------------------------------------
st.header("Loops against one matrix product")
st.write(
    f"The chapter first fills Ω with two nested loops of `torch.dot`, then replaces them with "
    f"`inputs @ inputs.T`. The loop runs on at most {tracing.LOOP_TOKEN_CAP} tokens here."
)
if st.button(f"Time the loop and the matrix product on {lesson.loop_tokens} tokens", key="p1_time"):
    st.session_state["p1_timing"] = (args, simplified.time_loop(trace))
# A timing belongs to the inputs it was measured on: after the text or d_in change, it is gone.
timing = st.session_state.get("p1_timing")
if timing is not None and timing[0] == args:
    st.write(timing[1].text)

panels.badges(lesson.checks, plan=plan)
panels.source(
    M.simplified_attention,
    tracing.sum_normalize,
    tracing.naive_softmax,
    tracing.loop_scores,
    tracing.trace_simplified,
)


# --- break it ----------------------------------------------------------------------------------
if plan.slot("p1_breakit"):
    breakit.break_it(
        "simplified", trace.inputs, None, lesson.hidden, labels, key=args, book=cfg.book, plan=plan
    )

panels.next_pass(__file__, book=cfg.book)  # the next pass, same text and settings
