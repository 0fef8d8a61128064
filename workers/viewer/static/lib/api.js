// REST calls: the viewer's own origin forwards /agentmemory/* to the REST port with the
// secret, so the page sends none.

export class ApiError extends Error {
  constructor(status, body) {
    const e = (body && body.error) || {};
    const msg = typeof e === "string" ? e : `${e.code || status}: ${e.message || "request failed"}` +
      (e.field ? ` (field ${e.field})` : "");
    super(msg);
    this.status = status;
    this.code = e.code || String(status);
    this.field = e.field;
  }
}

export async function api(path, opts = {}) {
  const init = { headers: { accept: "application/json" }, ...opts };
  if (opts.json !== undefined) {
    init.method = init.method || "POST";
    init.body = JSON.stringify(opts.json);
    init.headers = { ...init.headers, "content-type": "application/json" };
    delete init.json;
  }
  const resp = await fetch(`/agentmemory/${path}`, init);
  const body = await resp.json().catch(() => null);
  if (!resp.ok) throw new ApiError(resp.status, body);
  return body;
}

export const get = (path) => api(path);
export const post = (path, json) => api(path, { json });

export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") q.set(k, v);
  const s = q.toString();
  return s ? `?${s}` : "";
}
