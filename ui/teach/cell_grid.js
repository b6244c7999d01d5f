// attnviz's "Explain a cell" picker (a Streamlit components.v2 component; ui/teach/explain.py).
//
// 1. A grid of one weights matrix, one focusable cell per weight: the arrow keys move between
//    cells (one Tab stop for the whole grid), Enter or Space opens the cell's derivation, and so
//    does a click.
// 2. The page's scores and weights heatmaps: a click on a cell opens that cell's derivation too.
//    Each heatmap is found by its chart key (the class "st-key-<key>" Streamlit gives its
//    container) and read through Plotly's own click event: the row and column labels of the
//    point clicked ("3: ␣the") give the token positions, so a token window needs no offsets.
// Either way the pick goes to Python as a trigger value; nothing is computed here.
// Token labels are the student's text: they are only ever set as textContent, never as HTML.

const instances = new Map(); // component key -> what persists between renders

function position(label) {
  const n = parseInt(String(label), 10);
  return Number.isFinite(n) ? n : null;
}

function shade(cell, v) {
  if (v === null) {
    cell.style.background = "#ececec";
    cell.style.color = "#4a4d59";
    return;
  }
  // Darker with the weight; every shade keeps its text at 4.5:1 or more: dark text up to an
  // alpha of 0.55 (4.8:1), white text from 0.8 (4.6:1), so the shade jumps at a weight of 0.5.
  const t = Math.max(0, Math.min(1, v));
  const alpha = t <= 0.5 ? 0.06 + 0.98 * t : 0.8 + 0.4 * (t - 0.5);
  cell.style.background = `rgba(59, 82, 139, ${alpha.toFixed(3)})`;
  cell.style.color = t <= 0.5 ? "#31333f" : "#ffffff";
}

function build(me, grid) {
  const box = me.root.querySelector(".cells");
  box.textContent = "";
  const table = document.createElement("table");
  table.setAttribute("role", "grid");
  table.setAttribute("aria-label", grid.label);
  const head = table.createTHead().insertRow();
  const corner = document.createElement("th");
  corner.textContent = "query \\ key";
  corner.className = "corner";
  head.appendChild(corner);
  grid.cols.forEach((label) => {
    const th = document.createElement("th");
    th.setAttribute("scope", "col");
    th.className = "col";
    const text = document.createElement("span");
    text.textContent = label;
    th.title = label;
    th.appendChild(text);
    head.appendChild(th);
  });
  const body = table.createTBody();
  grid.rows.forEach((rowLabel, r) => {
    const row = body.insertRow();
    const th = document.createElement("th");
    th.setAttribute("scope", "row");
    th.textContent = rowLabel;
    th.title = rowLabel;
    row.appendChild(th);
    grid.cols.forEach((colLabel, c) => {
      const v = grid.values[r][c];
      const cell = row.insertCell();
      cell.setAttribute("role", "gridcell");
      cell.tabIndex = -1;
      cell.dataset.r = String(r);
      cell.dataset.c = String(c);
      cell.textContent = v === null ? "–" : v.toFixed(2);
      const what = v === null ? "masked, weight 0" : `weight ${v.toFixed(4)}`;
      cell.setAttribute("aria-label", `query ${rowLabel}, key ${colLabel}: ${what}`);
      shade(cell, v);
    });
  });
  box.appendChild(table);
  me.table = table;
  showHint(me);
  table.addEventListener("click", (event) => {
    const cell = event.target.closest("td[role=gridcell]");
    if (cell) {
      activate(me, +cell.dataset.r, +cell.dataset.c, true);
      pickFromGrid(me, +cell.dataset.r, +cell.dataset.c);
    }
  });
  table.addEventListener("keydown", (event) => onKey(me, event));
}

// The line over the grid that says it scrolls sideways: shown only while the grid is wider than
// its box (a phone, a long text), checked again whenever the box changes size.
function showHint(me) {
  const box = me.root.querySelector(".cells");
  const hint = me.root.querySelector(".hint");
  if (!box || !hint) return;
  hint.hidden = box.scrollWidth <= box.clientWidth + 1;
  if (me.observed !== box && typeof ResizeObserver === "function") {
    if (me.observer) me.observer.disconnect();
    me.observer = new ResizeObserver(() => showHint(me));
    me.observer.observe(box);
    me.observed = box;
  }
}

function cellAt(me, r, c) {
  return me.table ? me.table.querySelector(`td[data-r="${r}"][data-c="${c}"]`) : null;
}

function activate(me, r, c, focus) {
  const grid = me.data.grid;
  r = Math.max(0, Math.min(grid.rows.length - 1, r));
  c = Math.max(0, Math.min(grid.cols.length - 1, c));
  const before = cellAt(me, me.active[0], me.active[1]);
  if (before) before.tabIndex = -1;
  me.active = [r, c];
  const cell = cellAt(me, r, c);
  if (cell) {
    cell.tabIndex = 0;
    if (focus) cell.focus();
  }
}

function onKey(me, event) {
  const [r, c] = me.active;
  const last = [me.data.grid.rows.length - 1, me.data.grid.cols.length - 1];
  const moves = {
    ArrowUp: [r - 1, c],
    ArrowDown: [r + 1, c],
    ArrowLeft: [r, c - 1],
    ArrowRight: [r, c + 1],
    Home: [r, 0],
    End: [r, last[1]],
    PageUp: [0, c],
    PageDown: [last[0], c],
  };
  if (event.key in moves) {
    event.preventDefault();
    activate(me, moves[event.key][0], moves[event.key][1], true);
  } else if (event.key === "Enter" || event.key === " ") {
    event.preventDefault();
    pickFromGrid(me, r, c);
  }
}

function pickFromGrid(me, r, c) {
  const g = me.data.grid;
  me.scroll = false; // the derivation opens right under the grid
  me.pick({ source: g.source, head: g.head, batch: g.batch, query: g.row0 + r, key: g.col0 + c });
}

function markSelected(me) {
  if (!me.table) return;
  const g = me.data.grid;
  const s = me.data.selected;
  me.table.querySelectorAll("td[aria-selected]").forEach((cell) => cell.removeAttribute("aria-selected"));
  if (s && s.source === g.source && s.head === g.head && s.batch === g.batch) {
    const cell = cellAt(me, s.query - g.row0, s.key - g.col0);
    if (cell) cell.setAttribute("aria-selected", "true");
  }
}

function onChartClick(me, chart, event) {
  const panel = me.data.panels.find((p) => p.chart === chart);
  const point = event && event.points && event.points[0];
  if (!panel || !point || !point.data || point.data.type !== "heatmap") return;
  const query = position(point.y);
  const key = position(point.x);
  let head = panel.head;
  if (head === null) {
    // a heads grid: each head's heatmap hovers "head h" first
    const found = /^head (\d+)/.exec(String(point.data.hovertemplate || ""));
    head = found ? +found[1] : 0;
  }
  if (query === null || key === null) return;
  me.scroll = true; // the derivation is below the block: bring it into view after the rerun
  me.pick({ source: panel.source, head, batch: panel.batch, query, key });
}

function hookCharts(me) {
  for (const panel of me.data.panels) {
    const el = document.querySelector(`.st-key-${CSS.escape(panel.chart)} .js-plotly-plot`);
    if (el && typeof el.on === "function" && el.__attnvizCell !== me.key) {
      el.__attnvizCell = me.key;
      el.on("plotly_click", (event) => onChartClick(me, panel.chart, event));
    }
  }
}

// A cell opened by a link or by a click on a map far above: its derivation (drawn under the
// grid in the same run) is brought to the top of the screen, and kept there while the page
// settles (charts above it take their height as Plotly draws them, which would push it down
// again), until the student scrolls, taps or presses a key, or for at most SETTLE_MS.
const SETTLE_MS = 8000;
const DERIVATION = ".st-key-explain_derivation";

function bringIntoView(host) {
  const started = Date.now();
  let stopped = false;
  const stop = () => {
    stopped = true;
  };
  const events = ["wheel", "touchstart", "keydown", "mousedown"];
  events.forEach((name) => window.addEventListener(name, stop, { once: true, capture: true }));
  const tick = () => {
    if (stopped || Date.now() - started > SETTLE_MS) {
      events.forEach((name) => window.removeEventListener(name, stop, { capture: true }));
      return;
    }
    const target = document.querySelector(DERIVATION) || host;
    const top = target.getBoundingClientRect().top;
    if (top < 0 || top > 80) target.scrollIntoView({ block: "start" });
    setTimeout(tick, 250);
  };
  tick();
}

export default function (component) {
  const { data, parentElement, setTriggerValue, key } = component;
  let me = instances.get(key);
  if (!me) {
    me = { key, signature: null, active: [0, 0], table: null, timer: null, shown: null, scroll: true };
    instances.set(key, me);
  }
  me.root = parentElement;
  me.data = data;
  me.pick = (cell) => setTriggerValue("pick", cell);
  const hadFocus = !!(me.table && me.table.contains(parentElement.activeElement || document.activeElement));
  const grid = data.grid;
  const signature = JSON.stringify(grid);
  if (signature !== me.signature) {
    me.signature = signature;
    build(me, grid);
    me.active = [0, 0];
    const s = data.selected;
    if (s && s.source === grid.source && s.head === grid.head && s.batch === grid.batch) {
      me.active = [s.query - grid.row0, s.key - grid.col0];
    }
  }
  activate(me, me.active[0], me.active[1], hadFocus);
  markSelected(me);
  const shown = data.selected ? JSON.stringify(data.selected) : null;
  if (shown && shown !== me.shown && me.scroll) {
    bringIntoView(parentElement.host || parentElement);
  }
  me.shown = shown;
  if (me.timer) clearInterval(me.timer);
  hookCharts(me);
  me.timer = setInterval(() => hookCharts(me), 700);
  return () => {
    clearInterval(me.timer);
    me.timer = null;
  };
}
