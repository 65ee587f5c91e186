/**
 * `PegClient` over a scripted fetch: requests are built from the typed paths (path and query parameters, bodies,
 * the session token), success bodies come back as they are, and every failure is an `ApiError` with a typed code.
 * (test/client/service.test.ts runs the same client against the real service.)
 */
import { describe, expect, it } from "vitest";
import { ApiError, PegClient, SERVER_ERROR_CODES } from "@peg-oracle/client";
import { ERROR_CODES } from "../../src/http/errors.ts";
import { failure } from "./api-failure.ts";

interface Seen {
  method: string;
  url: string;
  headers: Headers;
  body: string;
}

function scripted(answer: (req: Request) => Response | Promise<Response>) {
  const seen: Seen[] = [];
  const fetch = async (req: Request): Promise<Response> => {
    seen.push({ method: req.method, url: req.url, headers: req.headers, body: await req.clone().text() });
    return answer(req);
  };
  return { seen, fetch };
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } });

describe("PegClient requests", () => {
  it("builds the URL from the path template and the query, and returns the body", async () => {
    const s = scripted(() => json(200, { ok: true, generated_at: "2026-11-21T12:00:00.000Z", count: 0, data: [] }));
    const client = new PegClient({ baseUrl: "http://oracle.test:8080/", fetch: s.fetch });
    const list = await client.get("/v1/alerts", { params: { query: { limit: 5, since: "2026-11-20T00:00:00.000Z" } } });
    expect(list.count).toBe(0);
    await client.get("/v1/assets/{symbol}/history", { params: { path: { symbol: "hyloSOL+" }, query: { bucket: "1m" } } });
    expect(s.seen.map((r) => `${r.method} ${r.url}`)).toEqual([
      "GET http://oracle.test:8080/v1/alerts?limit=5&since=2026-11-20T00%3A00%3A00.000Z",
      "GET http://oracle.test:8080/v1/assets/hyloSOL%2B/history?bucket=1m",
    ]);
    expect(s.seen[0]!.headers.get("authorization")).toBeNull();
  });

  it("sends the session token and JSON bodies", async () => {
    const s = scripted(() => json(201, { id: "w1" }));
    let token: string | null = "jwt-1";
    const client = new PegClient({ baseUrl: "http://oracle.test", fetch: s.fetch, token: () => token, headers: { "user-agent": "peg-test" } });
    await client.post("/v1/me/webhooks", { body: { url: "https://hooks.example/peg", asset: "USDC", threshold_bps: 25 } });
    token = null;
    await client.post("/v1/me/webhooks", { body: { url: "https://hooks.example/peg", asset: "USDC", threshold_bps: 25 } });
    expect(s.seen[0]!.headers.get("authorization")).toBe("Bearer jwt-1");
    expect(s.seen[0]!.headers.get("user-agent")).toBe("peg-test");
    expect(s.seen[0]!.headers.get("content-type")).toBe("application/json");
    expect(JSON.parse(s.seen[0]!.body)).toEqual({ url: "https://hooks.example/peg", asset: "USDC", threshold_bps: 25 });
    expect(s.seen[1]!.headers.get("authorization")).toBeNull();
  });

  it("reads a CSV export as text", async () => {
    const s = scripted(() => new Response("id,asset\n", { status: 200, headers: { "content-type": "text/csv" } }));
    const csv = await new PegClient({ baseUrl: "http://o", fetch: s.fetch }).get("/v1/audit.csv", { parseAs: "text" });
    expect(csv).toBe("id,asset\n");
  });
});

describe("PegClient errors", () => {
  it("knows every error code the service has (the typecheck holds the generated type to the same list)", () => {
    expect([...SERVER_ERROR_CODES].sort()).toEqual([...ERROR_CODES].sort());
  });

  it("throws an ApiError with the service's code, status, asset and request id", async () => {
    const s = scripted(() => json(404, { error: "asset_not_found", message: 'no tracked asset "NOPE"', asset: "NOPE" }, { "x-request-id": "req-9" }));
    const e = await failure(new PegClient({ baseUrl: "http://o", fetch: s.fetch }).get("/v1/assets/{symbol}", { params: { path: { symbol: "NOPE" } } }));
    expect(e).toBeInstanceOf(ApiError);
    expect(e).toMatchObject({ code: "asset_not_found", status: 404, asset: "NOPE", requestId: "req-9", retryAfterSecs: null, retryable: false });
  });

  it("carries Retry-After (seconds or an HTTP date) and says what is worth retrying", async () => {
    const client = (r: Response) => new PegClient({ baseUrl: "http://o", fetch: async () => r, retry: false }); // retries: rest-retry.test.ts
    const limited = await failure(client(json(429, { error: "rate_limited", message: "slow down" }, { "retry-after": "17" })).get("/v1/assets"));
    expect(limited).toMatchObject({ code: "rate_limited", status: 429, retryAfterSecs: 17, retryable: true });
    const at = new Date(Date.now() + 30_000).toUTCString();
    const busy = await failure(client(json(503, { error: "not_ready", message: "starting" }, { "retry-after": at })).get("/readyz"));
    expect(busy.code).toBe("not_ready");
    expect(busy.retryAfterSecs).toBeGreaterThanOrEqual(28);
    expect(busy.retryAfterSecs).toBeLessThanOrEqual(31);
    // The on-chain 404 carries extra members in the same body.
    const onchain = await failure(client(json(404, { error: "not_committed_yet", message: "waiting", commit_status: "not_committed_yet" })).get("/v1/audit/{id}/onchain", { params: { path: { id: "x" } } }));
    expect(onchain.code).toBe("not_committed_yet");
    expect(onchain.body?.["commit_status"]).toBe("not_committed_yet");
  });

  it("reports a body that is not an ApiError, or an unknown code, as unexpected_response", async () => {
    const client = (r: Response) => new PegClient({ baseUrl: "http://o", fetch: async () => r, retry: false }); // retries: rest-retry.test.ts
    const html = await failure(client(new Response("<html>Bad gateway</html>", { status: 502, headers: { "content-type": "text/html" } })).get("/v1/assets"));
    expect(html).toMatchObject({ code: "unexpected_response", status: 502, retryable: true });
    expect(html.body).toEqual({ text: "<html>Bad gateway</html>" });
    const newer = await failure(client(json(418, { error: "teapot", message: "short and stout" })).get("/v1/assets"));
    expect(newer).toMatchObject({ code: "unexpected_response", status: 418 });
    expect(newer.body?.["error"]).toBe("teapot");
    const empty = await failure(client(new Response(null, { status: 404 })).get("/v1/assets"));
    expect(empty).toMatchObject({ code: "unexpected_response", status: 404, body: null });
  });

  it("turns no answer into network_error (refused, or past the timeout)", async () => {
    const refused = await failure(new PegClient({ baseUrl: "http://127.0.0.1:1", retry: false }).get("/healthz"));
    expect(refused).toMatchObject({ code: "network_error", status: 0, retryable: true });
    expect(refused.cause).toBeDefined();
    const hang = (req: Request) => new Promise<Response>((_, reject) => req.signal.addEventListener("abort", () => reject(req.signal.reason)));
    const slow = await failure(new PegClient({ baseUrl: "http://o", fetch: hang, timeoutMs: 50, retry: false }).get("/healthz"));
    expect(slow).toMatchObject({ code: "network_error", status: 0 });
    expect(slow.message).toMatch(/no answer within 50 ms/);
  });
});
