// Logs of one process, the JobManager's or a TaskManager's, from Flink's REST paths under `base`
// (/jobmanager or /taskmanagers/:id): its log file, its stdout (.out) and its log directory's files.
// The server sends at most a file's last MiB; a process without log files says which key to set.
import { getJson, getText } from "../rest.js";
import { formatBytes, formatTime, h, table } from "../dom.js";

const VIEWS = [["log", "Log"], ["stdout", "Stdout"], ["logs", "Log list"]];

function tabs(hashBase, current) {
  return h("nav", { class: "tabs" }, VIEWS.map(([name, label]) => h("a", {
    href: `${hashBase}/${name}`, class: name === current ? "active" : null, "data-tab": name,
  }, label)));
}

async function text(path) {
  try {
    const body = await getText(path);
    return h("pre", { class: "log", "data-field": "log-text" }, body || "(empty)");
  } catch (e) {
    // 404: no such file on that process (or it writes none): an answer to show, not a failed page
    if (e.status === 404) return h("p", { class: "error", "data-field": "log-missing" }, e.message);
    throw e;
  }
}

async function list(base, hashBase) {
  const answer = await getJson(`${base}/logs`);
  const rows = answer.logs.map((f) => h("tr", { "data-log-name": f.name },
    h("td", null, h("a", { href: `${hashBase}/logs/${encodeURIComponent(f.name)}` }, f.name)),
    h("td", null, formatBytes(f.size)), h("td", null, formatTime(f.mtime))));
  return table(["Name", "Size", "Last modified"], rows, { "data-table": "log-list" });
}

// `view`: "log", "stdout", "logs" (the list) or undefined (the log); `name`: a file of the list.
export async function logsSection(base, hashBase, view, name) {
  const current = VIEWS.some(([v]) => v === view) ? view : "log";
  let body;
  if (current === "logs" && name) {
    const file = decodeURIComponent(name);
    body = h("div", null, h("h3", { "data-field": "log-name" }, file),
      await text(`${base}/logs/${encodeURIComponent(file)}`));
  } else if (current === "logs") {
    body = await list(base, hashBase);
  } else {
    body = await text(`${base}/${current}`);
  }
  return h("div", { "data-panel": "logs", "data-view": current }, tabs(hashBase, current), body);
}
