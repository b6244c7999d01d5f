"""app.py builds its st.Page objects once per session."""

from .conftest import go, open_app


def test_a_session_builds_its_pages_once_and_sessions_never_share_them():
    """app.py keeps its st.Page objects in the session (Streamlit marks on them which page a run
    may run, so two sessions must not share one)."""
    first = open_app(page="causal")
    pages = first.session_state["_attnviz_pages"]
    assert [p.title for p in pages][:2] == ["Why attention", "1. Simplified self-attention"]
    go(first, "multihead")
    first.run()
    assert first.session_state["_attnviz_pages"] is pages
    assert all(a is b for a, b in zip(first.session_state["_attnviz_pages"], pages, strict=True))
    other = open_app(page="causal")
    assert not {id(p) for p in other.session_state["_attnviz_pages"]} & {id(p) for p in pages}
