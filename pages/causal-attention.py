"""Pass 3: causal attention, dropout, and batches (section 3.5). Layout only: every number,
panel and sentence about the numbers comes from attnviz.teach.lessons.causal."""

from ui import entry

entry.guard(__file__)  # a fresh server's first visit: let app.py run this page

import functools

import streamlit as st

from attnviz.core import modules as M
from attnviz.core import trace as tracing
from attnviz.teach import prepare
from attnviz.teach import questions as Q
from attnviz.teach.lessons import causal as lessons
from ui import cache, parts, sections, state, url
from ui import render as panels
from ui.models import growing as induction
from ui.teach import breakit, explain
from ui.text import md_escape, token_legend

cfg = state.config()
args = cfg.trace_args("causal")
bargs = cfg.batch_args()

mode = panels.pass_page_top(__file__, "causal", cfg, args)  # intro, Predict first, Spot the bug
trace = panels.causal_trace_or_stop("causal", cfg, args)
batch = cache.batch(*bargs)  # the two texts' inputs: "Break it" and the closed batch part


def lab_trace_now() -> tracing.CausalTrace | None:
    """The pass in training mode at the sidebar's rate and seed, for the dropout lab (None in
    book mode or at dropout 0): computed only when the lab is opened or a question asks it."""
    if cfg.book or args[1].dropout == 0:
        return None
    return cache.trace("causal", *args, "train")


def question_numbers() -> Q.Numbers:
    return Q.numbers_of("causal", trace, lab_trace_now(), cfg.book)


def build() -> lessons.CausalLesson:  # the lab and the batch: built when their boxes open
    return lessons.causal_lesson(
        trace, None, None, batch.labels, settings=args[1], book=cfg.book, with_lab=False
    )


lesson = cache.lesson_of(("causal", *args), build)
plan = panels.plan_or_present(  # the questions read the page's traces: the pass, and its lab's
    "causal",
    args,
    question_numbers,
    mode,
    cfg,
    lesson,
    checks=[*lesson.route_checks, *lesson.checks],
)

induction.weights_note(cfg, "causal", trace.spec)  # random or trained, and page 8
# the exact numbers, the colour scale and the token window, for every panel below
numbers, panel_view = panels.pass_view_controls(plan, args, len(trace.labels))
st.code(lesson.constructor, language="python")
if lesson.book_note:
    st.caption(lesson.book_note)

# --- the mask ----------------------------------------------------------------------------------
st.header("The mask is a buffer")
panels.show(lesson.mask, numbers=numbers, view=panel_view, plan=plan)
st.caption(md_escape(token_legend(trace.labels)))  # how to read the labels, under the first matrix
# the sentence, then a list, not a table: the state_dict's names run wider than a phone's screen
st.markdown(
    lesson.mask_sentence
    + "\n\n"
    + "\n".join(
        f"- `{by}`: " + ", ".join(f"`{name}`" for name in names) for by, names in lesson.buffers
    )
)

# --- two routes --------------------------------------------------------------------------------
st.header("Two ways to mask")
st.write(
    "Route 1: softmax over every key, zero the future weights, and divide each row by its new sum. "
    "Route 2 (what the module does): put −∞ on the future scores, then one softmax. The result "
    "is the same, and route 2 does less work and never divides 0 by 0."
)
panels.show(lesson.masked_scores, numbers=numbers, view=panel_view, plan=plan)
panels.beside(lesson.route1, lesson.route2, numbers=numbers, view=panel_view, plan=plan)
panels.claims(lesson.route_claims, plan=plan)
for claim in plan.visible(lesson.mode_claims):
    st.caption(md_escape(claim.text))
panels.badge(*lesson.route_checks, plan=plan)
st.write(
    "On a 0–1 color scale the first rows dominate: row 0 always puts 1.0 on its only key, row i "
    "spreads 1 over i + 1 keys. Multiplying each weight by the number of keys its row can see "
    "shows how much more (or less) than an even share each key receives:"
)
panels.show(lesson.uniform, numbers=numbers, view=panel_view, plan=plan)
sources = {"": explain.Source(trace, ("causal", *args))}
explain.lines(sources[""], page="p3", window=panel_view.window, numbers=numbers, plan=plan)

if cfg.book and plan.slot("p3_walkthrough"):
    st.subheader("The chapter's masking walkthrough")
    for p in lesson.walkthrough:
        panels.book_beside(p.title, p.tensor, p.name)

# --- dropout lab (a closed box: built once opened) ----------------------------------------------
lab_trace = None
cell_source = explain.linked_source()
with sections.section(  # opened by a question in it, a link to one of its cells or its placement
    url.LAB,
    force=plan.opens(url.LAB) or cell_source == "lab" or url.PLACEMENT in st.query_params,
) as lab_open:
    if lab_open:
        lab_trace = lab_trace_now()
        lab = cache.lesson_of(
            ("causal lab", *args),
            lambda: lessons.dropout_lab(trace, lab_trace, settings=args[1], book=cfg.book),
        )
        parts.dropout_lab(lab, numbers=numbers, view=panel_view, plan=plan)

# --- batch (a closed box: computed and drawn once opened) ---------------------------------------
bt = None
with sections.section(
    url.BATCH, force=plan.opens(url.BATCH) or cell_source == "batch"
) as batch_open:
    if batch_open:
        panels.notes(batch.messages)
        # the trace first (a heavy request takes its slot here, outside any cache lock)
        bt = cache.batch_trace(*bargs) if batch.num_tokens else None
        if bt is None:
            st.info("One of the two texts is empty, so there is no batch to show.")
        else:
            batch_lesson = cache.lesson_of(
                ("causal batch", *bargs),
                functools.partial(lessons.batch_lesson, bt, batch.labels, cfg.book),
            )
            st.write(batch_lesson.shape_sentence)
            panels.beside(*batch_lesson.panels, numbers=numbers, view=panel_view, plan=plan)
            panels.claims(batch_lesson.claims, plan=plan)
            panels.badge(batch_lesson.check, plan=plan)
            if batch_lesson.printout is not None:
                p = batch_lesson.printout
                panels.book_beside(p.title, p.tensor, p.name)
                st.caption(batch_lesson.shape_caption)

panels.badges(lesson.checks, plan=plan, above=lesson.route_checks)  # each check once a page
if lab_trace is not None:
    sources["lab"] = explain.Source(lab_trace, ("causal", *args, "train"), explain.LAB)
if bt is not None:
    sources["batch"] = explain.Source(bt, ("batch", *bargs), explain.BATCH)
explain.block(
    sources,
    explain.heatmaps("causal", sources),
    window=panel_view.window,
    numbers=numbers,
    plan=plan,
)
panels.source(M.CausalAttention, M.renormalized_causal_weights)

# --- break it ----------------------------------------------------------------------------------
if batch.num_tokens and plan.slot("p3_breakit"):  # on the batch of the two texts
    spec = prepare.causal_batch_spec(bargs[2], cfg.book)
    hidden = cache.lesson_of(("causal bugs", *bargs), lambda: lessons.batch_hidden(batch.x, spec))
    breakit.break_it(
        "causal", batch.x, spec, hidden, batch.labels[0], key=bargs, book=cfg.book, plan=plan
    )

panels.next_pass(__file__, book=cfg.book)  # the next pass, same text and settings
