"""WCAG 2.1 contrast of every text on a page, computed in the browser from computed styles.

:data:`TEXT_CONTRAST` is a JavaScript function for ``page.evaluate``: it walks every text node
of the page (the sidebar included when it is open), and for each visible one works out the
colour it is drawn in (its element's ``color``, or ``fill`` in SVG, with that colour's alpha,
``fill-opacity`` and the ``opacity`` of the element and every ancestor multiplied in) and the
colour behind it (the background colours of its ancestors, composed from the page's white
upwards; an SVG's own background; Plotly's plot background under chart text). It returns one
record per text element: the text, its size and weight, the two colours, the ratio and what
WCAG 2.1 asks there (4.5:1, or 3:1 for large text: at least 24 px, or 18.66 px bold).

What it cannot judge it names instead of guessing (``unknown``): text over a background image
or gradient, and the numbers Plotly writes in heatmap cells (drawn over the cell's colour in a
canvas image; Plotly picks black or white for each, ``textfont.color`` "auto").
Text exempt under WCAG 1.4.3 is left out: disabled controls (and their labels), and text that is
not shown (``visibility: hidden``, ``display: none``, zero size, ``aria-hidden`` icons).
"""

from __future__ import annotations

TEXT_CONTRAST = r"""
(rootSelector) => {
  const root = document.querySelector(rootSelector || 'body') || document.body;
  const parse = (s) => {
    if (!s || s === 'none' || s === 'transparent') return [0, 0, 0, 0];
    const m = s.match(/[\d.]+/g);
    if (!m || m.length < 3) return null;
    return [+m[0], +m[1], +m[2], m.length > 3 ? +m[3] : 1];
  };
  const over = (top, under) => {  // top (with alpha) composed over an opaque colour
    const a = top[3];
    return [0, 1, 2].map(i => top[i] * a + under[i] * (1 - a)).concat([1]);
  };
  const lum = (c) => {
    const f = (v) => { v /= 255; return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
  };
  const ratio = (a, b) => { const [hi, lo] = [lum(a), lum(b)].sort((x, y) => y - x);
    return (hi + 0.05) / (lo + 0.05); };
  const shown = (e) => {
    if (!e.getClientRects().length) return false;
    const r = e.getBoundingClientRect();
    if (r.width < 1 || r.height < 1) return false;
    const cs = getComputedStyle(e);
    return cs.visibility !== 'hidden' && cs.display !== 'none';
  };
  const opacityOf = (e) => {
    let o = 1;
    for (let n = e; n && n.nodeType === 1; n = n.parentElement) {
      const v = parseFloat(getComputedStyle(n).opacity);
      if (!isNaN(v)) o *= v;
    }
    return o;
  };
  // Whether box b covers most of the text's box t (a slider's value floats above its thumb,
  // outside it: the thumb's colour is not behind that text).
  const covers = (b, t) => {
    const w = Math.min(b.right, t.right) - Math.max(b.left, t.left);
    const h = Math.min(b.bottom, t.bottom) - Math.max(b.top, t.top);
    return w > 0 && h > 0 && w * h >= 0.5 * t.width * t.height;
  };
  // The colour behind element e: the backgrounds of those of its ancestors drawn under it,
  // composed from the root (white) down; null when one has a background image (not judged).
  const backgroundOf = (e) => {
    const box = e.getBoundingClientRect();
    const chain = [];
    for (let n = e; n && n.nodeType === 1; n = n.parentElement) {
      if (n === e || covers(n.getBoundingClientRect(), box)) chain.push(n);
    }
    let colour = [255, 255, 255, 1];
    let image = false;
    for (let i = chain.length - 1; i >= 0; i--) {
      const n = chain[i];
      const cs = getComputedStyle(n);
      if (cs.backgroundImage && cs.backgroundImage !== 'none') image = true;
      let bg = parse(cs.backgroundColor);
      if (n.tagName === 'svg' && n.style && n.style.background) {
        const own = parse(n.style.background);
        if (own && own[3] > 0) bg = own;
      }
      if (n.classList && n.classList.contains('bg')) {  // Plotly's plot-area rectangle
        const fill = parse(cs.fill);
        if (fill) bg = [fill[0], fill[1], fill[2], fill[3] * (parseFloat(cs.fillOpacity) || 1)];
      }
      if (bg && bg[3] > 0) { colour = over(bg, colour); image = image && bg[3] < 1; }
    }
    return image ? null : colour;
  };
  const plotBackground = (e) => {
    const svg = e.closest('svg.main-svg');
    if (!svg) return null;
    const plot = e.ownerSVGElement && e.ownerSVGElement.parentElement
      ? e.ownerSVGElement.parentElement.querySelector('.bglayer rect.bg') : null;
    if (!plot) return null;
    const cs = getComputedStyle(plot);
    const fill = parse(cs.fill);
    return fill ? [fill[0], fill[1], fill[2], fill[3] * (parseFloat(cs.fillOpacity) || 1)] : null;
  };
  const exempt = (e) => !!e.closest(
    'button:disabled, [aria-disabled="true"], [disabled], [aria-hidden="true"], ' +
    'script, style, noscript, title, [data-testid="stIconMaterial"]');
  const seen = new Set();
  const out = [];
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let t = walker.nextNode(); t; t = walker.nextNode()) {
    if (!t.textContent.trim()) continue;
    const e = t.parentElement;
    if (!e || seen.has(e)) continue;
    seen.add(e);
    if (exempt(e) || !shown(e)) continue;
    const opacity = opacityOf(e);
    if (opacity === 0) continue;  // not shown (a slider's ends until it is hovered)
    const cs = getComputedStyle(e);
    const svg = e instanceof SVGElement;
    const cell = !!e.closest('.heatmap-label');
    let fg = parse(svg ? cs.fill : cs.color);
    if (!fg) continue;
    const alpha = fg[3] * (svg ? (parseFloat(cs.fillOpacity) || 1) : 1) * opacity;
    let bg = backgroundOf(e);
    if (svg && bg) {
      const plot = e.closest('.cartesianlayer, .heatmaplayer') ? plotBackground(e) : null;
      if (plot && plot[3] > 0) bg = over(plot, bg);
    }
    const size = parseFloat(cs.fontSize) || 0;
    const bold = parseInt(cs.fontWeight, 10) >= 700;
    const large = size >= 24 || (bold && size >= 18.66);
    const record = {
      text: t.textContent.trim().slice(0, 60),
      where: (e.closest('[data-testid]') || e).getAttribute('data-testid') || e.tagName,
      size: size, bold: bold, large: large, need: large ? 3 : 4.5,
    };
    if (cell || !bg) { out.push({...record, unknown: cell ? 'heatmap cell' : 'background image'});
      continue; }
    const drawn = over([fg[0], fg[1], fg[2], alpha], bg);
    out.push({...record, fg: drawn.slice(0, 3).map(Math.round), bg: bg.slice(0, 3).map(Math.round),
              ratio: Math.round(ratio(drawn, bg) * 100) / 100});
  }
  return out;
}
"""
