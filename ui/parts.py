"""The closed parts of the pass pages (ui/sections.py), drawn once opened: page 2's "Why
divide by √d_k" and "SelfAttention_v1 against v2", page 3's dropout lab. Each draws what its
lesson holds; ``numbers`` and ``view`` are the page's "exact numbers" toggle and view, ``plan``
its "Predict first" plan (``ui.teach.predict.start``)."""

from __future__ import annotations

import streamlit as st

from attnviz.teach.lessons import causal as CL
from attnviz.teach.lessons import trainable as TL
from attnviz.teach.panel import View
from ui import render as panels
from ui import state, url
from ui.teach.predict import Plan
from ui.text import md_escape


def why_scale(lesson: TL.TrainableLesson, *, numbers: bool, view: View, plan: Plan) -> None:
    """Why the scores are divided by √d_k: the study at growing widths, then on this text."""
    st.write(
        "Take queries and keys whose entries have variance 1. A dot product over d_k entries "
        "then has variance d_k: the wider the head, the further apart the scores, and the "
        "softmax of widely spread scores is almost one-hot. A one-hot softmax barely changes "
        "when the scores change, so its gradient vanishes and training stalls. Dividing by "
        "√d_k brings the variance back to 1 at every width (16 keys per row, 256 rows, "
        "averaged):"
    )
    panels.beside(
        ("p2_entropy", lesson.entropy_figure),
        ("p2_gradient", lesson.gradient_figure),
        numbers=numbers,
    )
    st.caption(lesson.study_caption)
    st.subheader("On your text")
    st.write(
        "Each map is what dropping the 1/√d_k does to the weights, cell by cell: the softmax "
        "of the raw scores minus the softmax of the scaled ones."
    )
    # The same map at the wider d_out beside it, when that trace exists; else a note why not.
    changes = [lesson.panels[name] for name in ("change", "wide_change") if name in lesson.panels]
    panels.beside(
        *changes,
        numbers=numbers,
        view=view,
        below=lambda p: panels.lesson_claims(lesson, p, plan=plan),
        plan=plan,
    )
    if "wide_change" in lesson.panels:
        st.button(
            f"Set d_out to {TL.WIDE_D_OUT} in the sidebar",
            key="p2_wide",
            on_click=state.set_sidebar,
            kwargs={"d_out": TL.WIDE_D_OUT},
        )
    else:
        st.caption(md_escape(lesson.scaling_note))


def v1_against_v2(lesson: TL.TrainableLesson, *, numbers: bool, plan: Plan) -> None:
    """The two modules' initial weights and scores, and exercise 3.1's transfer."""
    st.write(
        "v1 holds raw `nn.Parameter(torch.rand(d_in, d_out))` matrices: every entry in [0, 1), "
        "all positive, with mean 0.5 rather than 0. v2 uses `nn.Linear`, whose default "
        "initialization draws from U(−1/√d_in, 1/√d_in): centered at 0, shrinking as d_in "
        "grows. Exercise 3.1: copy v2's weights, transposed, into v1 and the two modules agree."
    )
    if lesson.weights_histogram is not None and lesson.scores_histogram is not None:
        if plan.slot(TL.SCORES_HIST):  # the histogram's numbers are the scaled scores
            panels.beside(
                ("p2_weights_hist", lesson.weights_histogram),
                (TL.SCORES_HIST, lesson.scores_histogram),
                numbers=numbers,
            )
    st.code(
        "sa_v1.W_query = torch.nn.Parameter(sa_v2.W_query.weight.T)\n"
        "sa_v1.W_key = torch.nn.Parameter(sa_v2.W_key.weight.T)\n"
        "sa_v1.W_value = torch.nn.Parameter(sa_v2.W_value.weight.T)",
        language="python",
    )
    if lesson.exercise_3_1 is not None:
        panels.badge(lesson.exercise_3_1, plan=plan)
    if lesson.exercise_3_1_block is not None:
        panels.book_blocks([lesson.exercise_3_1_block])


def dropout_lab(lab: CL.DropoutLab | None, *, numbers: bool, view: View, plan: Plan) -> None:
    """The dropout lab's content (inside its box, once opened)."""
    if lab is None:
        st.info("dropout is 0 in the sidebar: nothing is dropped. Raise it to see the lab at work.")
        return
    st.write(lab.intro)
    if lab.illustrative:
        st.caption(
            "Rates above 0.2 are for illustration, as the chapter says: GPT models use 0.1–0.2."
        )
    if lab.printouts:
        st.write(
            "The chapter's own examples: `torch.manual_seed(123)` then `nn.Dropout(0.5)` on a "
            "6×6 matrix of ones, and on the causal weights above. On torch 2.13 (Linux) both "
            "reproduce the book's printout; the book warns that masks may differ on other "
            "platforms."
        )
        if plan.slot(CL.LAB_PRINTOUTS):  # the book's dropout example on these weights
            for p in lab.printouts:
                panels.book_beside(p.title, p.tensor, p.name)
        return
    if lab.dropped is None:
        return
    panels.beside(lab.mask, lab.dropped, numbers=numbers, view=view, plan=plan)
    if plan.slot(CL.LAB_SUMS):  # the row sums after dropout
        st.caption(lab.sums)
        if lab.zero_rows:
            st.warning(md_escape(lab.zero_rows))
    panels.claims(lab.claims, plan=plan)
    panels.beside(lab.values, lab.context, numbers=numbers, view=view, plan=plan)
    st.write(
        "The common placement drops attention weights (as above, and in the chapter); another "
        "option drops the context vectors after the weighted sum."
    )
    if (
        st.toggle(
            "Compare with dropout on the context vectors", key=url.PLACEMENT, bind="query-params"
        )
        and lab.context_dropout is not None
    ):
        left, right = st.columns(2)
        with left:
            st.write(lab.placement)
        with right:
            panels.show(lab.context_dropout, numbers=numbers, view=view, plan=plan)
