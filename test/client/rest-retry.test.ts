/**
 * `PegClient` retries against a real HTTP server (node:http on a random port, answering from a script): what is
 * retried (no answer, 429, 502, 503, 504; idempotent methods, a POST only when marked), how long it waits
 * (`Retry-After` in seconds or as an HTTP date, capped; jittered backoff otherwise), and how it stops (retries
 * exhausted, switched off, the caller's signal aborting a wait). The waits run on injected timers that record the
 * delay and fire at once, so no test sleeps.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { beforeEach, describe, expect, it } from "vitest";
import { PegClient, type PegClientOptions, type RetryInfo, type StreamTimers } from "@peg-oracle/client";
import { httpServerForSuite } from "../support/http-server.ts";
import { failure } from "./api-failure.ts";

type Answer = (req: IncomingMessage, res: ServerResponse) => void;

/** What the server answers, one entry per request in order (the last one repeats). */
let script: Answer[] = [];
/** Every request the server saw: `METHOD path`. */
let seen: string[] = [];

const ok: Answer = (_req, res) => void res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ status: "ok" }));
const error = (status: number, code: string, headers: Record<string, string> = {}): Answer => (_req, res) =>
  void res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify({ error: code, message: code }));
/** No answer: the connection is reset (the client sees a network error). */
const reset: Answer = (req) => void req.socket.destroy();

const api = httpServerForSuite((req, res) => {
  seen.push(`${req.method} ${req.url}`);
  const answer = script[Math.min(seen.length - 1, script.length - 1)]!;
  req.resume();
  req.on("end", () => answer(req, res));
});

beforeEach(() => {
  script = [];
  seen = [];
});

/** Timers that record each wait and fire it on the next turn. */
function instantTimers(): { waits: number[]; timers: StreamTimers } {
  const waits: number[] = [];
  return {
    waits,
    timers: {
      setTimeout: (fn, ms) => {
        waits.push(ms);
        return setTimeout(fn, 0);
      },
      clearTimeout: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
    },
  };
}

function client(options: Partial<PegClientOptions> = {}) {
  const t = instantTimers();
  const retries: RetryInfo[] = [];
  const c = new PegClient({
    baseUrl: api.base,
    timers: t.timers,
    random: () => 1, // the whole backoff ceiling: 500, 1000, 2000 ms
    ...options,
    retry: options.retry === false ? false : { onRetry: (r) => retries.push(r), ...options.retry },
  });
  return { client: c, waits: t.waits, retries };
}

describe("PegClient retries", () => {
  it("retries a GET answered 503 and returns the 200 that follows", async () => {
    script = [error(503, "not_ready"), ok];
    const t = client();
    expect(await t.client.get("/healthz")).toEqual({ status: "ok" });
    expect(seen).toEqual(["GET /healthz", "GET /healthz"]);
    expect(t.waits).toEqual([500]);
    expect(t.retries).toMatchObject([{ reason: "status", status: 503, attempt: 1, delayMs: 500, retryAfterMs: null, method: "GET", url: `${api.base}/healthz` }]);
  });

  it("retries 502 and 504 with a doubling, jittered backoff, and gives up after `retries` with the last answer", async () => {
    script = [error(502, "internal"), error(504, "internal"), ok];
    const t = client({ random: () => 0 }); // the lower half's floor: 250, 500 ms
    expect(await t.client.get("/healthz")).toEqual({ status: "ok" });
    expect(t.waits).toEqual([250, 500]);

    seen = [];
    script = [error(503, "not_ready")];
    const always = client();
    const e = await failure(always.client.get("/healthz"));
    expect(e).toMatchObject({ code: "not_ready", status: 503 });
    expect(seen).toHaveLength(4); // the first attempt and 3 retries (the default)
    expect(always.waits).toEqual([500, 1_000, 2_000]);
  });

  it("waits out a 429's Retry-After, in seconds or as an HTTP date, and fails at once past maxRetryAfterMs", async () => {
    script = [error(429, "rate_limited", { "retry-after": "7" }), ok];
    const secs = client();
    await secs.client.get("/v1/assets");
    expect(secs.waits).toEqual([7_000]);
    expect(secs.retries[0]).toMatchObject({ reason: "status", status: 429, retryAfterMs: 7_000 });

    seen = [];
    const now = Date.UTC(2026, 10, 26, 12, 0, 0);
    script = [error(429, "rate_limited", { "retry-after": new Date(now + 12_000).toUTCString() }), ok];
    const date = client({ now: () => now });
    await date.client.get("/v1/assets");
    expect(date.waits).toEqual([12_000]);

    // Retry-After 0 still backs off: a server that says "now" is not hammered.
    seen = [];
    script = [error(429, "rate_limited", { "retry-after": "0" }), ok];
    const zero = client();
    await zero.client.get("/v1/assets");
    expect(zero.waits).toEqual([500]);

    seen = [];
    script = [error(429, "rate_limited", { "retry-after": "120" }), ok];
    const long = client();
    const e = await failure(long.client.get("/v1/assets"));
    expect(e).toMatchObject({ code: "rate_limited", status: 429, retryAfterSecs: 120 });
    expect(seen).toHaveLength(1);
    expect(long.waits).toEqual([]);
    // The cap is an option.
    seen = [];
    const patient = client({ retry: { maxRetryAfterMs: 180_000 } });
    await patient.client.get("/v1/assets");
    expect(patient.waits).toEqual([120_000]);
  });

  it("retries after no answer (a reset connection)", async () => {
    script = [reset, ok];
    const t = client();
    expect(await t.client.get("/healthz")).toEqual({ status: "ok" });
    expect(seen).toEqual(["GET /healthz", "GET /healthz"]);
    expect(t.retries).toMatchObject([{ reason: "network_error", attempt: 1 }]);

    seen = [];
    script = [reset];
    const e = await failure(client({ retry: { retries: 2 } }).client.get("/healthz"));
    expect(e).toMatchObject({ code: "network_error", status: 0 });
    expect(seen).toHaveLength(3);
  });

  it("does not retry a POST, unless the call is marked idempotent (its body is sent again)", async () => {
    script = [error(503, "not_ready"), ok];
    const t = client();
    const e = await failure(t.client.post("/v1/auth/logout"));
    expect(e).toMatchObject({ code: "not_ready", status: 503 });
    expect(seen).toEqual(["POST /v1/auth/logout"]);
    seen = [];
    const reset2 = client();
    script = [reset, ok];
    await failure(reset2.client.post("/v1/auth/logout"));
    expect(seen).toHaveLength(1);

    seen = [];
    const bodies: string[] = [];
    script = [reset, ok];
    const marked = new PegClient({
      baseUrl: api.base,
      timers: instantTimers().timers,
      fetch: async (req) => {
        bodies.push(await req.clone().text());
        return fetch(req);
      },
    });
    await marked.post("/v1/me/webhooks", { body: { url: "https://hooks.example/peg", asset: "USDC", threshold_bps: 25 }, idempotent: true });
    expect(seen).toEqual(["POST /v1/me/webhooks", "POST /v1/me/webhooks"]);
    expect(bodies).toHaveLength(2);
    expect(bodies[1]).toBe(bodies[0]);
    expect(JSON.parse(bodies[1]!)).toMatchObject({ asset: "USDC" });
  });

  it("retries DELETE (idempotent by method) and the raw openapi-fetch client's GET", async () => {
    script = [error(503, "not_ready"), (_req, res) => void res.writeHead(204).end()];
    const t = client({ token: "jwt" });
    expect(await t.client.delete("/v1/me/subs/{asset}", { params: { path: { asset: "USDC" } } })).toBeUndefined();
    expect(seen).toEqual(["DELETE /v1/me/subs/USDC", "DELETE /v1/me/subs/USDC"]);
    seen = [];
    script = [error(502, "internal"), ok];
    const r = await t.client.raw.GET("/healthz");
    expect(r.response.status).toBe(200);
    expect(seen).toHaveLength(2);
  });

  it("can be switched off for the client or for one call", async () => {
    script = [error(503, "not_ready"), ok];
    const off = client({ retry: false });
    expect((await failure(off.client.get("/healthz"))).status).toBe(503);
    expect(seen).toHaveLength(1);
    seen = [];
    const t = client();
    expect((await failure(t.client.get("/healthz", { retry: false }))).status).toBe(503);
    expect(seen).toHaveLength(1);
    seen = [];
    expect(await t.client.get("/healthz", { retry: { retries: 1 } })).toEqual({ status: "ok" });
    expect(seen).toHaveLength(2);
    seen = [];
    script = [error(503, "not_ready")];
    await failure(new PegClient({ baseUrl: api.base, retry: { retries: 0 } }).get("/healthz"));
    expect(seen).toHaveLength(1);
  });

  it("stops when the caller's signal aborts during the wait before a retry: no further request, the timer cleared", async () => {
    script = [error(503, "not_ready"), ok];
    const ac = new AbortController();
    const armed = new Set<number>();
    let next = 0;
    // Timers that never fire by themselves: the wait only ends by the abort.
    const timers: StreamTimers = {
      setTimeout: () => {
        const h = ++next;
        armed.add(h);
        queueMicrotask(() => ac.abort());
        return h;
      },
      clearTimeout: (h) => void armed.delete(h as number),
    };
    const c = new PegClient({ baseUrl: api.base, timers });
    const e = await failure(c.get("/healthz", { signal: ac.signal }));
    expect(e).toMatchObject({ code: "network_error", status: 0 });
    expect(e.message).toMatch(/aborted by the caller's signal/);
    expect((e.cause as Error).name).toBe("AbortError");
    expect(seen).toEqual(["GET /healthz"]);
    expect(next).toBe(1);
    expect(armed.size).toBe(0);

    // Aborted before the call: nothing is sent.
    seen = [];
    const gone = await failure(c.get("/healthz", { signal: AbortSignal.abort() }));
    expect(gone.code).toBe("network_error");
    expect(seen).toEqual([]);
  });

  it("does not retry a client error (4xx other than 429)", async () => {
    script = [error(404, "asset_not_found"), ok];
    const t = client();
    expect((await failure(t.client.get("/v1/assets/{symbol}", { params: { path: { symbol: "NOPE" } } }))).code).toBe("asset_not_found");
    expect(seen).toHaveLength(1);
  });
});
