"""attnviz: watch attention work, pass by pass, as chapter 3 of the book builds it.

Run with ``streamlit run app.py``. This file is the frame every page runs in: it reads and checks
the URL, builds the shared sidebar once, says which tokenizer is in use, and routes to the pages.
"""

import streamlit as st

import ui.learn  # noqa: F401 - registers page 5's URL names before read_url()
from attnviz import budget, runtime
from ui import cache, profiling, state
from ui.text import md_escape

# torch's intra-op threads, for the whole server process: set once, never per session.
runtime.configure_threads()

st.set_page_config(page_title="attnviz: attention, step by step", page_icon="🔍", layout="wide")

PAGES = [
    st.Page("pages/0_home.py", title="Why attention", url_path="why-attention", default=True),
    st.Page(
        "pages/1_simplified.py",
        title="1. Simplified self-attention",
        url_path="simplified-attention",
    ),
    st.Page(
        "pages/2_trainable.py", title="2. Trainable self-attention", url_path="trainable-attention"
    ),
    st.Page(
        "pages/3_causal.py", title="3. Causal attention and dropout", url_path="causal-attention"
    ),
    st.Page(
        "pages/4_multihead.py", title="4. Multi-head attention", url_path="multi-head-attention"
    ),
    st.Page("pages/5_learn.py", title="5. Watch attention learn", url_path="watch-attention-learn"),
    st.Page(
        "pages/6_pytorch.py", title="6. Your module against PyTorch's", url_path="against-pytorch"
    ),
    st.Page("pages/7_trained.py", title="7. Trained heads", url_path="trained-heads"),
]

navigation = st.navigation(PAGES)
# The URL is read and checked before any widget exists, so rejected values never reach them
# (after st.navigation, so that the rerun read_url may ask for stays on the requested page).
url_warning = state.read_url()
if url_warning:
    st.session_state[state.URL_WARNING_KEY] = url_warning
config = state.sidebar()
st.session_state["_attnviz_config"] = config

status = cache.tokenizer().status
header = st.container()
with header:
    if status.is_real:
        st.caption(f"{status.headline} · {status.detail}")
    else:
        st.warning(f"{status.headline}. {md_escape(status.detail)}")
    if state.URL_WARNING_KEY in st.session_state:
        st.warning(st.session_state[state.URL_WARNING_KEY])

# Requests predicted to be heavy (large sizes) wait for one of a few slots, so a class dragging
# every slider to its end at once queues instead of exhausting the server's memory.
tokens = cache.prepared(*config.trace_args()).num_tokens
try:
    with budget.heavy_slot(config.settings, tokens), profiling.page_profile():
        navigation.run()
except budget.ServerBusy as busy:
    st.error(str(busy))
