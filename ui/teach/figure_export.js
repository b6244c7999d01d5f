// attnviz's figure download for slides (a Streamlit components.v2 component; ui/teach/slides.py).
//
// Two buttons: the chart drawn on the page as an SVG, and as a PNG 1920 px wide, both made in
// the browser by Plotly's own toImage from the chart already drawn (the server does nothing).
// The figure is laid out again 960 px wide and the PNG drawn at twice that scale, so every font
// is twice its on-screen size: 24 px tick labels and a 30 px title on a 1920 px slide.
// The chart is found by its key: Streamlit gives its container the class "st-key-<key>".

const SLIDE_WIDTH = 960; // px of layout; the PNG is SCALE times as many pixels wide
const SCALE = 2;

function chartOf(data) {
  return document.querySelector(`.st-key-${CSS.escape(data.chart)} .js-plotly-plot`);
}

function save(root, url, name) {
  const link = document.createElement("a");
  link.href = url;
  link.download = name;
  link.style.display = "none";
  root.appendChild(link);
  link.click();
  link.remove();
}

async function render(data, format) {
  const gd = chartOf(data);
  const plotly = window.Plotly;
  if (!gd || !gd._fullLayout || !plotly || typeof plotly.toImage !== "function") {
    throw new Error("the chart is not drawn yet");
  }
  const height = Math.round(gd._fullLayout.height);
  const options = { format, width: SLIDE_WIDTH, height };
  if (format === "png") options.scale = SCALE;
  return plotly.toImage(gd, options);
}

export default function (component) {
  const { data, parentElement } = component;
  const status = parentElement.querySelector(".status");
  const buttons = parentElement.querySelectorAll("button[data-format]");
  buttons.forEach((button) => {
    button.onclick = async () => {
      const format = button.dataset.format;
      status.textContent = `Drawing the ${format.toUpperCase()}…`;
      try {
        const url = await render(data, format);
        save(parentElement, url, `${data.name}.${format}`);
        status.textContent = `Saved ${data.name}.${format}`;
      } catch (error) {
        status.textContent = `No ${format.toUpperCase()}: ${error.message}`;
      }
    };
  });
}
