"""attnviz: the engine behind the app. Chapter 3's attention, traced, checked and drawn.

Importing ``attnviz`` never imports Streamlit: everything here runs in a notebook or a test.
"""

from .modules import (
    CausalAttention,
    MultiHeadAttention,
    MultiHeadAttentionWrapper,
    SelfAttention_v1,
    SelfAttention_v2,
)
from .seeding import seeded
from .settings import Settings, SettingsError

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
