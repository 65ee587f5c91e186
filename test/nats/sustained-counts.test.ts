/**
 * Nothing dropped under sustained load (issue 15): every active asset of the shipped catalog sampled round after round,
 * paced, through the real pipeline (band machines, EngineLink into a real nats-server, the sample and transition
 * projectors into a real PostgreSQL), and the counts compared end to end once the projection drained: samples offered
 * = evaluated; evaluations (the samples' and the dwell timers') = stored in PEG_SAMPLES = raw rows (the samples' ones
 * = offered) = the 1-minute rollups' sample counts; transitions decided = stored in PEG_TRANSITIONS = alert rows; none
 * dropped, none twice.
 */
import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ActorHost } from "../../src/actors/index.ts";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import { SimulatedClock } from "../../src/clock.ts";
import { D, type Sample } from "../../src/methodology/index.ts";
import { EngineLink, startBatchConsumer, TOPOLOGY, type BatchConsumer, type Topology } from "../../src/streams/jetstream/index.ts";
import { sampleProjector, transitionProjector, type ProjectorStats } from "../../src/streams/projector/projector.ts";
import { startSampleConsumers } from "../../src/streams/projector/sample-consumers.ts";
import type { Store } from "../../src/store/index.ts";
import { waitFor } from "../support/ports.ts";
import { storedSamples } from "./stored-samples.ts";
import { startPipeline, type TestPipeline } from "../support/pipeline.ts";

const catalog = loadShippedCatalog();
/** USD-pegged assets with a fixed intrinsic value: a market price alone moves them. */
const assets = catalog.active.filter((a) => a.intrinsic.kind === "fixed_1_usd");
const ROUNDS = 300;
/** One round of every asset each 15 ms of wall time: about 65 rounds a second, sustained for about 5 s. */
const ROUND_MS = 15;

let pipeline: TestPipeline;
let nc: NatsConnection;
let topology: Topology;
let store: Store;

beforeAll(async () => {
  pipeline = await startPipeline(catalog, 4);
  ({ nc, topology, store } = pipeline);
}, 60_000);

afterAll(async () => {
  await pipeline?.dispose();
});

/** A price path per asset: near par, then a 300 bps discount for a while (escalations and relaxations). */
function sampleOf(symbol: string, i: number, round: number, ts: number): Sample {
  const discounted = (round + i * 7) % 60 >= 40;
  const market = discounted ? "0.97" : round % 2 === 0 ? "1" : "0.9999";
  return { asset: symbol, ts, intrinsic_usd: new D(1), market_usd: new D(market), intrinsic_sol: null, market_sol: null, cr: null, oracle: {}, intrinsic_stale: false };
}

describe("sustained load, end to end", () => {
  it("drops nothing: offered = evaluated = in JetStream = raw rows = rollup counts, and every transition once", async () => {
    expect(assets.length).toBeGreaterThanOrEqual(10);
    // The engine's time starts now (the store refuses rows past raw retention) and moves 5 s per round, so the 30 s
    // entry and 120 s exit dwells pass and transitions keep coming while NATS and PostgreSQL run in real time.
    const clock = new SimulatedClock(Date.now() - ROUNDS * 5_000 - 60_000);
    const host = new ActorHost({ assets, clock, gitSha: "" });
    const link = new EngineLink(host, nc, jetstream(nc), topology, { snapshotEveryMs: 200 });
    link.start();
    const decided = new Set<string>();
    let stateEvents = 0;
    let bySample = 0;
    host.events$.subscribe((e) => {
      if (e.kind === "transition") decided.add(e.receipt.alert_id);
      else {
        stateEvents++;
        if (e.trigger === "sample") bySample++;
      }
    });
    const sStats: ProjectorStats = { projected: 0, duplicates: 0, rejected: 0 };
    const tStats: ProjectorStats = { projected: 0, duplicates: 0, rejected: 0 };
    const consumers: BatchConsumer[] = [
      await startSampleConsumers(nc, topology.jsm, sampleProjector(store, sStats)),
      await startBatchConsumer(nc, topology.jsm, { stream: TOPOLOGY.transitions.stream, durable: "counts-t", filterSubject: TOPOLOGY.transitions.subjects, maxBatch: 64 }, transitionProjector(store, catalog, tStats)),
    ];

    let offered = 0;
    const results = new Map<string, number>();
    const t0 = Date.now();
    for (let round = 0; round < ROUNDS; round++) {
      clock.increment(5_000);
      assets.forEach((a, i) => {
        const r = host.ingest(sampleOf(a.symbol, i, round, clock.now()));
        results.set(r.status, (results.get(r.status) ?? 0) + 1);
        offered++;
      });
      const due = t0 + (round + 1) * ROUND_MS;
      await new Promise((r) => setTimeout(r, Math.max(0, due - Date.now())));
    }
    expect(results.get("accepted"), JSON.stringify([...results])).toBe(offered);
    expect(bySample).toBe(offered);
    expect(decided.size).toBeGreaterThan(assets.length);

    // Drained: every sample message projected, every transition projected.
    await waitFor(() => sStats.projected + sStats.duplicates + (sStats.stale ?? 0) >= stateEvents && tStats.projected >= decided.size, 60_000, "the projection to drain");
    await link.close();
    for (const c of consumers) await c.stop();
    host.stop();

    expect(link.stats.droppedSamples).toBe(0);
    expect(sStats).toMatchObject({ projected: stateEvents, duplicates: 0, rejected: 0 });
    // In batches: fewer messages than samples, every sample once.
    const samplesStream = await topology.jsm.streams.info(TOPOLOGY.samples.stream);
    expect(samplesStream.state.messages).toBeLessThan(stateEvents);
    const stored = await storedSamples(topology.jsm);
    expect(stored).toHaveLength(stateEvents);
    expect(new Set(stored.map((s) => `${s.mint}|${s.ts}|${s.trigger}`)).size).toBe(stateEvents);
    const transitionsStream = await topology.jsm.streams.info(TOPOLOGY.transitions.stream);
    expect(transitionsStream.state.messages).toBe(decided.size);

    const raw = await sql<{ n: string | number }>`select count(*) as n from samples`.execute(store.db);
    expect(Number(raw.rows[0]!.n)).toBe(stateEvents);
    // The samples' own rows (seq 1; a dwell timer's evaluation is seq 0): every asset, every round.
    const perAsset = await sql<{ mint: string; n: string | number }>`select mint, count(*) as n from samples where seq = 1 group by mint`.execute(store.db);
    expect(perAsset.rows.map((r) => Number(r.n))).toEqual(assets.map(() => ROUNDS));
    const rolled = await sql<{ n: string | number }>`select coalesce(sum(samples), 0) as n from rollups_1m`.execute(store.db);
    expect(Number(rolled.rows[0]!.n)).toBe(stateEvents);
    const alerts = await store.alerts({ limit: 10_000, offset: 0 });
    expect(alerts.length).toBe(decided.size);
    expect(new Set(alerts.map((a) => a.id))).toEqual(decided);
  }, 120_000);
});
