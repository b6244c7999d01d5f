"""The app's own CSS: small screens and readable text, injected once per run from app.py.

Streamlit stacks columns below 640 px by itself; what it leaves to the app is here:

- a formula (KaTeX) or a Markdown table wider than the column scrolls inside itself instead of
  pushing the whole page sideways;
- on a phone, code wraps (its lines stay whole, only folded) and formulas are set a little
  smaller, so most fit without scrolling;
- a live check's "How close, in numbers" fold (ui/render.fold_html) sits close under its
  sentence, in the captions' grey and size;
- a cell's derivation, scrolled to by a ``cell=`` link (ui/teach/cell_grid.js), stops below
  Streamlit's header;
- every text meets WCAG 2.1 AA contrast (4.5:1, 3:1 for large text) on its background:
  captions are drawn in a grey of 6.6:1 without Streamlit's 0.6 opacity (which left them at
  3.9:1), and so are a live check's words under its badge (ui/render.badge_text), a
  button's shortcut key at full strength (3.9:1 on the presenter's Next at 0.6), and
  the code's syntax colours are darker versions of Streamlit's (its green, teal,
  orange, blue and grey were 2.3–3.8:1 on the code's background);
- chart titles are set smaller on a phone (figures.readable wraps a long one onto more lines),
  no chart text is under 11 px: a heatmap's cell numbers that plotly.js would set smaller are
  not drawn (hovering or tapping a cell shows its value), and subscripts keep 92 % of their
  line's size instead of plotly's 70 %;
- the home page's diagram is drawn twice (pages/why-attention.py), side by side for a wide
  screen and one picture above the other for a phone, and each screen shows its own; on a
  phone a button's label wraps instead of running off the screen;
- a Markdown table wider than its column (the break-it table) scrolls in its own box, its
  edges shaded while there is more on that side, and on a phone a line over it says so;
- the control that opens the collapsed sidebar says "Settings" next to its arrows, with a
  finger-sized target;
- the tablet sidebar is narrower, leaving the charts more room, and there a row of charts (or
  of three or more columns) stacks: a third of a tablet's main block (about 170 px) cuts a
  matrix's token labels, and in half of it (about 270 px) a 6 × 6 matrix's plot is about 90 px
  wide, its cell numbers running into each other. Chart titles in columns are set at 13 px
  there (a wrapped line of 40 characters fits 270 px at 13 px, not at 15).

Only selectors of Streamlit's public test ids, its badge's class, the ``st-key-<key>`` class it
gives a keyed container and KaTeX's own classes are used.
"""

from __future__ import annotations

import streamlit as st

PHONE_MAX = 640  # Streamlit's own breakpoint, below which columns stack
TABLET_MAX = 1024

CAPTION_GREY = "#5e5d5b"  # 6.4:1 on the code blocks' background, 6.6:1 on white
# Syntax colours (Prism's token classes in st.code), each at least 5.3:1 on light backgrounds.
CODE_COLOURS = {
    "#0b5cad": ("keyword", "function", "builtin", "class-name"),
    "#1a6e33": ("string", "char", "attr-value", "inserted"),
    "#0b6e62": ("number", "boolean", "constant"),
    "#a4470b": ("operator", "decorator", "regex"),
    CAPTION_GREY: ("punctuation", "comment", "prolog"),
    "#b3261e": ("deleted",),
}
_CODE_CSS = "\n".join(
    ", ".join(f"[data-testid='stCode'] .token.{kind}" for kind in kinds)
    + f" {{ color: {colour} !important; }}"
    for colour, kinds in CODE_COLOURS.items()
)

# A heatmap's cell numbers: plotly.js sizes them to fit the cells as drawn (figures.heatmap);
# under 11 px (a large matrix, a phone) they are not drawn at all, and hovering or tapping a
# cell shows its value. Plotly writes the size it chose into each number's inline style.
MIN_TEXT_PX = 11
_SMALL_CELL_NUMBERS_CSS = ", ".join(
    f'[data-testid="stPlotlyChart"] g.heatmap-label text[style*="font-size: {px}px;"]'
    for px in range(1, MIN_TEXT_PX)
)
# Over a table wider than a phone (the break-it table), which scrolls inside its own box; its
# edges also shade while there is more to see on that side.
SWIPE_HINT = "Swipe the table sideways to see every column →"

CSS = f"""
<style>
div[data-testid="stCaptionContainer"] {{
  opacity: 1;
  color: {CAPTION_GREY};
}}
[data-testid="stMarkdownContainer"] .stMarkdownBadge + br + span {{
  color: {CAPTION_GREY};
}}
details.how-close {{
  margin: -0.6rem 0 0;
  font-size: 0.875rem;
  color: {CAPTION_GREY};
}}
details.how-close > summary {{
  cursor: pointer;
  width: fit-content;
}}
details.how-close > div {{
  margin-top: 0.25rem;
}}
details.how-close .check {{
  font-weight: 600;
}}
.st-key-present_narrow, .st-key-diagram_narrow {{
  display: none;
}}
.st-key-explain_derivation {{
  scroll-margin-top: 64px;
}}
button[data-testid^="stBaseButton"] kbd {{
  opacity: 1;
}}
{_CODE_CSS}
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
  background:
    linear-gradient(to right, #ffffff 40%, rgba(255, 255, 255, 0)) left / 28px 100% no-repeat local,
    linear-gradient(to left, #ffffff 40%, rgba(255, 255, 255, 0)) right / 28px 100% no-repeat local,
    radial-gradient(farthest-side at 0 50%, rgba(49, 51, 63, 0.3), transparent)
      left / 14px 100% no-repeat scroll,
    radial-gradient(farthest-side at 100% 50%, rgba(49, 51, 63, 0.3), transparent)
      right / 14px 100% no-repeat scroll;
}}
{_SMALL_CELL_NUMBERS_CSS} {{
  display: none;
}}
[data-testid="stPlotlyChart"] tspan[style*="font-size:70%"] {{
  font-size: 92% !important;
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
  .st-key-diagram_wide {{
    display: none;
  }}
  .st-key-diagram_narrow {{
    display: block;
  }}
  button[data-testid^="stBaseButton"] [data-testid="stMarkdownContainer"] p {{
    white-space: normal;
  }}
  [data-testid="stMarkdownContainer"] table::before {{
    content: "{SWIPE_HINT}";
    display: block;
    position: sticky;
    left: 0;
    padding: 0 0 4px;
    font-size: 14px;
    color: {CAPTION_GREY};
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
