// Metric history of the vertices, kept in the page since it opened (as Flink's dashboard keeps its
// charts: the REST API gives current values only), and drawn as small SVG line charts.
import { h, svg } from "./dom.js";

const MAX_POINTS = 120; // at the default 3 s refresh: the last 6 minutes
const histories = new Map(); // "jid/vid/metric" -> [{t, value}]

// Remember one sample (pure apart from the map above); a sample no newer than the last is dropped.
export function record(key, t, value) {
  if (value === undefined || Number.isNaN(value)) return;
  const points = histories.get(key) || [];
  if (points.length && points[points.length - 1].t >= t) return;
  points.push({ t, value });
  if (points.length > MAX_POINTS) points.shift();
  histories.set(key, points);
}

export const history = (key) => histories.get(key) || [];

const WIDTH = 360;
const HEIGHT = 80;

export function lineChart(title, points, unit, attrs) {
  const last = points.length ? points[points.length - 1].value : undefined;
  const top = Math.max(1, ...points.map((p) => p.value));
  const t0 = points.length ? points[0].t : 0;
  const span = Math.max(1, (points.length ? points[points.length - 1].t : 0) - t0);
  const coords = points.map((p) => `${((p.t - t0) / span) * WIDTH},${HEIGHT - (p.value / top) * (HEIGHT - 4)}`);
  return h("figure", { class: "chart", "data-points": points.length, "data-last": last, ...attrs },
    h("figcaption", null, `${title}: ${last === undefined ? "–" : `${Math.round(last * 10) / 10} ${unit}`}`),
    svg("svg", { width: WIDTH, height: HEIGHT, viewBox: `0 0 ${WIDTH} ${HEIGHT}` },
      svg("polyline", { points: coords.join(" "), class: "chart-line" })),
    h("div", { class: "chart-scale" }, `max ${Math.round(top * 10) / 10} ${unit} · ${points.length} samples`));
}
