"""Pass 4: multi-head attention, two ways (section 3.6). Layout only: every number, panel and
sentence comes from attnviz.teach.lessons.multihead."""

from ui import entry

entry.guard(__file__)  # a fresh server's first visit: let app.py run this page

import pandas as pd
import streamlit as st

from attnviz.core import modules as M
from attnviz.models import speed
from attnviz.server import budget
from attnviz.teach import questions as Q
from attnviz.teach.lessons import multihead as ML
from ui import cache, sections, state, url
from ui import render as panels
from ui.models import growing as induction
from ui.teach import breakit, explain
from ui.text import md_escape, token_legend

cfg = state.config()
args = cfg.trace_args("multihead")
_, settings, book = args

mode = panels.pass_page_top(__file__, "multihead", cfg, args)  # intro, Predict first, Spot the bug


def lesson():
    """The weight split's trace, its lesson and this run's "Predict first" plan; in presenter
    mode, the lesson's steps, and the page stops (``panels.plan_or_present``). The checks
    read the cached eval-mode trace and its references: building runs no forward."""
    trace = panels.causal_trace_or_stop("multihead", cfg, args)

    def build() -> ML.MultiHeadLesson:
        wrapper = cache.trace("wrapper", *args) if book else None
        refs, checked = cache.references(*args), cache.checked_trace(*args)
        return ML.build(trace, wrapper, book, refs, checked)

    found = cache.lesson_of(("multihead", *args), build)
    plan = panels.plan_or_present(
        "multihead", args, lambda: Q.numbers_of("multihead", trace), mode, cfg, found
    )
    return trace, found, plan


if cfg.present:
    lesson()  # presenter mode: the stepper, and the page stops


def apply_preset(values: dict) -> None:
    # Bound widgets are changed through session_state, in a callback, before they are built.
    st.session_state["book"] = False
    st.session_state["weights"] = "random"  # a preset's sizes are the random weights' own
    for key, value in values.items():
        st.session_state[key] = value


# --- presets (before the trace: they still work when the heads do not divide d_out) ------------
# Closed, the box builds nothing: opening it reruns the page (a class mostly never opens it).
with st.expander("Presets", key="presets", on_change="rerun") as presets_box:
    if presets_box.open:
        top = cache.lesson_of(
            ("multihead preface", settings, book), lambda: ML.preface(settings, book)
        )
        panels.table(("multihead preface", settings, book), "presets", lambda: top.presets)
        st.caption(top.parameters_caption)
        for col, preset in zip(st.columns(len(ML.PRESETS)), ML.PRESETS, strict=True):
            with col:
                st.button(
                    f"Use {preset.name}",
                    key=f"preset_{preset.name}",
                    on_click=apply_preset,
                    args=(preset.sidebar,),
                )
        if top.preset_in_use:
            st.caption(top.preset_in_use)
        ex32 = top.exercise_3_2
        st.write(ex32.intro)
        st.code(ex32.code, language="python")
        st.caption(ex32.caption)
        st.badge(ex32.badge, color="green" if ex32.ok else "red")
        st.caption(
            "Only the shape is checked: the solution's printed numbers were made before a fix to the "
            "chapter's softmax axis (dim=1 → dim=-1) and no current code reproduces them."
        )

trace, view, plan = lesson()
induction.weights_note(cfg, "multihead", trace.spec)  # random or trained, and page 8
# the exact numbers, the colour scale and the token window, for every panel below
numbers, panel_view = panels.pass_view_controls(plan, args, len(trace.labels))

# --- all heads ---------------------------------------------------------------------------------
st.header("All heads")
st.write(md_escape(view.weights_note))
panels.show(view.grid, numbers=numbers, view=panel_view, plan=plan)
st.caption(md_escape(token_legend(trace.labels)))  # how to read the labels, under the first matrix
if view.grid_note:
    st.info(view.grid_note)
panels.claims(view.claims_for(view.grid.key), plan=plan)

st.subheader("One head in detail")
h = panels.pick_head(view.num_heads, key="head")
panels.drawn_from(plan, args, head=h)
head = cache.lesson_of(("multihead head", *args, h), lambda: ML.head_view(trace, h))
qkv = ("queries_heads", "keys_heads", "values_heads")
panels.beside(
    *(head.panels[f"p4_{name}"] for name in qkv), numbers=numbers, view=panel_view, plan=plan
)
st.caption(view.scale_note)  # about the scores, drawn next
# Training mode adds the weights before dropout: two rows of two, the context beside the
# weights it used; eval mode: scores and weights, then the context.
rows: list[tuple[str, ...]]
if "p4_weights_before" in head.panels:
    rows = [("p4_scores", "p4_weights_before"), ("p4_weights", "p4_context")]
else:
    rows = [("p4_scores", "p4_weights"), ("p4_context",)]
for row in rows:
    panels.beside(
        *(head.panels[key] for key in row),
        numbers=numbers,
        view=panel_view,
        below=lambda panel: panels.claims(head.claims_for(panel.key), plan=plan),
        plan=plan,
    )
panels.badge(head.product, plan=plan)
source = explain.Source(trace, ("multihead", *args))
explain.lines(source, page="p4", head=h, window=panel_view.window, numbers=numbers, plan=plan)
explain.block({"": source}, explain.heatmaps("multihead", {""}, h), head=h,
              window=panel_view.window, numbers=numbers, plan=plan)  # fmt: skip

# --- reshape walk (a closed box: drawn once opened) ---------------------------------------------
with sections.section(url.RESHAPE, force=plan.opens(url.RESHAPE)) as open_:
    if open_:
        st.write(
            "The weight-split module computes all heads with the same few large matmuls. `view` "
            "splits the last dimension into (heads, head_dim) without moving memory; "
            "`transpose(1, 2)` brings the head axis forward so each head is a batch of its own "
            "T×head_dim matrices, again by changing strides only. After attention, the transpose "
            "back leaves the memory in the wrong order for a plain `view`, so `.contiguous()` "
            "copies it into the new order first. Real shapes and strides of this run:"
        )
        if plan.slot("p4_strides"):  # the shapes after the split
            panels.table(("multihead", *args), "strides", lambda: pd.DataFrame(view.strides))


@st.cache_resource(show_spinner="Timing both modules…", max_entries=budget.SPEED_REPORTS)
def timing(shape: tuple) -> ML.SpeedReport:
    """Both modules timed at one shape, once per process and shape, and what it shows."""
    return ML.speed_report(speed.wrapper_against_split(*shape), shape)


# --- wrapper against weight split (a closed box: drawn once opened) ----------------------------
with sections.section(url.WRAPPER) as open_:
    if open_:
        left, right = st.columns(2)
        for col, spec in ((left, view.wrapper_spec), (right, view.spec)):
            with col:
                call = spec.build_lines("mha")
                st.code(call, language="python", wrap_lines=True)
        for title, ours, printed in view.book_printouts:
            panels.book_beside(title, ours, printed)
        st.write(view.wrapper_text)
        panels.badge(view.equivalence, plan=plan)
        st.write(view.flops_text)
        # Everything that changes the work is in the key: qkv_bias adds a bias to every
        # projection.
        if st.button("Measure both at these settings", key="p4_time"):
            st.session_state["p4_timing"] = view.timing_shape
        if st.session_state.get("p4_timing") == view.timing_shape:
            st.write(" ".join(timing(view.timing_shape).sentences))

panels.badges(view.checks, plan=plan)
if view.checks_note:
    st.caption(view.checks_note)
panels.source(M.MultiHeadAttention, M.MultiHeadAttentionWrapper)

if plan.slot("p4_breakit"):
    breakit.break_it("multihead", trace.inputs, trace.spec, view.hidden, trace.labels, key=args,
                     book=book, plan=plan)  # fmt: skip

panels.next_pass(__file__, book=cfg.book)  # the next pass, same text and settings
