// Cluster-wide pages, one per REST resource: /overview, /jobs/overview, /taskmanagers, /jobmanager/config.
import { getJson } from "../rest.js";
import { formatBytes, formatDuration, formatTime, h, keyValues, stateBadge, table } from "../dom.js";
import { logsSection } from "./logs.js";

const TERMINAL = new Set(["FINISHED", "CANCELED", "FAILED"]);

const stat = (label, value, field) => h("div", { class: "stat" },
  h("div", { class: "stat-value", "data-field": field }, value), h("div", { class: "stat-label" }, label));

function jobsTable(jobs, field) {
  const rows = jobs.map((j) => h("tr", { "data-job-id": j.jid },
    h("td", null, h("a", { href: `#/jobs/${j.jid}` }, j.name)),
    h("td", null, formatTime(j["start-time"])),
    h("td", null, formatDuration(j.duration)),
    h("td", null, formatTime(j["end-time"])),
    h("td", null, `${j.tasks.running ?? 0} / ${j.tasks.total ?? 0}`),
    h("td", null, stateBadge(j.state))));
  return table(["Job name", "Start time", "Duration", "End time", "Tasks running / total", "Status"], rows,
    { "data-table": field });
}

export async function overviewPage() {
  const [o, jobs] = await Promise.all([getJson("/overview"), getJson("/jobs/overview")]);
  const running = jobs.jobs.filter((j) => !TERMINAL.has(j.state));
  return h("section", { "data-page": "overview" },
    h("h1", null, "Cluster overview"),
    h("div", { class: "stats" },
      stat("Task Managers", o.taskmanagers, "taskmanagers"),
      stat("Total task slots", o["slots-total"], "slots-total"),
      stat("Available task slots", o["slots-available"], "slots-available"),
      stat("Running jobs", o["jobs-running"], "jobs-running"),
      stat("Finished jobs", o["jobs-finished"], "jobs-finished"),
      stat("Canceled jobs", o["jobs-cancelled"], "jobs-cancelled"),
      stat("Failed jobs", o["jobs-failed"], "jobs-failed")),
    h("h2", null, "Running jobs"), jobsTable(running, "running-jobs"));
}

export async function jobsPage() {
  const jobs = (await getJson("/jobs/overview")).jobs;
  const byStart = (a, b) => b["start-time"] - a["start-time"];
  return h("section", { "data-page": "jobs" },
    h("h1", null, "Jobs"),
    h("h2", null, "Running jobs"), jobsTable(jobs.filter((j) => !TERMINAL.has(j.state)).sort(byStart), "running-jobs"),
    h("h2", null, "Completed jobs"), jobsTable(jobs.filter((j) => TERMINAL.has(j.state)).sort(byStart), "completed-jobs"));
}

export async function taskManagersPage() {
  const tms = (await getJson("/taskmanagers")).taskmanagers;
  const rows = tms.map((tm) => h("tr", { "data-taskmanager-id": tm.id },
    h("td", null, h("a", { href: `#/taskmanagers/${encodeURIComponent(tm.id)}` }, tm.id)), h("td", null, tm.path), h("td", null, tm.dataPort),
    h("td", null, formatDuration(Date.now() - tm.timeSinceLastHeartbeat) + " ago"),
    h("td", null, tm.slotsNumber), h("td", null, tm.freeSlots),
    h("td", null, tm.hardware.cpuCores), h("td", null, formatBytes(tm.hardware.physicalMemory))));
  return h("section", { "data-page": "taskmanagers" }, h("h1", null, "Task Managers"),
    table(["ID", "Path", "Data port", "Last heartbeat", "Slots", "Free slots", "CPU cores", "Physical memory"], rows,
      { "data-table": "taskmanagers" }));
}

// #/jobmanager: its configuration; #/jobmanager/{log,stdout,logs[/<name>]}: its log files.
export async function jobManagerPage(view, name) {
  const links = h("nav", { class: "tabs" }, [["", "Configuration"], ["/log", "Log"], ["/stdout", "Stdout"],
    ["/logs", "Log list"]].map(([suffix, label]) => h("a", {
    href: `#/jobmanager${suffix}`, class: (suffix.slice(1) || undefined) === view ? "active" : null,
  }, label)));
  if (view) {
    return h("section", { "data-page": "jobmanager-logs" },
      h("h1", null, h("a", { href: "#/jobmanager" }, "Job Manager"), " · logs"),
      await logsSection("/jobmanager", "#/jobmanager", view, name));
  }
  const config = await getJson("/jobmanager/config");  // secrets arrive masked (Flink's isSensitive)
  const sorted = [...config].sort((a, b) => a.key.localeCompare(b.key));
  return h("section", { "data-page": "jobmanager" }, h("h1", null, "Job Manager configuration"), links,
    keyValues(sorted.map((e) => [e.key, e.value]), { "data-table": "jobmanager-config" }));
}

// One TaskManager: its entry of /taskmanagers (Strom has no /taskmanagers/:id) and /taskmanagers/:id/metrics.
export async function taskManagerPage(id, view, name) {
  const tm = (await getJson("/taskmanagers")).taskmanagers.find((t) => t.id === id);
  if (!tm) {
    return h("section", { "data-page": "taskmanager-not-found" }, h("h1", null, "Task Manager not found"),
      h("p", { class: "error" }, `No TaskManager ${id} is registered with this JobManager.`),
      h("p", null, h("a", { href: "#/taskmanagers" }, "All Task Managers")));
  }
  const hashBase = `#/taskmanagers/${encodeURIComponent(id)}`;
  if (view) {
    return h("section", { "data-page": "taskmanager-logs", "data-taskmanager-id": tm.id },
      h("h1", null, h("a", { href: hashBase }, `Task Manager ${tm.id}`), " · logs"),
      await logsSection(`/taskmanagers/${encodeURIComponent(id)}`, hashBase, view, name));
  }
  const path = `/taskmanagers/${encodeURIComponent(id)}/metrics`;
  const names = (await getJson(path)).map((m) => m.id).sort();
  const values = names.length ? await getJson(`${path}?get=${names.map(encodeURIComponent).join(",")}`) : [];
  const memory = Object.entries(tm.memoryConfiguration || {}).map(([k, v]) => [k, formatBytes(v)]);
  return h("section", { "data-page": "taskmanager", "data-taskmanager-id": tm.id },
    h("h1", null, `Task Manager ${tm.id}`),
    h("p", null, h("a", { href: `${hashBase}/log`, "data-link": "logs" }, "Logs and stdout")),
    h("div", { class: "stats" },
      stat("Slots", tm.slotsNumber, "slots"), stat("Free slots", tm.freeSlots, "free-slots"),
      stat("CPU cores", tm.hardware.cpuCores, "cpu-cores"),
      stat("Physical memory", formatBytes(tm.hardware.physicalMemory), "physical-memory")),
    keyValues([["Path", tm.path], ["Data port", tm.dataPort],
      ["Last heartbeat", formatTime(tm.timeSinceLastHeartbeat)], ["Free memory", formatBytes(tm.hardware.freeMemory)],
      ["Managed memory", formatBytes(tm.hardware.managedMemory)]]),
    h("h2", null, "Memory configuration"), keyValues(memory, { "data-table": "memory" }),
    h("h2", null, "Metrics"), keyValues(values.map((m) => [m.id, m.value]), { "data-table": "taskmanager-metrics" }));
}
