// DOM building and display formats. Text always goes in through textContent: job names, exception
// messages and configuration values are data, never markup (the server's CSP forbids inline scripts too).

const SVG_NS = "http://www.w3.org/2000/svg";

function build(element, attrs, children) {
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) element.addEventListener(key.slice(2), value);
    else element.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return element;
}

export const h = (tag, attrs, ...children) => build(document.createElement(tag), attrs, children);
export const svg = (tag, attrs, ...children) => build(document.createElementNS(SVG_NS, tag), attrs, children);

export function table(headers, rows, attrs) {
  return h("table", attrs,
    h("thead", null, h("tr", null, headers.map((x) => h("th", null, x)))),
    h("tbody", null, rows.length ? rows : h("tr", null, h("td", { colspan: headers.length, class: "empty" }, "none"))));
}

export function keyValues(pairs, attrs) {
  return h("table", { class: "kv", ...attrs },
    h("tbody", null, pairs.map(([k, v]) => h("tr", null, h("th", null, k), h("td", null, v)))));
}

export const stateBadge = (state) => h("span", { class: `state state-${String(state).toLowerCase()}` }, state);

export function formatTime(ms) {
  if (ms === undefined || ms === null || ms < 0) return "–";
  return new Date(ms).toLocaleString();
}

export function formatDuration(ms) {
  if (ms === undefined || ms === null || ms < 0) return "–";
  const s = Math.floor(ms / 1000);
  if (s < 60) return ms < 1000 ? `${ms} ms` : `${s} s`;
  const parts = [[Math.floor(s / 86400), "d"], [Math.floor(s / 3600) % 24, "h"], [Math.floor(s / 60) % 60, "m"], [s % 60, "s"]];
  return parts.filter(([n], i) => n > 0 || i === 3).map(([n, u]) => `${n}${u}`).join(" ");
}

export function formatBytes(n) {
  if (n === undefined || n === null || n < 0) return "–";
  const units = ["B", "KB", "MB", "GB", "TB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i += 1; }
  return `${i === 0 ? n : n.toFixed(1)} ${units[i]}`;
}

export const formatCount = (n) => (n === undefined || n === null ? "–" : Number(n).toLocaleString("en-US"));
