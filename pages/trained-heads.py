"""Trained heads: GPT-2's published weights inside the chapter's MultiHeadAttention."""

from ui import entry

entry.guard(__file__)  # a fresh server's first visit: let app.py run this page


import functools

import pandas as pd
import streamlit as st

from attnviz.models import gpt2
from attnviz.teach import bugs
from attnviz.teach.panel import View
from attnviz.teach.prepare import EMPTY_MESSAGE
from ui import cache, state
from ui import render as panels
from ui.models import trained
from ui.text import md_escape

cfg = state.config()

st.title("Trained heads: GPT-2's weights in your module")
st.write(
    "Every other page uses random weights, as the chapter does. Here the same MultiHeadAttention "
    "class is built once per layer of GPT-2 (twelve times for GPT-2 small), and OpenAI's trained "
    "weights are copied into it. "
    + ("The book's sentence" if cfg.book else "The sidebar's text")
    + " goes through every layer, and each head's attention weights are drawn below, beside a "
    "random head of the same width on the same text."
)
st.caption(
    "GPT-2 fixes the sizes, so the chapter's arguments do not apply here."
    if cfg.book
    else "GPT-2 fixes the sizes, so the sidebar's d_in, d_out, num_heads, context_length, "
    "dropout and qkv_bias do not apply here; its embedding and weight seeds set the random head."
)

if not trained.real_vocabulary():
    st.warning(
        "GPT-2 reads token ids from its own vocabulary, and this server runs on the fallback "
        "tokenizer (see the notice above), so there is nothing true to show here."
    )
    st.stop()
tokens = trained.tokens_for(cfg.text, cfg.settings.max_tokens)
if len(tokens) == 0:
    st.info(EMPTY_MESSAGE)
    st.stop()
panels.notes([m for m in (tokens.cap_message(),) if m])  # the token cap, as on every page

folder, problem = trained.weights_problem()
if problem or folder is None:
    # Students read what the page will show, and see it; the set-up is for the instructor.
    st.info(trained.NOT_YET)
    st.image(
        trained.illustration(),
        caption=trained.ILLUSTRATION_CAPTION,
        alt="Illustration: five attention maps, four kinds of trained head and an untrained one",
    )
    with st.expander(trained.INSTRUCTOR_TITLE):
        st.markdown(f"{problem}  \n{trained.HOW_TO_GET}")
    rand_settings = trained.random_settings(None, cfg.settings)
    labels = tokens.labels
    rand = trained.random_head(cfg.text, rand_settings, len(labels))
    st.subheader("Meanwhile: the chapter's random head on your text")
    head = st.selectbox("Random head", range(rand.shape[0]), key="t_rand_head")
    panel = cache.lesson_of(  # made once per text, seeds and head, shared by every session
        ("trained-random-panel", cfg.text, rand_settings, len(labels), head),
        lambda: trained.head_panel(
            "t_rand_only", rand[head], labels, f"Random head {head} (untrained)"
        ),
    )
    panels.show(panel, numbers=False)
    st.stop()

try:
    with st.spinner("Loading GPT-2 and running your text through it…"):
        config = trained.config_of(folder)
        n = min(len(tokens), config.context_length)
        ids = tuple(tokens.ids[:n])
        view = trained.view(folder, ids)
except gpt2.WeightsError as err:
    st.error(f"The weights in `{gpt2.ENV}` could not be used: {md_escape(str(err))}")
    st.stop()
labels = tokens.labels[:n]
if n < len(tokens):
    st.caption(f"GPT-2's context is {config.context_length} tokens: the first {n} are used.")
L, H = config.n_layers, config.n_heads
st.caption(
    f"{L} layers × {H} heads, {config.emb_dim} wide ({config.head_dim} per head), on {n} tokens; "
    f"the forward took {view.seconds:.2f} s and is cached for this text "
    f"(weights file in the {view.layout} key layout)."
)

# --- the grid -------------------------------------------------------------------------------
st.subheader("Every head at a glance")
rows = [
    {"type": name, "criterion (queries 1 … T−1)": rule, "heads": int(view.types[name].sum())}
    for name, rule in gpt2.HEAD_TYPES.items()
]
st.dataframe(pd.DataFrame(rows), hide_index=True)
picked = st.pills(
    "Show only heads of these types", list(gpt2.HEAD_TYPES), selection_mode="multi", key="t_types"
)
wanted = tuple(t for t in gpt2.HEAD_TYPES if t in (picked or []))
shown = trained.shown_heads(view, wanted)
choices = [(layer, head) for layer in range(L) for head in range(H) if shown[layer, head]]
if not choices:
    st.info("No head meets these criteria for this text. Clear the filter to see them all.")
    st.stop()


# One set of detectors: each head is named as page 8 names the grown model's heads.
probe = trained.probe(folder)


def head_name(choice):
    kinds = trained.types_of(view, *choice)
    name = trained.detector_name(probe, *choice) or "no detector names it"
    return f"layer {choice[0]}, head {choice[1]}: {name}" + (
        f" · on your text: {', '.join(kinds)}" if kinds else ""
    )


layer, head = st.selectbox("Open a head", choices, format_func=head_name, key="t_open")
grid = trained.grid(folder, ids, wanted, (layer, head))
panels.chart(grid, key="t_grid")
side = view.thumbs.shape[-1]
st.caption(
    f"Each thumbnail is {side} × {side}: the tokens are cut into {side} consecutive blocks and a "
    "cell holds the weight a block of queries gives a block of keys (summed over the keys, "
    "averaged over the queries), so each row still sums to 1. The red frame is the open head."
    if side < n
    else "Each thumbnail holds the head's full weights (one cell per query and key). "
    "The red frame is the open head."
)

# --- one head, trained and random -----------------------------------------------------------
st.subheader(f"Layer {layer}, head {head}, beside a random head")
rand_settings = trained.random_settings(config, cfg.settings)
rand = trained.random_head(cfg.text, rand_settings, n)
scale = st.radio(
    "Color scale",
    ["weights, 0 to 1", "relative to an even share (log scale)"],
    horizontal=True,
    key="t_scale",
)
numbers = panels.show_numbers_toggle()
left, right = st.columns(2)
for column, weights, title, key in (
    (left, view.weights[layer, head], f"GPT-2 layer {layer}, head {head}", "t_trained"),
    (right, rand[head], f"Random head {head}, same width, same text", "t_random"),
):
    with column:
        panel_key = (folder, ids, layer, head, cfg.text, rand_settings, key)
        panel = cache.lesson_of(
            ("trained-panel", *panel_key),
            functools.partial(trained.head_panel, key, weights, labels, title),
        )
        panels.show(panel, numbers=numbers, view=View(relative=not scale.startswith("weights")))
st.caption(
    f"The random head is the chapter's MultiHeadAttention({config.emb_dim}, {config.emb_dim}, "
    f"num_heads={H}, qkv_bias=True) on random embeddings of the same tokens (embedding seed "
    f"{cfg.settings.seed_embed}, weight seed {cfg.settings.seed_weights}), as on page 4. On the log scale white is an even share of the "
    "keys a query can see."
)
st.dataframe(pd.DataFrame(trained.head_table(view, layer, head, rand)), hide_index=True)
st.markdown(
    f"**The detectors' scores of layer {layer}, head {head}** on `<|endoftext|>` and "
    f"{probe.length} random tokens repeated once, the probe that names every head here (and the "
    "grown model's heads on page 8): a head is named after its highest score when it reaches 0.5."
)
st.dataframe(pd.DataFrame(trained.probe_rows(probe, layer, head)), hide_index=True)

# --- where it sits ----------------------------------------------------------------------------
st.subheader("Where attention sits in the block")
st.write(
    "GPT-2 normalizes each token's vector before attention (LayerNorm), and adds attention's "
    "output back to the vector it read (the residual connection); a feed-forward network follows "
    f"the same way. Each of the {L} blocks does this once. Shapes for your {n} tokens:"
)
st.dataframe(pd.DataFrame(gpt2.block_shapes(config, n)), hide_index=True)
st.write(
    "GPT-2 stores W_query, W_key and W_value side by side in one matrix, c_attn, as a Conv1D "
    "whose weight is (input, output); nn.Linear keeps (output, input). Loading is Exercise 3.1's "
    "transposition, after a split in three:"
)
st.code(bugs.source_of(gpt2.split_c_attn), language="python")
panels.source(gpt2.TransformerBlock.forward, gpt2.attention_with_weights, title="The block's code")
