// The dashboard's only way to the JobManager: Flink's REST API on the same origin.
// A failed call becomes a RestError whose message is one line a user can act on.

export class RestError extends Error {
  constructor(method, path, status, detail) {
    super(status === 0 ? `${method} ${path}: the JobManager did not answer (${detail})`
      : `${method} ${path} answered ${status}: ${detail}`);
    this.status = status;
  }
}

async function call(method, path, body) {
  let response;
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  try {
    response = await fetch(path, {
      method, headers, cache: "no-store", body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (e) {
    throw new RestError(method, path, 0, e.message);
  }
  const text = await response.text();
  let answer = null;
  try {
    answer = text ? JSON.parse(text) : null;
  } catch (e) {
    throw new RestError(method, path, response.status, `not JSON: ${text.slice(0, 120)}`);
  }
  if (!response.ok) {
    const errors = answer && Array.isArray(answer.errors) ? answer.errors.join("; ") : response.statusText;
    throw new RestError(method, path, response.status, errors);
  }
  return answer;
}

export const getJson = (path) => call("GET", path);

// A log file's text (text/plain); a refusal still arrives as Flink's JSON {"errors"}.
export async function getText(path) {
  let response;
  try {
    response = await fetch(path, { headers: { Accept: "text/plain" }, cache: "no-store" });
  } catch (e) {
    throw new RestError("GET", path, 0, e.message);
  }
  const text = await response.text();
  if (response.ok) return text;
  let detail = response.statusText;
  try {
    detail = JSON.parse(text).errors.join("; ");
  } catch (e) { /* not Flink's error body: the status text says it */ }
  throw new RestError("GET", path, response.status, detail);
}
const job = (jid) => `/jobs/${encodeURIComponent(jid)}`;
export const cancelJob = (jid) => call("PATCH", `${job(jid)}?mode=cancel`);
// Both answer {"request-id"}; the savepoint lands in state.savepoints.dir (the page names no target).
export const triggerSavepoint = (jid) => call("POST", `${job(jid)}/savepoints`, { "cancel-job": false });
export const stopWithSavepoint = (jid) => call("POST", `${job(jid)}/stop`, { drain: false });

// Poll GET /jobs/:id/savepoints/:trigger until the operation completes: {location} or {failure}.
export async function savepointResult(jid, triggerId, pollMs, deadlineMs) {
  const until = Date.now() + deadlineMs;
  for (;;) {
    const answer = await call("GET", `${job(jid)}/savepoints/${encodeURIComponent(triggerId)}`);
    if (answer.status.id === "COMPLETED") {
      const op = answer.operation || {};
      return op["failure-cause"] ? { failure: op["failure-cause"]["stack-trace"] } : { location: op.location };
    }
    if (Date.now() > until) return { failure: `still in progress after ${Math.round(deadlineMs / 1000)} s` };
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}
