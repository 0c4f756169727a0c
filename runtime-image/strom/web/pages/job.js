// One job: header with state and actions, then tabs for its REST resources — the job graph
// (/jobs/:id + per-vertex /subtasks/metrics), /checkpoints, /exceptions and /config.
import { cancelJob, getJson, savepointResult, stopWithSavepoint, triggerSavepoint } from "../rest.js";
import { drawGraph, layoutPlan, vertexLoad } from "../dag.js";
import { history, lineChart, record } from "../charts.js";
import { formatBytes, formatCount, formatDuration, formatTime, h, keyValues, stateBadge, table } from "../dom.js";

const TERMINAL = new Set(["FINISHED", "CANCELED", "FAILED"]);
const TABS = [["overview", "Overview"], ["checkpoints", "Checkpoints"], ["exceptions", "Exceptions"],
  ["configuration", "Configuration"]];
const LOAD_METRICS = "busyTimeMsPerSecond,backPressuredTimeMsPerSecond,idleTimeMsPerSecond";
// charted per vertex: rates summed over its subtasks, time shares at their maximum (the worst subtask)
const CHARTS = [
  ["numRecordsInPerSecond", "sum", "Records in per second", "/s"],
  ["numRecordsOutPerSecond", "sum", "Records out per second", "/s"],
  ["busyTimeMsPerSecond", "max", "Busy time (max subtask)", "ms/s"],
  ["backPressuredTimeMsPerSecond", "max", "Back-pressured time (max subtask)", "ms/s"],
];
const METRICS = `${LOAD_METRICS},numRecordsInPerSecond,numRecordsOutPerSecond`;
const layouts = new Map(); // plan signature -> layout: positions stay put between refreshes

function layoutFor(plan) {
  const key = JSON.stringify(plan.nodes.map((n) => [n.id, (n.inputs || []).map((i) => i.id)]));
  if (!layouts.has(key)) layouts.set(key, layoutPlan(plan));
  return layouts.get(key);
}

// The job's own charts, from the same figures: what its sources emit (records out per second summed over
// the vertices without inputs) and its worst vertex's busy and back-pressured time.
const JOB_CHARTS = [
  ["throughput", "Throughput (records out of the sources per second)", "/s"],
  ["busy", "Busy time (busiest vertex, max subtask)", "ms/s"],
  ["backpressured", "Back-pressured time (worst vertex, max subtask)", "ms/s"],
];

function recordJob(jid, plan, figures, now) {
  const sources = new Set(plan.nodes.filter((n) => !(n.inputs || []).length).map((n) => n.id));
  const of = (vid, metric, agg) => {
    const entry = figures.get(vid).find((m) => m.id === metric);
    return entry === undefined ? undefined : Number(entry[agg]);
  };
  const known = (values) => values.filter((x) => x !== undefined && !Number.isNaN(x));
  const out = known([...sources].filter((vid) => figures.has(vid))
    .map((vid) => of(vid, "numRecordsOutPerSecond", "sum")));
  const busy = known([...figures.keys()].map((vid) => of(vid, "busyTimeMsPerSecond", "max")));
  const pressed = known([...figures.keys()].map((vid) => of(vid, "backPressuredTimeMsPerSecond", "max")));
  if (out.length) record(`${jid}/job/throughput`, now, out.reduce((a, b) => a + b, 0));
  if (busy.length) record(`${jid}/job/busy`, now, Math.max(...busy));
  if (pressed.length) record(`${jid}/job/backpressured`, now, Math.max(...pressed));
}

const jobCharts = (jid) => h("div", { class: "charts", "data-panel": "job-charts" },
  JOB_CHARTS.map(([name, title, unit]) =>
    lineChart(title, history(`${jid}/job/${name}`), unit, { "data-chart": `job-${name}` })));

// Each vertex's load (for the colours); its figures are recorded for the charts at `now` (when seen).
async function vertexLoads(jid, plan, vertices, now) {
  const answers = new Map(await Promise.all(vertices.map(async (v) => {
    const path = `/jobs/${jid}/vertices/${v.id}/subtasks/metrics?get=${METRICS}&agg=max,sum`;
    return [v.id, await getJson(path)];
  })));
  recordJob(jid, plan, answers, now);
  const entries = vertices.map((v) => {
    const answer = answers.get(v.id);
    const max = Object.fromEntries(answer.map((m) => [m.id, Number(m.max)]));
    for (const [metric, agg] of CHARTS) {
      const entry = answer.find((m) => m.id === metric);
      if (entry) record(`${jid}/${v.id}/${metric}`, now, Number(entry[agg]));
    }
    return [v.id, vertexLoad(max)];
  });
  return new Map(entries);
}

// Flink's "no watermark yet": Long.MIN_VALUE, which JSON numbers cannot hold exactly (hence a string compare)
const NO_WATERMARK = "-9223372036854775808";
const WATERMARK_LAG = "watermarkLag";

// /watermarks: each subtask's input watermark; the vertex's is the lowest (what its timers wait for).
// Its lag behind the wall clock is charted; a vertex without watermarks charts nothing.
function lowWatermark(watermarks) {
  const values = watermarks.filter((w) => w.value !== NO_WATERMARK).map((w) => Number(w.value));
  return values.length && values.length === watermarks.length ? Math.min(...values) : undefined;
}

const charts = (jid, vid) => h("div", { class: "charts" },
  CHARTS.map(([metric, , title, unit]) =>
    lineChart(title, history(`${jid}/${vid}/${metric}`), unit, { "data-chart": metric })),
  lineChart("Low watermark lag behind now", history(`${jid}/${vid}/${WATERMARK_LAG}`), "s",
    { "data-chart": WATERMARK_LAG }));

function watermarkTable(watermarks) {
  const rows = watermarks.map((w) => {
    const subtask = w.id.split(".")[0];
    const shown = w.value === NO_WATERMARK ? "No watermark" : formatTime(Number(w.value));
    return h("tr", { "data-watermark-subtask": subtask },
      h("td", null, subtask), h("td", { "data-value": w.value }, shown));
  });
  return table(["Subtask", "Input watermark"], rows, { "data-table": "watermarks" });
}

// One vertex's subtasks (/jobs/:id/vertices/:vid) with their back-pressure level (/backpressure).
async function vertexPanel(jid, vid) {
  const [vertex, pressure, watermarks] = await Promise.all([
    getJson(`/jobs/${jid}/vertices/${encodeURIComponent(vid)}`),
    getJson(`/jobs/${jid}/vertices/${encodeURIComponent(vid)}/backpressure`),
    getJson(`/jobs/${jid}/vertices/${encodeURIComponent(vid)}/watermarks`),
  ]);
  const now = Date.now();
  const low = lowWatermark(watermarks);
  if (low !== undefined) record(`${jid}/${vertex.id}/${WATERMARK_LAG}`, now, Math.max(0, (now - low) / 1000));
  const levels = new Map((pressure.subtasks || []).map((s) => [s.subtask, s["backpressure-level"]]));
  const rows = vertex.subtasks.map((s) => h("tr", { "data-subtask": s.subtask },
    h("td", null, s.subtask), h("td", null, stateBadge(s.status)), h("td", null, s.attempt),
    h("td", null, s.endpoint), h("td", null, s["taskmanager-id"]),
    h("td", null, formatCount(s.metrics["read-records"])), h("td", null, formatCount(s.metrics["write-records"])),
    h("td", null, formatDuration(s.duration)), h("td", null, levels.get(s.subtask) || "unknown")));
  return h("div", { "data-panel": "vertex", "data-vertex-id": vertex.id },
    h("h2", null, `Metrics of ${vertex.name}`, h("span", { class: "muted" }, " (since this page opened)")),
    charts(jid, vertex.id),
    h("h2", null, "Watermarks", h("span", { class: "muted", "data-field": "low-watermark" },
      low === undefined ? " (no watermark yet)" : ` (lowest ${formatTime(low)})`)),
    watermarkTable(watermarks),
    h("h2", null, `Subtasks of ${vertex.name}`),
    table(["Subtask", "Status", "Attempt", "Endpoint", "TaskManager", "Records in", "Records out", "Duration",
      "Back pressure"], rows, { "data-table": "subtasks" }));
}

async function graphTab(job, vertexId, ctx) {
  const vertices = new Map(job.vertices.map((v) => [v.id, v]));
  const loads = await vertexLoads(job.jid, job.plan, job.vertices, Date.now());
  const panel = vertices.has(vertexId) ? await vertexPanel(job.jid, vertexId) : null;
  const rows = job.vertices.map((v) => h("tr", { "data-vertex-id": v.id, class: v.id === vertexId ? "selected" : null },
    h("td", null, h("a", { href: `#/jobs/${job.jid}/overview/${v.id}` }, v.name)), h("td", null, v.parallelism), h("td", null, stateBadge(v.status)),
    h("td", null, formatCount(v.metrics["read-records"])), h("td", null, formatCount(v.metrics["write-records"])),
    h("td", null, formatBytes(v.metrics["read-bytes"])), h("td", null, formatBytes(v.metrics["write-bytes"])),
    h("td", null, (loads.get(v.id) || {}).level || "unknown")));
  return h("div", null,
    h("div", { class: "graph-wrap" }, drawGraph(job.plan, layoutFor(job.plan), vertices, loads,
      (id) => ctx.navigate(`#/jobs/${job.jid}/overview/${id}`))),
    h("p", { class: "legend" }, h("span", { class: "swatch load-busy" }), "busy ",
      h("span", { class: "swatch load-backpressured" }), "back-pressured ",
      h("span", { class: "swatch load-idle" }), "idle"),
    h("h2", null, "Job metrics", h("span", { class: "muted" }, " (since this page opened)")),
    jobCharts(job.jid),
    table(["Name", "Parallelism", "Status", "Records in", "Records out", "Bytes in", "Bytes out", "Back pressure"],
      rows, { "data-table": "vertices" }),
    panel);
}

// /checkpoints/config answers 404 when the job takes no periodic checkpoints: that is a fact, not an error.
async function checkpointConfig(jid) {
  try {
    return await getJson(`/jobs/${jid}/checkpoints/config`);
  } catch (e) {
    if (e.status === 404) return null;
    throw e;
  }
}

function configPanel(config) {
  if (!config) return h("p", { class: "empty", "data-field": "checkpoint-config" }, "Periodic checkpoints are off.");
  const x = config.externalization;
  return keyValues([
    ["Checkpointing mode", config.mode === "exactly_once" ? "Exactly once" : "At least once"],
    ["Interval", formatDuration(config.interval)], ["Timeout", formatDuration(config.timeout)],
    ["Minimum pause between checkpoints", formatDuration(config.min_pause)],
    ["Maximum concurrent checkpoints", config.max_concurrent],
    ["Unaligned checkpoints", config.unaligned_checkpoints ? "Enabled" : "Disabled"],
    ["Persist checkpoints externally", !x.enabled ? "Disabled"
      : x.delete_on_cancellation ? "Enabled (delete on cancellation)" : "Enabled (retain on cancellation)"],
    ["Tolerable failed checkpoints", config.tolerable_failed_checkpoints],
    ["State backend", config.state_backend], ["Checkpoint storage", config.checkpoint_storage],
  ], { "data-table": "checkpoint-config" });
}

async function checkpointsTab(jid) {
  const [c, config] = await Promise.all([getJson(`/jobs/${jid}/checkpoints`), checkpointConfig(jid)]);
  const latest = c.latest.completed;
  const counts = [["Triggered", c.counts.total, "total"], ["In progress", c.counts.in_progress, "in-progress"],
    ["Completed", c.counts.completed, "completed"], ["Failed", c.counts.failed, "failed"],
    ["Restored", c.counts.restored, "restored"]];
  const history = [...c.history].sort((a, b) => b.id - a.id).map((x) => h("tr", { "data-checkpoint-id": x.id },
    h("td", null, x.id), h("td", null, stateBadge(x.status)), h("td", null, formatTime(x.trigger_timestamp)),
    h("td", null, formatDuration(x.end_to_end_duration)), h("td", null, formatBytes(x.state_size)),
    h("td", null, `${x.num_acknowledged_subtasks} / ${x.num_subtasks}`), h("td", null, x.checkpoint_type)));
  return h("div", null,
    h("h2", null, "Counts"),
    h("div", { class: "stats" }, counts.map(([label, value, field]) => h("div", { class: "stat" },
      h("div", { class: "stat-value", "data-field": `checkpoints-${field}` }, value),
      h("div", { class: "stat-label" }, label)))),
    h("h2", null, "Latest completed checkpoint"),
    latest ? keyValues([["ID", latest.id], ["Completed", formatTime(latest.latest_ack_timestamp)],
      ["End to end duration", formatDuration(latest.end_to_end_duration)], ["State size", formatBytes(latest.state_size)],
      ["Path", latest.external_path || "–"]]) : h("p", { class: "empty" }, "No completed checkpoint yet."),
    h("h2", null, "Latest restore"),
    c.latest.restored ? keyValues([["Restored from", c.latest.restored.external_path || c.latest.restored.id],
      ["Checkpoint ID", c.latest.restored.id], ["Type", c.latest.restored.is_savepoint ? "Savepoint" : "Checkpoint"],
      ["Restored at", formatTime(c.latest.restored.restore_timestamp)]], { "data-table": "latest-restore" })
      : h("p", { class: "empty", "data-field": "latest-restore" }, "The job did not restore from a checkpoint."),
    h("h2", null, "History"),
    table(["ID", "Status", "Triggered", "End to end duration", "State size", "Acknowledged", "Type"], history,
      { "data-table": "checkpoint-history" }),
    h("h2", null, "Configuration"),
    configPanel(config));
}

async function exceptionsTab(jid) {
  const x = await getJson(`/jobs/${jid}/exceptions`);
  const entries = x.exceptionHistory.entries;
  const root = entries[0];
  return h("div", null,
    h("h2", null, "Root exception"),
    x["root-exception"] ? h("div", null,
      h("p", null, formatTime(x.timestamp), root && root.taskName ? ` · ${root.taskName}` : "",
        root && root.location ? ` · ${root.location}` : ""),
      h("pre", { class: "stacktrace", "data-field": "root-exception" }, x["root-exception"]))
      : h("p", { class: "empty", "data-field": "root-exception" }, "No exception."),
    h("h2", null, "Exception history"),
    table(["Time", "Exception", "Task", "Location"], entries.map((e) => h("tr", null,
      h("td", null, formatTime(e.timestamp)),
      h("td", null, h("details", null, h("summary", null, e.exceptionName), h("pre", { class: "stacktrace" }, e.stacktrace))),
      h("td", null, e.taskName || "(global failure)"), h("td", null, e.location || "–"))),
    { "data-table": "exception-history" }),
    x.exceptionHistory.truncated ? h("p", { class: "empty" }, "Older exceptions were dropped (web.exception-history-size).") : null);
}

async function configurationTab(jid) {
  const [c, effective] = await Promise.all([getJson(`/jobs/${jid}/config`), getJson(`/jobs/${jid}/jobmanager/config`)]);
  const e = c["execution-config"];
  return h("div", null,
    h("h2", null, "Execution configuration"),
    keyValues([["Execution mode", e["execution-mode"]], ["Restart strategy", e["restart-strategy"]],
      ["Job parallelism", e["job-parallelism"]], ["Object reuse", String(e["object-reuse-mode"])]],
    { "data-table": "execution-config" }),
    h("h2", null, "Effective configuration (secrets masked)"),
    keyValues([...effective].sort((a, b) => a.key.localeCompare(b.key)).map((x) => [x.key, x.value]),
      { "data-table": "job-config" }));
}

const SAVEPOINT_DEADLINE_MS = 10 * 60 * 1000;

// An action button: confirmation first, then the REST call; its outcome goes to the notice line.
function actionButton(name, label, question, run, ctx, cls) {
  return h("button", {
    class: cls, "data-action": name,
    onclick: async () => {
      if (!window.confirm(question)) return;
      try {
        ctx.notify(await run(), "info");
      } catch (e) {
        ctx.notify(e.message, "error");
      }
      ctx.refresh();
    },
  }, label);
}

async function savepointOutcome(job, answer, what, ctx) {
  ctx.notify(`${what} of ${job.name} in progress…`, "info");
  const result = await savepointResult(job.jid, answer["request-id"], 500, SAVEPOINT_DEADLINE_MS);
  if (result.failure) throw new Error(`${what} of ${job.name} failed: ${result.failure.split("\n")[0]}`);
  return `${what} of ${job.name} completed: ${result.location}`;
}

// Job actions are job control: all of them follow web.cancel.enable (Flink's dashboard offers only cancel;
// the savepoint actions are Strom's, and a read-only dashboard should not write savepoints either).
function actions(job, ctx) {
  if (!ctx.config.features["web-cancel"] || TERMINAL.has(job.state)) return null;
  const target = `"${job.name}" (${job.jid})`;
  return h("div", { class: "actions" },
    actionButton("savepoint", "Trigger savepoint", `Trigger a savepoint of job ${target}?`,
      async () => savepointOutcome(job, await triggerSavepoint(job.jid), "Savepoint", ctx), ctx, "plain"),
    actionButton("stop", "Stop with savepoint", `Stop job ${target} with a savepoint?`,
      async () => savepointOutcome(job, await stopWithSavepoint(job.jid), "Stop with savepoint", ctx), ctx, "danger"),
    actionButton("cancel", "Cancel job", `Cancel job ${target}?`,
      async () => { await cancelJob(job.jid); return `Cancellation of ${job.name} requested.`; }, ctx, "danger"));
}

export async function jobPage(jid, tab, vertexId, ctx) {
  let job;
  try {
    job = await getJson(`/jobs/${encodeURIComponent(jid)}`);
  } catch (e) {
    if (e.status === 404 || e.status === 400) {
      return h("section", { "data-page": "job-not-found" }, h("h1", null, "Job not found"),
        h("p", { class: "error" }, `No job ${jid} on this JobManager (${e.message}).`),
        h("p", null, h("a", { href: "#/jobs" }, "All jobs")));
    }
    throw e;
  }
  const current = TABS.some(([name]) => name === tab) ? tab : "overview";
  const body = current === "checkpoints" ? await checkpointsTab(job.jid)
    : current === "exceptions" ? await exceptionsTab(job.jid)
      : current === "configuration" ? await configurationTab(job.jid) : await graphTab(job, vertexId, ctx);
  return h("section", { "data-page": "job", "data-job-id": job.jid },
    h("div", { class: "job-header" },
      h("h1", { "data-field": "job-name" }, job.name),
      h("span", { "data-field": "job-state" }, stateBadge(job.state)),
      actions(job, ctx)),
    keyValues([["Job ID", job.jid], ["Start time", formatTime(job["start-time"])],
      ["Duration", formatDuration(job.duration)], ["End time", formatTime(job["end-time"])]], { class: "kv compact" }),
    h("nav", { class: "tabs" }, TABS.map(([name, label]) => h("a", {
      href: `#/jobs/${job.jid}/${name}`, class: name === current ? "active" : null, "data-tab": name,
    }, label))),
    h("div", { "data-tab-body": current }, body));
}
