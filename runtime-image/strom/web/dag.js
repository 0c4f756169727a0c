// The job graph: plan nodes (operator chains) laid out by dagre, drawn as SVG; each vertex shows its
// name, parallelism and records in/out and is coloured by what its subtasks spend their time on.
import dagre from "./vendor/dagre.esm.js";
import { formatCount, svg } from "./dom.js";

const NODE_WIDTH = 260;
const NODE_HEIGHT = 92;
// Flink's back-pressure levels on backPressuredTimeMsPerSecond / 1000 (JobVertexBackPressureHandler).
const LOW = 0.10;
const HIGH = 0.50;

// What a vertex is doing, from the maximum over its subtasks of Flink's *TimeMsPerSecond metrics
// (each 0..1000): the largest share wins, as the Flink dashboard colours a vertex. Pure.
export function vertexLoad(metrics) {
  const busy = metrics.busyTimeMsPerSecond;
  const backPressured = metrics.backPressuredTimeMsPerSecond;
  const idle = metrics.idleTimeMsPerSecond;
  if (busy === undefined && backPressured === undefined && idle === undefined) {
    return { kind: "unknown", level: "unknown", busy: 0, backPressured: 0 };
  }
  const b = (busy || 0) / 1000, p = (backPressured || 0) / 1000, i = (idle || 0) / 1000;
  const level = p > HIGH ? "high" : p > LOW ? "low" : "ok";
  const kind = p >= b && p >= i && p > 0 ? "backpressured" : b >= i && b > 0 ? "busy" : "idle";
  return { kind, level, busy: b, backPressured: p };
}

// Node positions for a plan (pure apart from dagre): {nodes: [{id, x, y}], edges: [{from, to, points}], width, height}.
export function layoutPlan(plan) {
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: "LR", nodesep: 30, ranksep: 70, marginx: 10, marginy: 10 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const node of plan.nodes) g.setNode(node.id, { width: NODE_WIDTH, height: NODE_HEIGHT });
  for (const node of plan.nodes) {
    for (const input of node.inputs || []) g.setEdge(input.id, node.id, { label: input.ship_strategy });
  }
  dagre.layout(g);
  const graph = g.graph();
  return {
    nodes: g.nodes().map((id) => ({ id, x: g.node(id).x, y: g.node(id).y })),
    edges: g.edges().map((e) => ({ from: e.v, to: e.w, label: g.edge(e).label, points: g.edge(e).points })),
    width: graph.width,
    height: graph.height,
  };
}

const shorten = (text, n) => (text.length > n ? `${text.slice(0, n - 1)}…` : text);

function fillFor(load) {
  if (load.kind === "backpressured") return `hsl(0, 0%, ${Math.round(70 - 45 * load.backPressured)}%)`;
  if (load.kind === "busy") return `hsl(0, 100%, ${Math.round(92 - 35 * load.busy)}%)`;
  if (load.kind === "idle") return "hsl(210, 70%, 90%)";
  return "#f4f4f4";
}

// The SVG of a laid-out plan; `vertices` maps id -> /jobs/:id vertex, `loads` id -> vertexLoad().
export function drawGraph(plan, layout, vertices, loads, onSelect) {
  const byId = new Map(plan.nodes.map((n) => [n.id, n]));
  const edges = layout.edges.map((e) => {
    const d = e.points.map((p, i) => `${i ? "L" : "M"}${p.x},${p.y}`).join(" ");
    const mid = e.points[Math.floor(e.points.length / 2)];
    return svg("g", { class: "edge" },
      svg("path", { d, "marker-end": "url(#arrow)" }),
      svg("text", { x: mid.x, y: mid.y - 6, "text-anchor": "middle" }, e.label || ""));
  });
  const nodes = layout.nodes.map((pos) => {
    const node = byId.get(pos.id);
    const vertex = vertices.get(pos.id) || { metrics: {} };
    const load = loads.get(pos.id) || vertexLoad({});
    const x = pos.x - NODE_WIDTH / 2, y = pos.y - NODE_HEIGHT / 2;
    const m = vertex.metrics || {};
    const name = vertex.name || node.description || node.operator || pos.id;
    const loadText = load.kind === "unknown" ? "no metrics yet"
      : `busy ${Math.round(load.busy * 100)}% · back pressure ${load.level} (${Math.round(load.backPressured * 100)}%)`;
    return svg("g", {
      class: `vertex load-${load.kind}`, "data-vertex-id": pos.id, "data-load": load.kind,
      "data-backpressure": load.level, tabindex: 0, onclick: () => onSelect(pos.id),
    },
    svg("title", null, name),
    svg("rect", { x, y, width: NODE_WIDTH, height: NODE_HEIGHT, rx: 6, fill: fillFor(load) }),
    svg("text", { x: x + 10, y: y + 20, class: "vertex-name" }, shorten(name, 34)),
    svg("text", { x: x + 10, y: y + 40, class: "vertex-parallelism" }, `Parallelism: ${node.parallelism}`),
    svg("text", { x: x + 10, y: y + 58, class: "vertex-records" },
      `Records in: ${formatCount(m["read-records"])}  out: ${formatCount(m["write-records"])}`),
    svg("text", { x: x + 10, y: y + 76, class: "vertex-load" }, loadText));
  });
  const defs = svg("defs", null, svg("marker", {
    id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 8, markerHeight: 8, orient: "auto",
  }, svg("path", { d: "M0,0 L10,5 L0,10 z" })));
  return svg("svg", {
    class: "job-graph", width: layout.width, height: layout.height, viewBox: `0 0 ${layout.width} ${layout.height}`,
  }, defs, edges, nodes);
}
