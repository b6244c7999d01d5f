"""The app's own CSS: small screens and readable text, injected once per run from app.py.

Streamlit stacks columns below 640 px by itself; what it leaves to the app is here:

- a formula (KaTeX) or a Markdown table wider than the column scrolls inside itself instead of
  pushing the whole page sideways;
- on a phone, code wraps (its lines stay whole, only folded) and formulas are set a little
  smaller, so most fit without scrolling;
- chart titles are set smaller on a phone (figures.readable wraps a long one onto more lines);
- the control that opens the collapsed sidebar says "Settings" next to its arrows, with a
  finger-sized target;
- the tablet sidebar is narrower, leaving the charts more room, and there a row of charts (or
  of three or more columns) stacks: a third of a tablet's main block (about 170 px) cuts a
  matrix's token labels, and in half of it (about 270 px) a 6 × 6 matrix's plot is about 90 px
  wide, its cell numbers running into each other. Chart titles in columns are set at 13 px
  there (a wrapped line of 40 characters fits 270 px at 13 px, not at 15).

Only selectors of Streamlit's public test ids and KaTeX's own classes are used.
"""

from __future__ import annotations

import streamlit as st

PHONE_MAX = 640  # Streamlit's own breakpoint, below which columns stack
TABLET_MAX = 1024

CSS = f"""
<style>
[data-testid="stMarkdownContainer"] .katex-display {{
  overflow-x: auto;
  overflow-y: hidden;
  max-width: 100%;
  padding-bottom: 4px;
  scrollbar-width: thin;
}}
[data-testid="stMarkdownContainer"] table {{
  display: block;
  max-width: 100%;
  overflow-x: auto;
}}
[data-testid="stExpandSidebarButton"] {{
  min-width: 44px;
  min-height: 44px;
  width: auto;
  padding: 0 10px 0 6px;
  border: 1px solid #8a8d99;
  border-radius: 8px;
  background: #ffffff;
  color: #31333f;
}}
[data-testid="stExpandSidebarButton"]::after {{
  content: "Settings";
  margin-left: 4px;
  font-size: 15px;
  font-weight: 600;
}}
@media (max-width: {PHONE_MAX}px) {{
  [data-testid="stCode"] pre,
  [data-testid="stCode"] pre code {{
    white-space: pre-wrap !important;
    overflow-wrap: anywhere;
  }}
  [data-testid="stMarkdownContainer"] .katex-display > .katex {{
    font-size: 1em;
  }}
  [data-testid="stPlotlyChart"] .gtitle {{
    font-size: 13px !important;
  }}
}}
@media (min-width: {PHONE_MAX + 1}px) and (max-width: {TABLET_MAX}px) {{
  section[data-testid="stSidebar"] {{
    width: 240px !important;
    min-width: 240px !important;
  }}
  [data-testid="stHorizontalBlock"]:has(> [data-testid="stColumn"]:nth-child(3))
    > [data-testid="stColumn"],
  [data-testid="stHorizontalBlock"]:has([data-testid="stPlotlyChart"])
    > [data-testid="stColumn"] {{
    min-width: 100%;
  }}
  [data-testid="stColumn"] [data-testid="stPlotlyChart"] .gtitle {{
    font-size: 13px !important;
  }}
}}
</style>
"""


def inject() -> None:
    """Add the CSS to the page (a style-only st.html takes no room in the layout)."""
    st.html(CSS)
