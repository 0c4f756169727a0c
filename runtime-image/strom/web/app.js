// The dashboard's shell: reads GET /config once (refresh interval, enabled actions), routes by the URL's
// hash (#/overview, #/jobs, #/jobs/<id>/<tab>[/<vertex id>], #/taskmanagers[/<id>[/log|stdout|logs[/<file>]]],
// #/jobmanager[/log|stdout|logs[/<file>]]) and re-renders the current
// page every web.refresh-interval ms without reloading. A failed REST call shows its message in the page.
import { getJson } from "./rest.js";
import { h } from "./dom.js";
import { jobManagerPage, jobsPage, overviewPage, taskManagerPage, taskManagersPage } from "./pages/cluster.js";
import { jobPage } from "./pages/job.js";

const content = document.getElementById("content");
const notice = document.getElementById("notice");
let config = null;
let timer = null;
let generation = 0; // a render started for an older route or tick never replaces a newer one

function route() {
  const parts = (location.hash.replace(/^#\/?/, "") || "overview").split("/");
  return { page: parts[0], id: parts[1], tab: parts[2], sub: parts[3] };
}

function notify(message, kind) {
  notice.textContent = message;
  notice.className = kind;
  notice.hidden = false;
}

const ctx = {
  get config() { return config; },
  notify,
  refresh: () => render(),
  navigate: (hash) => { location.hash = hash; },
};

function pageFor(r) {
  switch (r.page) {
    case "overview": return overviewPage();
    case "jobs": return r.id ? jobPage(r.id, r.tab, r.sub, ctx) : jobsPage();
    case "taskmanagers": return r.id ? taskManagerPage(decodeURIComponent(r.id), r.tab, r.sub) : taskManagersPage();
    case "jobmanager": return jobManagerPage(r.id, r.tab);
    default: return Promise.resolve(h("section", { "data-page": "not-found" },
      h("h1", null, "Page not found"), h("p", { class: "error" }, `No page ${location.hash}.`)));
  }
}

async function render() {
  clearTimeout(timer);
  if (document.hidden) return; // a background tab does not poll; visibilitychange renders on return
  const mine = ++generation;
  const r = route();
  for (const link of document.querySelectorAll("[data-nav]")) {
    link.classList.toggle("active", link.dataset.nav === r.page);
  }
  let page;
  try {
    page = await pageFor(r);
  } catch (e) {
    page = h("section", { "data-page": "error" }, h("p", { class: "error", "data-field": "error" }, e.message));
  }
  if (mine !== generation) return;
  const scroll = window.scrollY;
  content.replaceChildren(page);
  window.scrollTo(0, scroll);
  content.dataset.renderedAt = String(Date.now()); // tests wait on fresh renders, never on a guessed delay
  timer = setTimeout(render, config["refresh-interval"]);
}

async function start() {
  try {
    config = await getJson("/config");
  } catch (e) {
    content.replaceChildren(h("p", { class: "error", "data-field": "error" }, e.message));
    return;
  }
  document.getElementById("version").textContent = `Strom ${config["flink-version"]}`;
  window.addEventListener("hashchange", () => { notice.hidden = true; render(); });
  document.addEventListener("visibilitychange", () => { if (!document.hidden) render(); });
  render();
}

start();
