// REST access for the dashboard: JSON GETs with ApiError bodies ({error, message}) turned into exceptions.

/** A non-2xx answer: `status`, `code` (the ApiError `error`) and the server's human `message`. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
  }
}

/** Seconds of a Retry-After header (delta-seconds form), or the fallback. */
export function retryAfterSecs(value, fallback = 2) {
  if (typeof value !== "string" || !/^\s*\d+\s*$/.test(value)) return fallback;
  return Math.min(60, Math.max(1, Number(value)));
}

/**
 * GET a JSON resource: resolves to { status, body, retryAfter } for 2xx answers (including 202), rejects with an
 * ApiError for the others (code and message from the ApiError body when there is one).
 */
export async function getJson(path, { fetchImpl = globalThis.fetch, signal } = {}) {
  const res = await fetchImpl(path, { headers: { accept: "application/json" }, ...(signal ? { signal } : {}) });
  let body = null;
  const text = await res.text();
  if (text !== "") {
    try {
      body = JSON.parse(text);
    } catch {
      body = null;
    }
  }
  if (res.status < 200 || res.status > 299) {
    const code = body && typeof body.error === "string" ? body.error : `http_${res.status}`;
    const message = body && typeof body.message === "string" ? body.message : `${res.status} ${res.statusText ?? ""}`.trim();
    throw new ApiError(res.status, code, message);
  }
  return { status: res.status, body, retryAfter: retryAfterSecs(res.headers.get("retry-after")) };
}

/** Text for an error shown to the operator. */
export function errorText(e) {
  if (e instanceof ApiError) return `${e.message} (${e.status} ${e.code})`;
  return e instanceof Error ? e.message : String(e);
}
