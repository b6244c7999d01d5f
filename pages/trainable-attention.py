"""Pass 2: self-attention with trainable weights, scaled dot-product attention (section 3.4)."""

from ui import entry

entry.guard(__file__)  # a fresh server's first visit: let app.py run this page

import streamlit as st

from attnviz.core import modules as M
from attnviz.teach import questions as Q
from attnviz.teach.lessons import trainable
from ui import cache, links, parts, sections, state, url
from ui import render as panels
from ui.models import growing as induction
from ui.teach import breakit, explain
from ui.text import md_escape, token_legend

cfg = state.config()
args = cfg.trace_args("trainable")

mode = panels.pass_page_top(__file__, "trainable", cfg, args)  # intro, Predict first, Spot the bug
panels.prepared_or_stop(args)
# Presenter mode walks the default module (the book's v1 in book mode) with no radio.
if cfg.present:
    version = "v1" if cfg.book else "v2"
else:
    version = st.radio(
        "Module",
        ["v2", "v1"],
        index=1 if cfg.book else 0,
        format_func=links.MODULES.__getitem__,
        horizontal=True,
        key=url.MODULE,
        bind="query-params",
    )
# The trace of the module picked, and its lesson; the other version and (narrow keys) the picked
# module one click away at a wider d_out only for the closed parts that read them, once opened.
trace = cache.trace("trainable", *args, version)
lesson = cache.lesson_of(
    ("trainable", *args, version, "main"),
    lambda: trainable.trainable_lesson(trace, None, None, cfg.book),
)


def full_lesson() -> trainable.TrainableLesson:
    """The lesson with the other version and the wider trace (why-scale, v1 against v2)."""
    other = cache.trace("trainable", *args, "v1" if version == "v2" else "v2")
    wide_settings = trainable.wide_settings(args[1], cfg.book)
    wide = (
        cache.trace("trainable", args[0], wide_settings, False, version) if wide_settings else None
    )
    return cache.lesson_of(
        ("trainable", *args, version),
        lambda: trainable.trainable_lesson(trace, other, wide, cfg.book),
    )


plan = panels.plan_or_present(  # the questions read the module the page draws (v1 or v2)
    "trainable", (*args, version), lambda: Q.numbers_of("trainable", trace), mode, cfg, lesson
)
panels.jump_to_weights()  # one tap from the top to the weights map
induction.weights_note(cfg, "trainable", trace.spec)  # random or trained, and page 8
# the exact numbers, the colour scale and the token window, for every panel below
numbers, panel_view = panels.pass_view_controls(plan, args, len(trace.labels), variant=version)


def show(name: str) -> None:
    panels.show(lesson.panels[name], numbers=numbers, view=panel_view, plan=plan)
    panels.lesson_claims(lesson, lesson.panels[name], plan=plan)


st.code(lesson.constructor, language="python")
if cfg.book:
    st.caption(
        "Book mode: the chapter builds SelfAttention_v1 after torch.manual_seed(123) and "
        "SelfAttention_v2 after torch.manual_seed(789), with d_in=3, d_out=2."
    )
elif cfg.settings.training:
    st.info(trainable.TRAINING_NOTE)

st.header("The three projections")
for group in (("W_query", "W_key", "W_value"), ("queries", "keys", "values")):
    for col, name in zip(st.columns(3), group, strict=True):
        with col:
            show(name)
    if group[0] == "W_query" and version == "v2":
        st.caption(
            "nn.Linear stores its weight as (d_out, d_in) and computes x Wᵀ; the heatmaps show "
            "Wᵀ so they read like the formula X W."
        )
    if group[0] == "queries":  # the first matrices with a row per token
        st.caption(md_escape(token_legend(lesson.labels)))

st.header("Scores, scaling, weights, context")
for name in ("scores", "scaled", "weights", "context"):
    if name == "weights":
        panels.weights_heading()
    show(name)
source = explain.Source(trace, ("trainable", *args, version))
explain.lines(source, page="p2", window=panel_view.window, numbers=numbers, plan=plan)
explain.block({"": source}, explain.heatmaps("trainable", {""}), window=panel_view.window,
              numbers=numbers, plan=plan)  # fmt: skip

if lesson.book_blocks and plan.slot("p2_book"):
    st.subheader("The chapter's numbers")
    if version == "v1":
        st.write(
            "Section 3.4.1 draws the three matrices with `torch.rand(3, 2)` after "
            "`torch.manual_seed(123)`, exactly what SelfAttention_v1 does, so the step-by-step "
            "walk for x⁽²⁾ = “journey” is row 1 here (`inputs[1]`, `context[1]`):"
        )
    panels.book_blocks(lesson.book_blocks)

# --- why scale (a closed box: drawn once opened) ------------------------------------------------
with sections.section(url.SCALING, force=plan.opens(url.SCALING)) as scaling_open:
    if scaling_open:
        parts.why_scale(full_lesson(), numbers=numbers, view=panel_view, plan=plan)

# --- v1 against v2 (a closed box: drawn once opened) --------------------------------------------
with sections.section(url.V1_V2, force=plan.opens(url.V1_V2)) as v1_v2_open:
    if v1_v2_open:
        parts.v1_against_v2(full_lesson(), numbers=numbers, plan=plan)

panels.badges(lesson.checks, plan=plan)
panels.source(M.SelfAttention_v1, M.SelfAttention_v2)


# --- break it ----------------------------------------------------------------------------------
if plan.slot("p2_breakit"):
    breakit.break_it(
        "trainable",
        trace.inputs,
        trace.spec,
        lesson.hidden,
        lesson.labels,
        key=(*args, version),
        book=cfg.book,
        plan=plan,
    )

panels.next_pass(__file__, book=cfg.book)  # the next pass, same text and settings
