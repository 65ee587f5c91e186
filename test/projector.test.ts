import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ActorHost, type StateEvent } from "../src/actors/index.ts";
import { loadShippedCatalog } from "../src/catalog/index.ts";
import { SimulatedClock } from "../src/clock.ts";
import { D, type Receipt } from "../src/methodology/index.ts";
import { sampleMessage } from "../src/streams/jetstream/messages.ts";
import { encodeSampleBatch } from "../src/streams/jetstream/sample-batch.ts";
import { sampleProjector, transitionProjector, type ProjectorStats } from "../src/streams/projector/projector.ts";
import { openStore, type Store } from "../src/store/index.ts";

const catalog = loadShippedCatalog();
const USDC = catalog.bySymbol("USDC")!;
const enc = new TextEncoder();
const T0 = Date.now() - 3600_000; // within raw retention of the store's clock

let store: Store;
const clock = new SimulatedClock(T0);
const states: StateEvent[] = [];
const receipts: Receipt[] = [];

beforeAll(async () => {
  store = await openStore({ kind: "pglite-memory" }, new SimulatedClock(Date.now()));
  await store.upsertAssets(catalog.all);
  const host = new ActorHost({ assets: [USDC], clock, gitSha: "" });
  host.events$.subscribe((e) => (e.kind === "state" ? states.push(e) : receipts.push(e.receipt)));
  const px = ["1", "0.99", "0.99", "0.99", "0.99", "0.99"];
  px.forEach((p, i) => {
    clock.set(T0 + i * 10_000);
    host.ingest({ asset: "USDC", ts: clock.now(), intrinsic_usd: new D(1), market_usd: new D(p), intrinsic_sol: null, market_sol: null, cr: null, oracle: {}, intrinsic_stale: false });
  });
  host.stop();
});

afterAll(async () => store?.close());

const fresh = (): ProjectorStats => ({ projected: 0, duplicates: 0, rejected: 0 });

describe("transition projector", () => {
  it("inserts each receipt once, however often it is redelivered, and rejects what it cannot read", async () => {
    expect(receipts.length).toBeGreaterThan(0);
    const stats = fresh();
    const rejected: string[] = [];
    const project = transitionProjector(store, catalog, stats, (w) => rejected.push(w));
    const batch = receipts.map((r, i) => ({ seq: i + 1, subject: `peg.transition.${r.mint}`, data: enc.encode(JSON.stringify(r)) }));
    await project(batch);
    await project(batch);
    await project([
      { seq: 99, subject: "peg.transition.x", data: enc.encode("{not json") },
      { seq: 100, subject: "peg.transition.x", data: enc.encode(JSON.stringify({ ...receipts[0]!, mint: "11111111111111111111111111111111" })) },
    ]);
    expect(stats).toEqual({ projected: receipts.length, duplicates: receipts.length, rejected: 2 });
    expect(rejected).toHaveLength(2);
    const stored = await store.alerts({ limit: 10, offset: 0 });
    expect(stored.map((a) => a.id).sort()).toEqual(receipts.map((r) => r.alert_id).sort());
    expect((await store.receiptById(receipts[0]!.alert_id))?.receipt).toEqual(receipts[0]);
  });
});

describe("sample projector", () => {
  it("stores raw rows and rollups idempotently and keeps the newest snapshot", async () => {
    const stats = fresh();
    const project = sampleProjector(store, stats);
    const batch = states.map((e, i) => ({ seq: i + 1, subject: `peg.sample.${e.mint}`, data: enc.encode(JSON.stringify(sampleMessage(e))) }));
    await project(batch);
    await project(batch); // redelivery
    expect(stats.projected).toBe(states.length);
    expect(stats.duplicates).toBe(states.length);
    const raw = await store.history(USDC.mint, { bucket: "raw", from: T0 - 1, to: T0 + 3600_000, limit: 100 });
    expect(raw).toHaveLength(states.length);
    const minutes = await store.history(USDC.mint, { bucket: "1m", from: T0 - 60_000, to: T0 + 3600_000, limit: 100 });
    expect(minutes.reduce((n, m) => n + Number(m.samples), 0)).toBe(states.length);

    // An older message delivered late does not overwrite the newest snapshot.
    await project([batch[0]!]);
    const [snap] = await store.latestSnapshots();
    expect(snap?.updated_at).toBe(states.at(-1)!.now);

    await project([{ seq: 500, subject: "peg.sample.x", data: enc.encode(JSON.stringify({ ...sampleMessage(states[0]!), state: "SIDEWAYS" })) }]);
    expect(stats.rejected).toBe(1);
  });
});

describe("sample projector, batches (issue 25)", () => {
  it("stores a batch exactly as the same samples one message each: rows, rollups and snapshot", async () => {
    // `store` holds these samples projected one message each (the test above); a second store gets them as one batch.
    const batched = await openStore({ kind: "pglite-memory" }, new SimulatedClock(Date.now()));
    try {
      await batched.upsertAssets(catalog.all);
      const stats = fresh();
      const data = await encodeSampleBatch(states.map((e) => sampleMessage(e)));
      await sampleProjector(batched, stats)([{ seq: states.length, subject: "peg.samples.0", data }]);
      await sampleProjector(batched, stats)([{ seq: states.length + 1, subject: "peg.samples.0", data }]); // a retry stored twice
      expect(stats).toMatchObject({ projected: states.length, duplicates: states.length, rejected: 0 });
      const window = { from: T0 - 60_000, to: T0 + 3600_000, limit: 100 };
      for (const bucket of ["raw", "1m"] as const) {
        expect(await batched.history(USDC.mint, { bucket, ...window })).toEqual(await store.history(USDC.mint, { bucket, ...window }));
      }
      const [a] = await store.latestSnapshots();
      const [b] = await batched.latestSnapshots();
      expect(b?.updated_at).toBe(states.at(-1)!.now);
      expect({ ...b, version: 0 }).toEqual({ ...a, version: 0 });
    } finally {
      await batched.close();
    }
  });

  it("never lets a message older in the stream overwrite the snapshot a batch wrote", async () => {
    const messages = states.map((e) => sampleMessage(e));
    const project = sampleProjector(store, fresh());
    await project([{ seq: 7_000, subject: "peg.samples.0", data: await encodeSampleBatch(messages) }]);
    expect((await store.latestSnapshots())[0]?.updated_at).toBe(states.at(-1)!.now);
    // A single message of an earlier build, older in the stream than the batch.
    await project([{ seq: 6_999, subject: `peg.sample.${USDC.mint}`, data: enc.encode(JSON.stringify(messages[0])) }]);
    expect((await store.latestSnapshots())[0]?.updated_at).toBe(states.at(-1)!.now);
  });

  it("rejects a batch that does not decode as one message, and only the malformed samples of one that does", async () => {
    const stats = fresh();
    const rejected: string[] = [];
    const messages = states.map((e) => sampleMessage(e));
    const broken = [{ ...messages[0]!, state: "SIDEWAYS" as never }, ...messages.slice(1)];
    await sampleProjector(store, stats, (w) => rejected.push(w))([
      { seq: 900, subject: "peg.samples.0", data: new Uint8Array([0x1f, 0x8b, 1, 2, 3]) },
      { seq: 901, subject: "peg.samples.0", data: await encodeSampleBatch(broken) },
    ]);
    expect(stats.rejected).toBe(2);
    expect(rejected[0]).toMatch(/^sample seq 900: not a sample batch/);
    expect(rejected[1]).toBe("sample seq 901: malformed");
    expect(stats.projected + stats.duplicates).toBe(states.length - 1);
  });
});
