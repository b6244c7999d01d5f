"""Page 8: grow an induction head. The recorded run scrubbed step by step (nothing trains), the
heads' maps on the student's text beside the one-layer control, ablation, and a run grown live.
Layout only: every number and sentence comes from attnviz.teach.lessons.grow (via ui/models/growing.py)."""

from ui import entry

entry.guard(__file__)  # a fresh server's first visit: let app.py run this page

import streamlit as st

from attnviz.teach.lessons import grow as G
from attnviz.teach.prepare import EMPTY_MESSAGE
from ui import render as panels
from ui import state
from ui.models import growing
from ui.text import md_escape

cfg = state.config()
panels.page_top(__file__)  # title, paragraph and formula: ui/intros.toml
warning = growing.read_url()
if warning:
    st.warning(warning)
st.caption(
    "This page's model has its own sizes: of the sidebar, only the text applies here "
    "(in book mode, the book's sentence)."
)
tokens = growing.tokens_of(cfg.text, cfg.settings.max_tokens)
if len(tokens) == 0:  # as on every page drawn from the text: one message, nothing drawn
    st.info(EMPTY_MESSAGE)
    st.stop()
panels.notes([m for m in (tokens.cap_message(),) if m])  # the token cap, as on every page


def bullets(lines) -> None:
    st.markdown("\n".join(f"- {md_escape(line)}" for line in lines))


# --- the recorded run ------------------------------------------------------------------------
st.header("The recorded run")
st.write(G.recorded_words() + " Nothing trains when you move the slider.")
step = growing.step_slider()
run = growing.run_view(step)
for column, (label, value) in zip(st.columns(len(run.metrics)), run.metrics, strict=True):
    column.metric(label, value)
st.write(run.phase)
panels.plot(run.loss, key="p8_loss", numbers=False)
st.caption(
    "The first copy is random, so no model can beat chance (ln of the vocabulary) on it; the "
    "repeat is predictable by a model that finds the earlier copy."
)
panels.beside(("p8_previous", run.previous), ("p8_induction", run.induction))
st.caption(
    "Scores on held-out sequences: the mean attention weight on the previous token (key i − 1), "
    "and on the token right after the earlier copy of the query's own token (induction). "
    "Heads are named “layer.head”. Below, each head's scores are measured apart inside the "
    "repeat and before it, and a head is named there after a score only when it reaches 0.5."
)
st.markdown(f"**What each head's scores name it at step {step:,}** (held out, by part)")
bullets(run.names)
st.write(run.layer0)

# --- the heads on your text ---------------------------------------------------------------
st.header("The heads on your text")
maps = growing.maps_view(tokens, step)
st.write(md_escape(maps.layout))
numbers = panels.show_numbers_toggle()


def claims_under(panel) -> None:
    """The panel's sentences, a paragraph each, in one caption (one element, not one each)."""
    said = [md_escape(claim.text) for claim in maps.claims_for(panel.key)]
    if said:
        st.caption("\n\n".join(said))


panels.beside(maps.layers[0], numbers=numbers, below=claims_under)
panels.beside(maps.layers[1], numbers=numbers, below=claims_under)
st.write(G.control_words(maps.control_step))
panels.beside(maps.control, numbers=numbers, below=claims_under)

# --- ablation ------------------------------------------------------------------------------------
st.header("Ablate: zero heads of layer 0")
st.write(G.ABLATION_HOW)
if st.toggle("Ablate a head", key="gablate", bind="query-params"):
    head = int(
        st.radio(
            "Head of layer 0 to zero (head 0.h)",
            [0, 1, 2, 3],
            horizontal=True,
            key="ghead",
            bind="query-params",
        )
    )
    ablation = growing.ablation_view(step)
    st.write(ablation.sentences[head])
    panels.plot(growing.ablation_chart(ablation, head), key="p8_ablation", numbers=False)
    st.caption(md_escape(" ".join(s for i, s in enumerate(ablation.sentences) if i != head)))
    st.markdown("**What layer 1's induction rests on, measured**")
    bullets(ablation.mechanism)

# --- grow your own -------------------------------------------------------------------------------
st.header("Grow your own")
st.write(
    "Train the same model from a seed of your choice, here and now: progress comes at least "
    "once a second. One model grows at a time on this server; if another is growing, you are "
    "told your place in the queue. Cancel, or leaving the page, stops the run."
)
seed, grow_steps, pressed = growing.grow_controls()
done = growing.finished_run(seed, grow_steps)
if pressed and done is None:
    done = growing.grow_live(seed, grow_steps)
elif pressed:
    st.caption("Already grown with this seed and step count on this server: shown from there.")
if done is None:
    st.info("Press Grow to train (nothing trains until you do).", icon=":material/play_arrow:")
else:
    grown = growing.grown_view(seed, done)
    st.write(grown.summary)
    note = growing.live_note(seed, grow_steps)
    if note:
        st.caption(note)
    panels.plot(grown.curves, key="p8_grown", numbers=False)
    st.markdown(
        "**What each head's scores name it at the end** (averaged over whole sequences: a "
        "live run keeps no weights to measure inside and before the repeat apart)"
    )
    bullets(grown.names)
