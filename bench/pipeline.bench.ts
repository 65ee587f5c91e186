/**
 * Pipeline benchmark (npm run bench:pipeline): sustained samples per second from the source through the band
 * machines, JetStream (samples and transitions, acked) and the projectors into PostgreSQL, and the time from a
 * transition's decision to its row being committed (queryable) in PostgreSQL, p50 / p99. Real nats-server and
 * PostgreSQL processes are started for the run. Rewrites the "pipeline" section of docs/benchmarks.md.
 *
 * The engine runs on a simulated clock that advances 5 s per round (one sample per asset per round), so dwell windows
 * pass quickly and transitions keep coming while everything else (NATS, PostgreSQL, the projectors) runs in real time.
 */
import { performance } from "node:perf_hooks";
import { jetstream } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { ActorHost, type HostAsset } from "../src/actors/index.ts";
import { base58Encode, loadShippedCatalog } from "../src/catalog/index.ts";
import { SimulatedClock, systemClock } from "../src/clock.ts";
import { D, methodologyAssetFrom, type Sample } from "../src/methodology/index.ts";
import { EngineLink, ensureTopology, startBatchConsumer, TOPOLOGY } from "../src/streams/jetstream/index.ts";
import { sampleProjector, transitionProjector, type ProjectorStats } from "../src/streams/projector/projector.ts";
import { startSampleConsumers } from "../src/streams/projector/sample-consumers.ts";
import { openStore, type Store } from "../src/store/index.ts";
import { startNats } from "../test/support/nats.ts";
import { startPostgres } from "../test/support/postgres.ts";
import { machineDescription, writeSection } from "./report.ts";

const ASSETS = Number(process.env["BENCH_ASSETS"] ?? "200");
const SECONDS = Number(process.env["BENCH_SECONDS"] ?? "20");
/** Offered load in samples/s for the latency phase (about 15x the 69-asset production rate of 1 sample/s each). */
const RATE = Number(process.env["BENCH_RATE"] ?? "1000");
const catalog = loadShippedCatalog();
const templates = catalog.active.filter((a) => a.intrinsic.kind === "fixed_1_usd" && a.thresholdKind === "bps");

function syntheticAssets(n: number) {
  const hostAssets: HostAsset[] = [];
  const entries: Record<string, unknown>[] = [];
  for (let i = 0; i < n; i++) {
    const t = templates[i % templates.length]!;
    const bytes = new Uint8Array(32);
    bytes[0] = 7;
    bytes[1] = (i >> 8) & 0xff;
    bytes[2] = i & 0xff;
    const entry = { ...(t.entry as Record<string, unknown>), symbol: `${t.symbol}.${i}`, mint: base58Encode(bytes) };
    entries.push(entry);
    hostAssets.push({ symbol: entry.symbol, mint: entry.mint, entry, methodology: methodologyAssetFrom(entry) });
  }
  return { hostAssets, entries };
}

function pct(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

const nats = await startNats();
const pg = await startPostgres();
const url = await pg.createDatabase();
const store: Store = await openStore({ kind: "postgres", url }, systemClock);
const { hostAssets, entries } = syntheticAssets(ASSETS);
// Register the synthetic assets (the store's tables reference assets by mint).
const catalogForStore = {
  ...catalog,
  byMint: (mint: string) => {
    const e = entries.find((x) => x["mint"] === mint);
    return e === undefined ? undefined : ({ ...catalog.active[0]!, entry: e, mint, symbol: e["symbol"] as string, monitoringOnly: false, calibration: "calibrated" } as never);
  },
};
await store.upsertAssets(hostAssets.map((h) => ({ ...catalog.active[0]!, entry: h.entry as never, mint: h.mint, symbol: h.symbol })) as never);

// As the service connects (src/cli/service.ts): no per-request stack traces.
const nc = await connect({ servers: nats.url, noAsyncTraces: true });
const topology = await ensureTopology(nc);
// The engine's simulated time starts now: the store refuses sample rows already past raw retention (7 days).
const clock = new SimulatedClock(systemClock.now());
const host = new ActorHost({ assets: hostAssets, clock, gitSha: "" });
const link = new EngineLink(host, nc, jetstream(nc), topology, { window: 512, maxQueuedSamples: 50_000 });
link.start();

const decidedAt = new Map<string, number>();
let stateEvents = 0;
host.events$.subscribe((e) => {
  if (e.kind === "transition") decidedAt.set(e.receipt.alert_id, performance.now());
  else stateEvents++;
});
const latencies: number[] = [];
const timedStore: Store = {
  ...store,
  insertTransition: async (receipt, meta) => {
    const inserted = await store.insertTransition(receipt, meta);
    const t0 = decidedAt.get(receipt.alert_id);
    if (inserted && t0 !== undefined) latencies.push(performance.now() - t0);
    return inserted;
  },
};
const tStats: ProjectorStats = { projected: 0, duplicates: 0, rejected: 0 };
const sStats: ProjectorStats = { projected: 0, duplicates: 0, rejected: 0 };
const consumers = [
  await startBatchConsumer(nc, topology.jsm, { stream: TOPOLOGY.transitions.stream, durable: "bench-t", filterSubject: TOPOLOGY.transitions.subjects, maxBatch: 64, onError: (e) => console.error("transition projector:", e) }, transitionProjector(timedStore, catalogForStore as never, tStats)),
  await startSampleConsumers(nc, topology.jsm, sampleProjector(store, sStats), (e) => console.error("sample projector:", e)),
];

const ONE = new D(1);
const prices = [new D("1"), new D("0.9999"), new D("0.97"), new D("0.9998")];
function sampleFor(h: HostAsset, round: number): Sample {
  // Each asset cycles through 36 rounds (180 s simulated) near par and 12 rounds (60 s) at a 300 bps discount,
  // staggered by asset: one escalation after the 30 s entry dwell and one relaxation after the 120 s exit dwell.
  const i = Number.parseInt(h.symbol.slice(h.symbol.lastIndexOf(".") + 1), 10);
  const discounted = (round + i) % 48 >= 36;
  const market = discounted ? prices[2]! : prices[round % 2 === 0 ? 0 : 1]!;
  return { asset: h.symbol, ts: clock.now(), intrinsic_usd: ONE, market_usd: market, intrinsic_sol: null, market_sol: null, cr: null, oracle: {}, intrinsic_stale: false };
}

let ingested = 0;
let round = 0;

const drained = () =>
  sStats.projected + sStats.duplicates + (sStats.stale ?? 0) >= stateEvents && tStats.projected + tStats.duplicates >= decidedAt.size;

/** Feeds rounds for `seconds` (paced to `rate` samples/s when given), then waits until every row is committed. */
async function phase(seconds: number, rate: number | null): Promise<{ samples: number; seconds: number }> {
  const first = ingested;
  const t0 = performance.now();
  while (performance.now() - t0 < seconds * 1000) {
    clock.increment(5_000);
    for (const h of hostAssets) host.ingest(sampleFor(h, round));
    ingested += hostAssets.length;
    round++;
    if (rate !== null) {
      const due = t0 + ((ingested - first) / rate) * 1000;
      while (performance.now() < due) await new Promise((r) => setTimeout(r, Math.max(1, due - performance.now())));
    }
    // Backpressure: let the publisher and projectors catch up instead of queueing without bound.
    while (link.stats.queuedSamples > 20_000 || stateEvents - sStats.projected - sStats.duplicates > 40_000) {
      await new Promise((r) => setTimeout(r, 5));
    }
    await new Promise((r) => setImmediate(r));
  }
  while (!drained() && performance.now() - t0 < (seconds + 120) * 1000) await new Promise((r) => setTimeout(r, 10));
  return { samples: ingested - first, seconds: (performance.now() - t0) / 1000 };
}

const throughput = await phase(SECONDS, null);
latencies.length = 0;
const paced = await phase(SECONDS, RATE);
await link.close();
for (const c of consumers) await c.stop();
host.stop();
await nc.close();
const rows = await store.db.selectFrom("samples").select(store.db.fn.countAll().as("n")).executeTakeFirst();
await store.close();
await nats.dispose();
await pg.dispose();

const sorted = [...latencies].sort((a, b) => a - b);
const fmt = (x: number) => Math.round(x).toLocaleString("en-US");
const result = {
  samples: throughput.samples,
  seconds: throughput.seconds,
  perSecond: throughput.samples / throughput.seconds,
  pacedRate: paced.samples / SECONDS,
  pacedTransitions: sorted.length,
  stored: Number(rows?.n ?? 0),
  transitions: decidedAt.size,
  projectedTransitions: tStats.projected,
  p50: pct(sorted, 50),
  p99: pct(sorted, 99),
};
console.log(JSON.stringify(result));

const machine = machineDescription();
const section = `<!-- pipeline:start -->
## Pipeline: source -> band machines -> JetStream -> projectors -> PostgreSQL

Command: \`npm run bench:pipeline\` (\`BENCH_ASSETS\`, \`BENCH_SECONDS\`, \`BENCH_RATE\` to change; here ${ASSETS} assets, two phases of ${SECONDS} s intake).
Machine: ${machine}; nats-server 2.9 and PostgreSQL 15 started by the benchmark on the same machine (PostgreSQL with
fsync off, as in the tests). Measured ${new Date().toISOString().slice(0, 10)}.

Every sample is evaluated by its band machine, published to \`PEG_SAMPLES\` (acked), projected in batches into raw
rows and recomputed 1-minute rollups; every transition is published to \`PEG_TRANSITIONS\` with its alert id, acked,
and projected into \`alerts\` + \`receipts\`.

Throughput phase: intake as fast as the pipeline's backpressure allows; the rate counts from the first sample until
the last row of the phase is committed in PostgreSQL.

| samples | seconds (until all committed) | sustained samples/s end to end |
|---:|---:|---:|
| ${fmt(result.samples)} | ${result.seconds.toFixed(1)} | ${fmt(result.perSecond)} |

Latency phase: intake paced at ${fmt(RATE)} samples/s (about ${Math.round(RATE / 69)}x the production rate of the 69
active assets at one sample per second each); time from a transition's decision in the band machine to its alert
and receipt rows being committed.

| offered samples/s | transitions measured | decision -> row committed p50 | p99 |
|---:|---:|---:|---:|
| ${fmt(result.pacedRate)} | ${fmt(result.pacedTransitions)} | ${result.p50.toFixed(0)} ms | ${result.p99.toFixed(0)} ms |
<!-- pipeline:end -->`;
writeSection("pipeline", section);
process.exit(0);
