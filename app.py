"""attnviz: watch attention work, pass by pass, as chapter 3 of the book builds it.

Run with ``streamlit run app.py``. This file is the frame every page runs in: it reads and checks
the URL, builds the shared sidebar once, says which tokenizer is in use, and routes to the pages.
"""

import streamlit as st

from ui import entry


# Each page file is named after its URL path, and starts with ``entry.guard(__file__)``: then a
# fresh server's first visit, which Streamlit resolves against the pages/ folder before this
# file has ever run, finds the same page and is handed back to this frame (ui/entry.py).
# To add a page: pages/<url-path>.py with the guard lines, and one st.Page line here.
def make_pages() -> list:
    """The app's pages, in menu order."""
    return [
        # The default page is served at "/" whatever its url_path; its own name, /why-attention,
        # is the hidden alias at the end of this list (the two need different url_paths).
        st.Page("pages/why-attention.py", title="Why attention", url_path="home", default=True),
        st.Page(
            "pages/simplified-attention.py",
            title="1. Simplified self-attention",
            url_path="simplified-attention",
        ),
        st.Page(
            "pages/trainable-attention.py",
            title="2. Trainable self-attention",
            url_path="trainable-attention",
        ),
        st.Page(
            "pages/causal-attention.py",
            title="3. Causal attention and dropout",
            url_path="causal-attention",
        ),
        st.Page(
            "pages/multi-head-attention.py",
            title="4. Multi-head attention",
            url_path="multi-head-attention",
        ),
        st.Page(
            "pages/watch-attention-learn.py",
            title="5. Watch attention learn",
            url_path="watch-attention-learn",
        ),
        st.Page(
            "pages/against-pytorch.py",
            title="6. Your module against PyTorch's",
            url_path="against-pytorch",
        ),
        st.Page("pages/trained-heads.py", title="7. Trained heads", url_path="trained-heads"),
        st.Page(
            "pages/grow-induction-heads.py",
            title="8. Grow an induction head",
            url_path="grow-induction-heads",
        ),
        st.Page("pages/poll.py", title="Ask the class", url_path="poll"),
        st.Page("pages/concept-check.py", title="Did I learn it?", url_path="concept-check"),
        # /why-attention (the home page's title as a path, and its file's name, which a fresh
        # server's first visit resolves against) opens the home page; not listed in the menu.
        st.Page(
            "pages/why-attention.py",
            title="Why attention",
            url_path="why-attention",
            visibility="hidden",
        ),
    ]


# Built once per session and kept in it: each st.Page resolves and hashes its file's path
# (about 2% of a page run). Not shared between sessions: st.navigation marks on the page object
# which page a run may run, and a session's runs come one after another.
PAGES = st.session_state.get("_attnviz_pages") or st.session_state.setdefault(
    "_attnviz_pages", make_pages()
)

# The script health check's run on a server not yet warm runs one page it has not run yet
# (None for every other run): ready means warm (ui/entry.py, attnviz/server/warmup.py).
check = entry.health_check(PAGES)

# The navigation comes before the heavy imports below (torch, Plotly): on a fresh server the
# sidebar then shows these titles at once, not the pages/ file names while torch loads.
navigation = st.navigation(check.pages if check else PAGES)
page_path = (check and check.page) or navigation.url_path

from attnviz.server import budget, gate, runtime, warmup  # noqa: E402
from ui import cache, links, profiling, state, style  # noqa: E402
from ui.teach import narrow, present  # noqa: E402
from ui.text import md_escape  # noqa: E402

# torch's intra-op threads, and large tensors' memory handed back to the system when freed
# (glibc's mmap threshold), for the whole server process: set once, never per session.
runtime.configure_threads()
runtime.configure_memory()


def frame() -> None:
    """One page run: the page's settings, the sidebar, the tokenizer line, then the page."""
    st.set_page_config(page_title="attnviz: attention, step by step", page_icon="🔍", layout="wide")
    style.inject()  # the small-screen and readability CSS (ui/style.py)

    # The URL is read and checked before any widget exists, so rejected values never reach them
    # (after st.navigation, so that the rerun read_url may ask for stays on the requested page).
    url_warning = state.read_url()
    if url_warning:
        st.session_state[state.URL_WARNING_KEY] = url_warning
    present.read_url()  # `present` and `step`; then the toggle, and the stepper's text box
    links.read_url()  # the pages' view controls (colour, token window, query token, bug, ...)
    config = state.sidebar(present.bar(page_path), page=page_path)
    st.session_state["_attnviz_config"] = config

    status = cache.tokenizer().status
    if status.is_real:  # at the foot of the sidebar: the top of a page is for its lesson
        with st.sidebar:
            st.caption(f"{status.headline} · {status.detail}")
    header = st.container()
    with header:
        if not status.is_real:  # the fallback changes every token: said on the page itself
            st.warning(f"{status.headline}. {md_escape(status.detail)}")
        narrow.notice()  # a presenter link opened on a phone: why the page looks as usual
        if state.URL_WARNING_KEY in st.session_state:
            st.warning(st.session_state[state.URL_WARNING_KEY])
        if links.URL_WARNING_KEY in st.session_state:
            st.warning(st.session_state.pop(links.URL_WARNING_KEY))

    # A page run that asks for a heavy trace waits for one of a few slots (ui/cache.py), so a class
    # dragging every slider to its end at once queues instead of exhausting the server's memory.
    try:
        with cache.page_run(), profiling.page_profile(), entry.app_frame():
            navigation.run()
    except budget.ServerBusy as busy:
        st.error(str(busy))


# One page run at a time in this process (attnviz/server/gate.py): under a class's clicks each run
# then finishes in its own few tens of milliseconds instead of sharing the interpreter lock
# with every other queued run; a run about to wait or to start long work gives its turn up.
with gate.page_turn(), entry.health_check_turn(check):
    frame()
# Once, after the first page run has imported everything; where the health check warms the
# server, after the warm-up's last page (its caches then are frozen with the imports).
warm = warmup.current()
if warm is None or warm.ready:
    runtime.freeze_startup_heap()
