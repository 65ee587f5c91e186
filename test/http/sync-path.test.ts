/**
 * The hot path answers cached bodies synchronously (no promise), and the synchronous answer is the same as the
 * asynchronous one; once the cache expires the pipeline goes back to the store.
 */
import { describe, expect, it } from "vitest";
import { createPipeline, type Handled, type HandledResult } from "../../src/http/pipeline.ts";
import { Router } from "../../src/http/router.ts";
import { publicRoutes } from "../../src/http/routes/index.ts";
import { withReadCaches } from "../../src/http/server.ts";
import { fakeReadModel } from "./fixtures.ts";

function setup() {
  const rm = fakeReadModel();
  let loads = 0;
  const counted = { ...rm, snapshots: () => (loads++, rm.snapshots()) };
  const cachedRm = withReadCaches(counted);
  const handle = createPipeline({ router: new Router(publicRoutes(cachedRm)), clock: rm.clock, ratePerMinute: 1e9, corsOrigins: [] });
  const get = (path: string, headers: Record<string, string> = {}): Handled => handle({ method: "GET", path, query: new URLSearchParams(), headers, ip: "10.0.0.1", body: null });
  return { rm, get, loads: () => loads };
}

const body = (r: HandledResult) => (r.text === undefined ? JSON.stringify(r.json) : Buffer.from(r.text as Uint8Array).toString("utf8"));

describe("synchronous answers from the read caches", () => {
  for (const path of ["/v1/assets/USDC/state", "/v1/assets", "/v1/peg/feed"]) {
    it(`${path}: the first request waits for the store, the next ones are answered synchronously with the same body`, async () => {
      const t = setup();
      const first = t.get(path);
      expect(first).toBeInstanceOf(Promise);
      const a = await first;
      const second = t.get(path);
      expect(second).not.toBeInstanceOf(Promise);
      const b = second as HandledResult;
      expect(b.status).toBe(200);
      expect(body(b)).toBe(body(a));
      expect(b.headers["x-request-id"]).not.toBe(a.headers["x-request-id"]);
      expect(b.headers["ratelimit-remaining"]).toBeDefined();
    });
  }

  it("goes back to the store when the snapshot cache is older than 1 s", async () => {
    const t = setup();
    await t.get("/v1/assets/USDC/state");
    expect(t.get("/v1/assets/USDC/state")).not.toBeInstanceOf(Promise);
    const loads = t.loads();
    t.rm.clock.increment(1_001);
    const later = t.get("/v1/assets/USDC/state");
    expect(later).toBeInstanceOf(Promise);
    expect((await later).status).toBe(200);
    expect(t.loads()).toBe(loads + 1);
  });

  it("errors stay errors on the synchronous path (404 for an asset without snapshot, 304 for a matching ETag)", async () => {
    const t = setup();
    await t.get("/v1/peg/feed");
    const feed = t.get("/v1/peg/feed") as HandledResult;
    const nm = t.get("/v1/peg/feed", { "if-none-match": feed.headers["etag"]! }) as HandledResult;
    expect(nm.status).toBe(304);
    t.rm.snapshotMap.delete(t.rm.catalog.bySymbol("USDT")!.mint);
    t.rm.clock.increment(1_001);
    await t.get("/v1/assets/USDT/state");
    const r = t.get("/v1/assets/USDT/state") as HandledResult;
    expect(r.status).toBe(404);
    expect(r.json).toMatchObject({ error: "not_found", asset: "USDT" });
  });
});
