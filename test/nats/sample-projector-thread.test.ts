/**
 * The sample projector on its own thread (src/cli/sample-projector-thread.ts), against a real nats-server and a real
 * PostgreSQL: every evaluated sample the engine published is projected exactly once into raw rows and rollups, the
 * counts reach the engine thread, the supplies sent to the thread are stamped on the snapshots, stop() drains and
 * ends the thread, and a thread that cannot reach its database fails its start instead of running half-open.
 */
import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ActorHost } from "../../src/actors/index.ts";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import { startSampleProjectorThread } from "../../src/cli/sample-projector-thread.ts";
import { SimulatedClock } from "../../src/clock.ts";
import { D, type Sample } from "../../src/methodology/index.ts";
import { EngineLink, TOPOLOGY, type Topology } from "../../src/streams/jetstream/index.ts";
import type { ProjectorStats } from "../../src/streams/projector/projector.ts";
import type { Store } from "../../src/store/index.ts";
import { waitFor } from "../support/ports.ts";
import { startPipeline, type TestPipeline } from "../support/pipeline.ts";

const catalog = loadShippedCatalog();
const assets = catalog.active.filter((a) => a.intrinsic.kind === "fixed_1_usd").slice(0, 12);
const ROUNDS = 40;

let pipeline: TestPipeline;
let nc: NatsConnection;
let topology: Topology;
let store: Store;

beforeAll(async () => {
  pipeline = await startPipeline(catalog, 2);
  ({ nc, topology, store } = pipeline);
}, 60_000);

afterAll(async () => {
  await pipeline?.dispose();
});

const sampleOf = (symbol: string, round: number, ts: number): Sample => ({
  asset: symbol,
  ts,
  intrinsic_usd: new D(1),
  market_usd: new D(round % 2 === 0 ? "1" : "0.9999"),
  intrinsic_sol: null,
  market_sol: null,
  cr: null,
  oracle: {},
  intrinsic_stale: false,
});

describe("the sample projector's thread", () => {
  it("projects every published sample once, reports its counts and stamps the supplies it was sent", async () => {
    const stats: ProjectorStats = { projected: 0, duplicates: 0, rejected: 0, stale: 0 };
    const logs: string[] = [];
    const thread = await startSampleProjectorThread({ data: { servers: [pipeline.nats.url], databaseUrl: pipeline.databaseUrl, history: { rawDays: 7, rollupDays: 90 } }, stats, log: (_l, msg) => logs.push(msg) });
    const supplied = assets[0]!;
    thread.supply(supplied.mint, "123456789.5");
    await new Promise((r) => setTimeout(r, 400)); // the supplies reach the thread before the samples do

    const clock = new SimulatedClock(Date.now() - ROUNDS * 1_000 - 60_000);
    const host = new ActorHost({ assets, clock, gitSha: "" });
    const link = new EngineLink(host, nc, jetstream(nc), topology, { snapshotEveryMs: 200 });
    link.start();
    let published = 0;
    host.events$.subscribe((e) => {
      if (e.kind === "state") published++;
    });
    for (let round = 0; round < ROUNDS; round++) {
      clock.increment(1_000);
      for (const a of assets) host.ingest(sampleOf(a.symbol, round, clock.now()));
    }
    await waitFor(() => stats.projected >= published, 60_000, "the thread to project every sample");
    await link.close();
    host.stop();
    expect(stats).toEqual({ projected: published, duplicates: 0, rejected: 0, stale: 0 });
    expect(thread.stats.messages).toBe(published);
    expect(thread.stats.batches).toBeGreaterThan(0);

    const raw = await sql<{ n: string | number }>`select count(*) as n from samples`.execute(store.db);
    expect(Number(raw.rows[0]!.n)).toBe(published);
    const rolled = await sql<{ n: string | number }>`select coalesce(sum(samples), 0) as n from rollups_1m`.execute(store.db);
    expect(Number(rolled.rows[0]!.n)).toBe(published);
    const supply = await sql<{ mint: string; circulating_supply: string | null }>`select mint, circulating_supply::text from asset_snapshots where mint = any(${assets.map((a) => a.mint)}::text[])`.execute(store.db);
    expect(supply.rows).toHaveLength(assets.length);
    for (const r of supply.rows) expect(r.circulating_supply, r.mint).toBe(r.mint === supplied.mint ? "123456789.5" : null);

    await thread.stop();
    await thread.stop(); // idempotent
    // Stopped: what is published now stays on the durable for the next projector.
    const js = jetstream(nc);
    await js.publish(`peg.sample.${assets[1]!.mint}`, "{}", { msgID: "after-stop" });
    await new Promise((r) => setTimeout(r, 300));
    const info = await topology.jsm.consumers.info(TOPOLOGY.samples.stream, "projector-samples");
    expect(info.num_pending).toBe(1);
    expect(stats.rejected).toBe(0);
    expect(logs).toEqual([]);
  }, 120_000);

  it("refuses samples past HISTORY_RAW_DAYS as the service's own store does", async () => {
    const stats: ProjectorStats = { projected: 0, duplicates: 0, rejected: 0, stale: 0 };
    const thread = await startSampleProjectorThread({ data: { servers: [pipeline.nats.url], databaseUrl: pipeline.databaseUrl, history: { rawDays: 1, rollupDays: 90 } }, stats, log: () => {} });
    // Two days old: inside the default 7 days, outside the configured 1.
    const clock = new SimulatedClock(Date.now() - 2 * 86_400_000);
    const host = new ActorHost({ assets: [assets[0]!], clock, gitSha: "" });
    const link = new EngineLink(host, nc, jetstream(nc), topology, { snapshotEveryMs: 200 });
    link.start();
    let published = 0;
    host.events$.subscribe((e) => {
      if (e.kind === "state") published++;
    });
    clock.increment(1_000);
    host.ingest(sampleOf(assets[0]!.symbol, 0, clock.now()));
    await waitFor(() => published > 0 && (stats.stale ?? 0) >= published, 60_000, "the thread to refuse the old sample");
    await link.close();
    host.stop();
    await thread.stop();
    expect(stats).toMatchObject({ projected: 0, stale: published });
  }, 120_000);

  it("fails its start when its database cannot be reached, and leaves no thread running", async () => {
    const stats: ProjectorStats = { projected: 0, duplicates: 0, rejected: 0, stale: 0 };
    await expect(
      startSampleProjectorThread({ data: { servers: [pipeline.nats.url], databaseUrl: "postgres://127.0.0.1:1/none", history: { rawDays: 7, rollupDays: 90 } }, stats, log: () => {} }),
    ).rejects.toThrow(/the sample projector's thread did not start: .*ECONNREFUSED|connect/);
  }, 60_000);
});
