"""attnviz: the engine behind the app. Chapter 3's attention, traced, checked and drawn.

Importing ``attnviz`` never imports Streamlit: everything here runs in a notebook or a test.
"""

from attnviz.core.modules import (
    CausalAttention,
    MultiHeadAttention,
    MultiHeadAttentionWrapper,
    SelfAttention_v1,
    SelfAttention_v2,
)
from attnviz.core.seeding import seeded
from attnviz.core.settings import Settings, SettingsError

__all__ = [
    "CausalAttention",
    "MultiHeadAttention",
    "MultiHeadAttentionWrapper",
    "SelfAttention_v1",
    "SelfAttention_v2",
    "Settings",
    "SettingsError",
    "seeded",
]
