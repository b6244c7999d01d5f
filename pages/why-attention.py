"""Home: why attention (measured on two recorded encoder–decoders, issue 38), the four passes as
a map, and the current text as tokens and X."""

from ui import entry

entry.guard(__file__)  # a fresh server's first visit: let app.py run this page

import pandas as pd
import streamlit as st

from attnviz.models.bottleneck import bottleneck_run
from attnviz.teach.lessons import home as why
from attnviz.teach.lessons.home import home_lesson
from ui import cache, state
from ui import render as panels
from ui.models import alignment
from ui.text import md_escape

cfg = state.config()
args = cfg.trace_args("simplified")  # X depends only on the text, d_in and the embedding seed

panels.page_top(__file__)  # title, paragraph and formula: ui/intros.toml
warning = alignment.read_url()  # the toy sentence's values in the link, checked (why_*)
if warning:
    st.warning(warning)

# The same two pictures twice: side by side on a wide screen, one above the other on a phone
# (ui/style.py shows one of the two), where the wide one would set its words under 11 px.
DIAGRAM = """
digraph G {
  rankdir=%(rankdir)s; newrank=true; node [shape=box, style="rounded,filled", fillcolor="#eef2fb", fontsize=11];
  subgraph cluster_rnn { label="RNN encoder–decoder: one bottleneck"; fontsize=11;
    a1 [label="x1"]; a2 [label="x2"]; a3 [label="x3"]; h [label="hidden state", fillcolor="#fde2e2"];
    o1 [label="y1"]; o2 [label="y2"];
    a1 -> a2 -> a3 -> h; h -> o1; h -> o2;
    { rank=same; %(outputs)s [style=invis]; } }
  subgraph cluster_att { label="Attention: every output sees every input"; fontsize=11;
    b1 [label="%(b1)s"]; b2 [label="%(b2)s"]; b3 [label="%(b3)s"]; z1 [label="z1", fillcolor="#e2f5e7"]; z2 [label="z2", fillcolor="#e2f5e7"];
    { rank=same; %(inputs)s [style=invis]; }
    { rank=same; %(outputs2)s [style=invis]; }
    b1 -> z1; b2 -> z1; b3 -> z1; b1 -> z2; b2 -> z2; b3 -> z2; }
  %(between)s [style=invis];
}
"""
WIDE = {
    "rankdir": "LR",
    "outputs": "o2 -> o1",
    "inputs": "b3 -> b2 -> b1",
    "outputs2": "z2 -> z1",
    "between": "a1 -> b1",
    "b1": "x1",
    "b2": "x2",
    "b3": "x3",
}
NARROW = {
    "rankdir": "TB",
    "outputs": "o1 -> o2",
    "inputs": "b1 -> b2 -> b3",
    "outputs2": "z1 -> z2",
    "between": "o1 -> b2",
    # dot sets this row b2, b3, b1 from left to right: labelled so that it reads x1, x2, x3
    "b1": "x3",
    "b2": "x1",
    "b3": "x2",
}
with st.container(key="diagram_wide"):
    st.graphviz_chart(DIAGRAM % WIDE, width="stretch")
with st.container(key="diagram_narrow"):
    st.graphviz_chart(DIAGRAM % NARROW, width="content")

st.write(
    "**Self-attention** relates the positions of one sequence to each other: each token's new "
    "representation (its context vector) is a weighted sum over the tokens of the same text. "
    "Classic attention related two sequences instead: the decoder's state against the encoder's "
    "states. GPT models use self-attention, with a causal mask so that a token sees only the past."
)

st.header("Why attention, measured")
st.markdown(
    "**Word by word fails.** A toy language, *Mirror*, has a word for each of twenty English "
    "words and says every sentence back to front (a reordering as drastic as it gets; German "
    "only moves the verb to the end):"
)
example = cache.lesson_of(("home", "why", "word by word"), why.word_by_word)
panels.table(("home", "why", "word by word"), "example", lambda: example.table)
st.write(md_escape(example.text))

st.markdown(
    "**The bottleneck, in numbers.** Two small GRU encoder–decoders learned Mirror, as in the "
    "papers that introduced attention: one decodes from the encoder's final state alone (one "
    "vector for the whole sentence), the other also takes, at every word it writes, a weighted "
    "sum of all the encoder's states (dot-product attention). Recorded runs, retrained bit for "
    "bit by `scripts/train-bottleneck`; nothing trains here."
)
runs = cache.lesson_of(("home", "why", "runs"), lambda: why.run_lesson(bottleneck_run.recorded()))
st.write(md_escape(runs.sizes))
panels.beside(("why_by_length", runs.by_length))
st.write(md_escape(runs.at_words))
panels.beside(("why_during_bottleneck", runs.during[0]), ("why_during_attention", runs.during[1]))
st.caption(md_escape(runs.during_caption))

st.markdown(
    "**Attention aligns.** Pick a sentence (or type one) and watch both models translate it."
)


alignment.section(runs.alignment)  # the sentence, both outputs, the alignment, Explain a cell
st.subheader("From cross-attention to self-attention")
st.write(md_escape(runs.bridge))

st.subheader("The four passes")
panels.table(
    ("home",),
    "passes",
    lambda: pd.DataFrame(
        [
            {
                "pass": "1. Simplified self-attention",
                "adds": "scores X Xᵀ, row softmax, context αX",
                "module": "none",
            },
            {
                "pass": "2. Trainable self-attention",
                "adds": "W_q, W_k, W_v; scores QKᵀ/√d_k",
                "module": "SelfAttention_v1, _v2",
            },
            {
                "pass": "3. Causal attention",
                "adds": "mask the future, dropout on the weights, batches",
                "module": "CausalAttention",
            },
            {
                "pass": "4. Multi-head attention",
                "adds": "several heads in parallel, out_proj",
                "module": "MultiHeadAttentionWrapper, MultiHeadAttention",
            },
        ]
    ),
)
st.page_link(
    "pages/simplified-attention.py", label="Start with pass 1", icon=":material/arrow_forward:"
)

st.subheader("Your text, as the model sees it")
prep = cache.prepared(*args)
panels.notes(prep.messages)
home = cache.lesson_of(("home", *args), lambda: home_lesson(prep))
if home.count is not None:
    st.write(md_escape(home.count.text))
    panels.table(("home", *args), "tokens", lambda: home.tokens)
if home.shape is not None:
    st.write(md_escape(home.shape.text))
    panels.show(home.panels["x"], numbers=panels.show_numbers_toggle())
