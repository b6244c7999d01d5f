"""The reference app for benchmarks: one cached 64x64 heatmap, keyed by a URL parameter.

Every page's time is quoted as a ratio to this app's, measured in the same run, so the numbers
mean something on a shared, noisy machine. Run it like the real app, loopback only:
    streamlit run bench/reference_app.py --server.address 127.0.0.1 --server.headless true
"""

import numpy as np
import plotly.graph_objects as go
import streamlit as st


@st.cache_resource
def matrix(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).random((64, 64), dtype=np.float32)


try:
    seed = int(st.query_params.get("seed", "0"))
except ValueError:
    seed = 0
st.title("Reference: one heatmap")
st.plotly_chart(go.Figure(go.Heatmap(z=matrix(seed))), width="stretch")
