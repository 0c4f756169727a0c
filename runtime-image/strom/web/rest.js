// The dashboard's only way to the JobManager: Flink's REST API on the same origin.
// A failed call becomes a RestError whose message is one line a user can act on.

export class RestError extends Error {
  constructor(method, path, status, detail) {
    super(status === 0 ? `${method} ${path}: the JobManager did not answer (${detail})`
      : `${method} ${path} answered ${status}: ${detail}`);
    this.status = status;
  }
}

async function call(method, path) {
  let response;
  try {
    response = await fetch(path, { method, headers: { Accept: "application/json" }, cache: "no-store" });
  } catch (e) {
    throw new RestError(method, path, 0, e.message);
  }
  const text = await response.text();
  let body = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch (e) {
    throw new RestError(method, path, response.status, `not JSON: ${text.slice(0, 120)}`);
  }
  if (!response.ok) {
    const errors = body && Array.isArray(body.errors) ? body.errors.join("; ") : response.statusText;
    throw new RestError(method, path, response.status, errors);
  }
  return body;
}

export const getJson = (path) => call("GET", path);
export const cancelJob = (jid) => call("PATCH", `/jobs/${encodeURIComponent(jid)}?mode=cancel`);
