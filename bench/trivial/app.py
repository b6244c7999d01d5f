"""The trivial reference app for the live benchmark: seven pages, one cached heatmap each.

It has as many pages as attnviz and draws one 64x64 Plotly heatmap per run, keyed by the page
and a ``seed`` URL parameter. It lives in its own folder so that ``streamlit run`` started
here reads this folder's ``.streamlit/config.toml`` (Streamlit's defaults: post-run garbage
collection on, magic on), which is what a typical Streamlit app pays per run.

    cd bench/trivial && streamlit run app.py --server.address 127.0.0.1 --server.headless true
"""

import numpy as np
import plotly.graph_objects as go
import streamlit as st

PAGE_COUNT = 7


@st.cache_resource
def matrix(page: int, seed: int) -> np.ndarray:
    return np.random.default_rng([page, seed]).random((64, 64), dtype=np.float32)


def page_drawer(page: int):
    def draw() -> None:
        try:
            seed = int(st.query_params.get("seed", "0"))
        except ValueError:
            seed = 0
        st.title(f"Reference page {page}: one heatmap")
        st.plotly_chart(go.Figure(go.Heatmap(z=matrix(page, seed))), width="stretch")

    return draw


pages = [
    st.Page(page_drawer(i), title=f"Page {i}", url_path=f"page-{i}", default=i == 0)
    for i in range(PAGE_COUNT)
]
st.navigation(pages).run()
