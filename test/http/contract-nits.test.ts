/**
 * Four contract nits of the outside audit (issue 14 item 4), each checked through the public routes in-process:
 * 1. the ApiError `asset` member is an offending symbol, never a mint;
 * 2. the card's current_state_duration_secs and the state object's `since` describe the same instant (a gate to
 *    UNKNOWN and back, a restart from a receipt, a restart after a downtime), driven by the real engine;
 * 3. the README's catalog counts are the shipped catalog's;
 * 4. the documented `pattern` of the opaque cursor covers every cursor the server issues, and a text is accepted
 *    exactly when it is a cursor the listing issued (issue 23: cursors are signed).
 */
import { readFileSync } from "node:fs";
import fc from "fast-check";
import { beforeEach, describe, expect, it } from "vitest";
import { ActorHost, type StateEvent } from "../../src/actors/index.ts";
import type { AccountsModel } from "../../src/http/accounts-model.ts";
import { openApiDocument, publicRoutes } from "../../src/http/routes/index.ts";
import { CURSOR_MAX_MS } from "../../src/http/schemas/index.ts";
import { SimulatedClock } from "../../src/clock.ts";
import { D, stateFromReceipt, type EpochMs, type Receipt, type Sample } from "../../src/methodology/index.ts";
import { snapshotFromStateEvent } from "../../src/store/index.ts";
import { asset, catalog, fakeReadModel, MIN, NOW, SEC } from "./fixtures.ts";
import { harness, TEST_CURSORS, type Harness } from "./helpers.ts";

type Obj = Record<string, unknown>;

let h: Harness;
beforeEach(() => {
  h = harness();
});

// ---------------------------------------------------------------------------------------------------------------
// 1. ApiError.asset

describe("ApiError.asset names an offending symbol only", () => {
  it("by-mint: an unknown mint has no `asset`; an inactive asset's mint names its symbol", async () => {
    const unknown = await h.get("/v1/assets/by-mint/11111111111111111111111111111111", 404);
    expect(unknown.body).toMatchObject({ error: "asset_not_found" });
    expect(unknown.body).not.toHaveProperty("asset");
    const inactive = await h.get(`/v1/assets/by-mint/${asset("BRZ").mint}`, 404);
    expect(inactive.body).toMatchObject({ error: "asset_not_found", asset: "BRZ" });
  });

  it("symbol-keyed routes name the symbol the client gave", async () => {
    for (const path of ["/v1/assets/NOPE", "/v1/assets/NOPE/state", "/v1/assets/NOPE/history", "/v1/audit?asset=NOPE"]) {
      expect((await h.get(path, 404)).body, path).toMatchObject({ error: "asset_not_found", asset: "NOPE" });
    }
  });
});

// ---------------------------------------------------------------------------------------------------------------
// 2. current_state_duration_secs == now - since

const USDC = asset("USDC");
const WIDE = { "USDC/USD": { price: "1", conf: "0.06" } }; // 600 bps: the oracle-confidence gate (> 500)
const NARROW = { "USDC/USD": { price: "1", conf: "0.0001" } };

function sample(ts: EpochMs, market: string, oracle: Readonly<Record<string, { price: string; conf: string }>>): Sample {
  return {
    asset: "USDC",
    ts,
    intrinsic_usd: new D("1"),
    market_usd: new D(market),
    intrinsic_sol: null,
    market_sol: null,
    cr: null,
    oracle: Object.fromEntries(Object.entries(oracle).map(([k, e]) => [k, { price: new D(e.price), conf: new D(e.conf), publish_time: ts }])),
    intrinsic_stale: false,
  };
}

/** The real engine for USDC on its own clock; every published recompute becomes the read model's snapshot. */
class Engine {
  readonly clock: SimulatedClock;
  host: ActorHost;
  last: StateEvent | null = null;
  readonly receipts: Receipt[] = [];
  #version = 0;

  constructor(start: EpochMs) {
    this.clock = new SimulatedClock(start);
    this.host = this.#spawn();
  }

  #spawn(): ActorHost {
    const host = new ActorHost({ assets: [USDC], clock: this.clock, gitSha: "" });
    host.events$.subscribe((e) => {
      if (e.kind === "transition") this.receipts.push(e.receipt);
      else if (e.mint === USDC.mint) {
        this.last = e;
        h.rm.snapshotMap.set(USDC.mint, snapshotFromStateEvent(e, ++this.#version));
      }
    });
    return host;
  }

  /** One sample every `everyMs` until `until` (inclusive). */
  feed(until: EpochMs, market: string, oracle: Readonly<Record<string, { price: string; conf: string }>>, everyMs = 10 * SEC): void {
    while (this.clock.now() + everyMs <= until) {
      this.clock.increment(everyMs);
      this.host.ingest(sample(this.clock.now(), market, oracle));
    }
  }

  /** The process stops here (nothing more is published) and a new one starts at `at` from `state`. */
  restart(at: EpochMs, restore: (host: ActorHost) => void): void {
    this.host.stop();
    this.clock.set(at);
    this.host = this.#spawn();
    restore(this.host);
  }

  get engine() {
    return this.host.engineState("USDC")!;
  }
}

/** Reads the card and the state object at `at` and checks they agree: duration == trunc(now - since). */
async function agreeAt(at: EpochMs): Promise<{ card: Obj; state: Obj; since: EpochMs }> {
  h.rm.clock.set(at);
  const card = (await h.get("/v1/assets/USDC")).body as Obj;
  const state = (await h.get("/v1/assets/USDC/state")).body as Obj;
  const since = Date.parse(state.since as string);
  expect(card.state).toBe(state.state);
  expect(card.current_state_duration_secs).toBe(Math.trunc((at - since) / 1000));
  return { card, state, since };
}

/** USDC from par into a committed DRIFT (0.3 % below par), held until `NOW + 1000 s`. */
function driftingEngine(): Engine {
  const e = new Engine(NOW);
  e.host.ingest(sample(NOW, "1", NARROW));
  e.feed(NOW + 1000 * SEC, "0.997", NARROW, SEC);
  expect(e.engine.published).toBe("DRIFT");
  expect(e.engine.committed).toBe("DRIFT");
  return e;
}

describe("card current_state_duration_secs and state since describe one instant", () => {
  it("a gate to UNKNOWN (the DRIFT band persists underneath) and back", async () => {
    const e = driftingEngine();
    const driftSince = e.engine.publishedSince!;
    expect((await agreeAt(e.clock.now())).since).toBe(driftSince);

    // The oracle-confidence gate: UNKNOWN, while the committed band stays DRIFT since driftSince.
    e.feed(e.clock.now() + 10 * SEC, "0.997", WIDE);
    const gateAt = e.clock.now();
    expect(e.engine).toMatchObject({ published: "UNKNOWN", committed: "DRIFT", publishedSince: gateAt, committedSince: driftSince });
    e.feed(gateAt + 100 * SEC, "0.997", WIDE);
    const gated = await agreeAt(gateAt + 100 * SEC);
    expect(gated.state).toMatchObject({ state: "UNKNOWN", since: new Date(gateAt).toISOString() });
    expect(gated.card).toMatchObject({ current_state_duration_secs: 100, sustained: false });

    // The gate clears: DRIFT again, since then (the UNKNOWN -> DRIFT transition's instant), not since driftSince.
    e.feed(e.clock.now() + 10 * SEC, "0.997", NARROW);
    const backAt = e.clock.now();
    expect(e.engine).toMatchObject({ published: "DRIFT", committed: "DRIFT", publishedSince: backAt, committedSince: driftSince });
    expect(e.receipts.at(-1)).toMatchObject({ from_state: "UNKNOWN", to_state: "DRIFT", detected_at: new Date(backAt).toISOString() });
    e.feed(backAt + 50 * SEC, "0.997", NARROW);
    const back = await agreeAt(backAt + 50 * SEC);
    expect(back.state).toMatchObject({ state: "DRIFT", since: new Date(backAt).toISOString() });
    expect(back.card).toMatchObject({ current_state_duration_secs: 50, sustained: false });

    // sustained follows the same count: true once DRIFT has been held 900 s since the gate cleared.
    e.feed(backAt + 899 * SEC, "0.997", NARROW, SEC);
    expect((await agreeAt(backAt + 899 * SEC)).card).toMatchObject({ current_state_duration_secs: 899, sustained: false });
    e.feed(backAt + 900 * SEC, "0.997", NARROW, SEC);
    expect((await agreeAt(backAt + 900 * SEC)).card).toMatchObject({ current_state_duration_secs: 900, sustained: true });
  });

  it("a restart recovered from the last receipt (a gate's): the count goes on from before the restart", async () => {
    const e = driftingEngine();
    e.feed(e.clock.now() + 10 * SEC, "0.997", WIDE);
    const gateAt = e.clock.now();
    const receipt = e.receipts.at(-1)!;
    expect(receipt).toMatchObject({ from_state: "DRIFT", to_state: "UNKNOWN" });

    // The process dies right after the transition (no actor snapshot); the new one resumes from the receipt.
    const restartAt = gateAt + 5 * MIN;
    e.restart(restartAt, (host) => host.restoreAsset(USDC.mint, stateFromReceipt(receipt)));
    e.feed(restartAt + 2 * MIN, "0.997", WIDE);
    // The engine's committed_since restarted with the process; the published state began before it.
    expect(e.engine).toMatchObject({ published: "UNKNOWN", publishedSince: gateAt, committedSince: restartAt + 10 * SEC });
    const r = await agreeAt(restartAt + 2 * MIN);
    expect(r.since).toBe(gateAt);
    expect(r.card.current_state_duration_secs).toBe((restartAt + 2 * MIN - gateAt) / 1000);
  });

  it("a restart from the actor snapshot after 20 minutes down: stale until the first sample, then the old count", async () => {
    const e = driftingEngine();
    const driftSince = e.engine.publishedSince!;
    const stoppedAt = e.clock.now();
    const saved = e.host.snapshot();

    const restartAt = stoppedAt + 20 * MIN;
    e.restart(restartAt, (host) => host.restore(saved));
    // Nothing published since the stop: the API collapses the last snapshot to UNKNOWN since it went stale.
    const stale = await agreeAt(restartAt);
    expect(stale.state).toMatchObject({ state: "UNKNOWN", since: new Date(stoppedAt + 15 * MIN).toISOString() });
    expect(stale.card).toMatchObject({ state_reason: "stale_source", current_state_duration_secs: 300, sustained: false });

    // The first sample after the restart: the engine's DRIFT never changed, so it holds since driftSince.
    e.feed(restartAt + 10 * SEC, "0.997", NARROW);
    const resumed = await agreeAt(restartAt + 10 * SEC);
    expect(resumed.since).toBe(driftSince);
    expect(resumed.card).toMatchObject({ state: "DRIFT", sustained: true });
  });

  it("a snapshot without published_since: the band's start only when the state is the band, else no duration", async () => {
    const s = h.rm.snapshotMap.get(USDC.mint)!;
    h.rm.snapshotMap.set(USDC.mint, { ...s, published_since: null, committed_since: NOW - 200 * SEC });
    const ok = await agreeAt(NOW);
    expect(ok.since).toBe(NOW - 200 * SEC);
    h.rm.snapshotMap.set(USDC.mint, { ...s, state: "UNKNOWN", gate: "oracle_confidence", published_since: null, committed_since: NOW - 200 * SEC });
    const card = (await h.get("/v1/assets/USDC")).body as Obj;
    expect(card).not.toHaveProperty("current_state_duration_secs");
    expect(card).not.toHaveProperty("sustained");
    expect(((await h.get("/v1/assets/USDC/state")).body as Obj).since).toBe(new Date(s.updated_at).toISOString());
  });
});

// ---------------------------------------------------------------------------------------------------------------
// 3. README counts

describe("README", () => {
  it("states the catalog's counts: listed, active (tracked) and inactive", () => {
    const text = readFileSync(new URL("../../README.md", import.meta.url), "utf8").replace(/\s+/g, " ");
    const m = /Its catalog lists (\d+) mints: the service tracks the (\d+) active ones, and the (\d+) inactive ones/.exec(text);
    expect(m, "the README's sentence on the catalog").not.toBeNull();
    const [, all, active, inactive] = m!.map(Number);
    expect({ all, active, inactive }).toEqual({
      all: catalog.all.length,
      active: catalog.active.length,
      inactive: catalog.all.filter((a) => !a.active).length,
    });
    expect(text).not.toMatch(/\b\d+ tracked mints\b/);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// 4. The cursor's documented pattern

/** The documented schemas of every cursor: the `before` parameters and the `next_before` members. */
function cursorSchemas(): { where: string; schema: Obj }[] {
  const rm = fakeReadModel();
  const doc = openApiDocument(publicRoutes(rm, { accounts: { model: {} as AccountsModel } })) as Obj;
  const out: { where: string; schema: Obj }[] = [];
  for (const [path, item] of Object.entries(doc["paths"] as Obj)) {
    for (const [method, op] of Object.entries(item as Obj)) {
      for (const p of ((op as Obj)["parameters"] ?? []) as Obj[]) {
        if (p["name"] === "before") out.push({ where: `${method} ${path} ?before`, schema: p["schema"] as Obj });
      }
    }
  }
  const components = (doc["components"] as Obj)["schemas"] as Obj;
  for (const [id, s] of Object.entries(components)) {
    const nb = (((s as Obj)["properties"] ?? {}) as Obj)["next_before"] as Obj | undefined;
    if (nb === undefined) continue;
    const variants = (nb["anyOf"] ?? [nb]) as Obj[];
    out.push({ where: `${id}.next_before`, schema: variants.find((v) => v["type"] === "string")! });
  }
  return out;
}

const PATTERNS = cursorSchemas();
const PATTERN = new RegExp(String(PATTERNS[0]?.schema["pattern"]));

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");
/** Any 128-bit id in UUID text, in either case (the parser gives it back in lowercase). */
const idArb = fc
  .tuple(fc.uint8Array({ minLength: 16, maxLength: 16 }), fc.boolean())
  .map(([b, upper]) => {
    const x = hex(b);
    const id = `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
    return upper ? id.toUpperCase() : id;
  });
const instantArb = fc.oneof(
  fc.constantFrom(0, 1, NOW, CURSOR_MAX_MS - 1, CURSOR_MAX_MS),
  fc.bigInt({ min: 0n, max: BigInt(CURSOR_MAX_MS) }).map(Number),
);
const positionArb = fc.record({ detected_at: instantArb, id: idArb });
const encode = (p: { detected_at: number; id: string }) => TEST_CURSORS.encode("audit", p);
const b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
/** Near misses of real cursors: one character changed, dropped, added, or the whole text re-cased (never the cursor itself). */
const nearMissArb = fc
  .tuple(positionArb.map(encode), fc.nat(60), fc.constantFrom(...b64, "=", "+", "/", ".", " ", "%", "é"), fc.integer({ min: 0, max: 3 }))
  .map(([c, i, ch, op]) => {
    const k = i % (c.length + 1);
    if (op === 0) return { cursor: c, text: c.slice(0, k) + ch + c.slice(k + 1) };
    if (op === 1) return { cursor: c, text: c.slice(0, k) + c.slice(k + 1) };
    if (op === 2) return { cursor: c, text: c.slice(0, k) + ch + c.slice(k) };
    return { cursor: c, text: c.toLowerCase() };
  })
  .filter(({ cursor, text }) => cursor !== text)
  .map(({ text }) => text);
/** Earlier cursor formats (base64url JSON {t, id}; the unsigned 24-byte position) and other plausible texts. */
const otherArb = fc.oneof(
  positionArb.map((p) => Buffer.from(JSON.stringify({ t: p.detected_at, id: p.id })).toString("base64url")),
  positionArb.map((p) => encode(p).slice(0, 32)),
  fc.stringMatching(/^[A-Za-z0-9_-]{0,60}$/),
  fc.stringMatching(/^A[A-D][A-Za-z0-9_-]{52,54}$/),
  fc.string({ maxLength: 60 }),
);

describe("the cursor's documented pattern, and what the route accepts", () => {
  it("every before parameter and next_before member documents the same pattern", () => {
    const where = PATTERNS.map((p) => p.where).sort();
    expect(where).toEqual([
      "AuditIndex.next_before",
      "DeliveryPage.next_before",
      "get /v1/audit ?before",
      "get /v1/audit.csv ?before",
      "get /v1/me/webhooks/{id}/deliveries ?before",
    ]);
    for (const p of PATTERNS) expect(p.schema, p.where).toMatchObject({ type: "string", pattern: PATTERNS[0]!.schema["pattern"] });
    expect(typeof PATTERNS[0]!.schema["pattern"]).toBe("string");
  });

  it("accepts every cursor the server emits (paging the ledger one row at a time)", async () => {
    let cursor: string | null = null;
    let rows = 0;
    do {
      const body = (await h.get(`/v1/audit?limit=1${cursor === null ? "" : `&before=${cursor}`}`)).body as { data: Obj[]; next_before: string | null };
      rows += body.data.length;
      cursor = body.next_before;
      if (cursor !== null) {
        expect(cursor).toMatch(PATTERN);
        expect(TEST_CURSORS.decode("audit", cursor)?.id).toBe(body.data[0]!.id);
      }
    } while (cursor !== null);
    expect(rows).toBe(h.rm.alertList.length);
  });

  it("encodes only positions it can decode: an instant outside 0..2^47-1 ms or a non-UUID id is a RangeError", () => {
    const id = h.rm.alertList[0]!.id;
    for (const t of [-1, CURSOR_MAX_MS + 1, Number.MAX_SAFE_INTEGER, 1.5, Number.NaN]) {
      expect(() => encode({ detected_at: t, id }), String(t)).toThrow(RangeError);
    }
    expect(() => encode({ detected_at: NOW, id: "not-a-uuid" })).toThrow(RangeError);
  });

  it("property: every position's cursor matches the pattern and decodes back to it, for its own listing only", () => {
    fc.assert(
      fc.property(positionArb, (p) => {
        const c = encode(p);
        expect(c).toMatch(PATTERN);
        expect(TEST_CURSORS.decode("audit", c)).toEqual({ detected_at: p.detected_at, id: p.id.toLowerCase() });
        expect(TEST_CURSORS.decode("deliveries:x", c)).toBeNull();
      }),
      { numRuns: 2000 },
    );
  });

  it("property: the codec accepts no near miss of a cursor it issued, no guess of the pattern and no earlier format", () => {
    fc.assert(
      fc.property(fc.oneof(fc.stringMatching(PATTERN), nearMissArb, otherArb), (text) => {
        expect(TEST_CURSORS.decode("audit", text), text).toBeNull();
      }),
      { numRuns: 5000 },
    );
  });

  it("property: the route answers 400 invalid_cursor for every `before` it did not issue, and a page for one it did", async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(positionArb.map(encode), fc.stringMatching(PATTERN), nearMissArb, otherArb), async (text) => {
        const a = await h.call(`/v1/audit?before=${encodeURIComponent(text)}`);
        if (TEST_CURSORS.decode("audit", text) !== null) expect(a.status, text).toBe(200);
        else expect([a.status, a.body], text).toMatchObject([400, { error: "invalid_cursor" }]);
        // A text that does not match the documented pattern is never a cursor.
        if (!PATTERN.test(text)) expect(a.status, text).toBe(400);
      }),
      { numRuns: 300 },
    );
  });
});
