/**
 * Engine benchmark (npm run bench:engine): samples per second through the methodology and the band machines on one
 * core, with 1,000 and 10,000 assets, and heap bytes per idle actor. Rewrites the "engine" section of
 * docs/benchmarks.md with the numbers, the command and the machine.
 *
 * Samples are built before the clock starts (the feed is not what is measured) and cycle through a small set of
 * per-asset price variants around the peg, with rare excursions, so the band machines see realistic traffic: mostly
 * steady PEGGED recomputes, occasional candidates and dwell timers armed and cancelled.
 */
import { performance } from "node:perf_hooks";
import { ActorHost, type HostAsset } from "../src/actors/index.ts";
import { base58Encode, loadShippedCatalog } from "../src/catalog/index.ts";
import { SimulatedClock } from "../src/clock.ts";
import {
  D,
  INITIAL_STATE,
  methodologyAssetFrom,
  step,
  type AssetState,
  type Sample,
} from "../src/methodology/index.ts";
import { machineDescription, writeSection } from "./report.ts";

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error("run with node --expose-gc (npm run bench:engine does)");

const catalog = loadShippedCatalog();
const templates = catalog.active;

function syntheticAssets(n: number): HostAsset[] {
  const out: HostAsset[] = [];
  for (let i = 0; i < n; i++) {
    const t = templates[i % templates.length]!;
    const bytes = new Uint8Array(32);
    for (let b = 0; b < 32; b++) bytes[b] = (i * 131 + b * 31 + (i >> 8) * 7) & 0xff;
    bytes[0] = (i >> 16) & 0xff;
    bytes[1] = (i >> 8) & 0xff;
    bytes[2] = i & 0xff;
    const entry = { ...(t.entry as Record<string, unknown>), symbol: `${t.symbol}.${i}`, mint: base58Encode(bytes) };
    out.push({ symbol: entry.symbol, mint: entry.mint, entry, methodology: methodologyAssetFrom(entry) });
  }
  return out;
}

const VARIANTS = 16;

/** One SOL/USD oracle entry per variant, shared by every asset as a real feed update is. */
const SOL_FEED = Array.from({ length: VARIANTS }, (_, v) => ({
  price: new D(149_500 + v * 7).div(1000),
  conf: new D(60 + v).div(1000),
  publish_time: 0,
}));

/** Per-asset sample variants: mostly within a few bps of the peg, one deep excursion in sixteen. */
function samplesFor(asset: HostAsset): Sample[] {
  const cls = asset.methodology.class;
  const isCr = "cr_drift" in asset.methodology.thresholds;
  const out: Sample[] = [];
  for (let v = 0; v < VARIANTS; v++) {
    const bps = v === VARIANTS - 1 ? 180 : (v * 7) % 9; // 0..8 bps, and one 180 bps excursion
    const intrinsic = cls === "lst" ? new D("187.3412") : new D("1");
    const market = intrinsic.times(new D(10_000 - bps).div(10_000));
    out.push({
      asset: asset.symbol,
      ts: 0,
      intrinsic_usd: intrinsic,
      market_usd: market,
      intrinsic_sol: cls === "lst" ? new D("1.2534") : null,
      market_sol: cls === "lst" ? new D("1.2534").times(new D(10_000 - bps).div(10_000)) : null,
      cr: isCr ? new D("1.45") : null,
      oracle: { "SOL/USD": SOL_FEED[v]! },
      intrinsic_stale: false,
    });
  }
  return out;
}

interface Throughput {
  assets: number;
  samples: number;
  seconds: number;
  perSecond: number;
  transitions: number;
}

/** Full engine: ActorHost (XState band machines) on a simulated clock advancing 250 ms per round. */
function benchHost(n: number, minSeconds: number): Throughput {
  const assets = syntheticAssets(n);
  const pools = assets.map(samplesFor);
  const clock = new SimulatedClock(Date.UTC(2026, 0, 1));
  const host = new ActorHost({ assets, clock, gitSha: "" });
  let transitions = 0;
  host.events$.subscribe((e) => {
    if (e.kind === "transition") transitions++;
  });
  // Warm-up round (JIT, first samples seed the EWMAs).
  for (let i = 0; i < n; i++) host.ingest(pools[i]![0]!);
  let samples = 0;
  let round = 0;
  const start = performance.now();
  let elapsed = 0;
  while (elapsed < minSeconds * 1000) {
    round++;
    clock.increment(250);
    for (let i = 0; i < n; i++) {
      host.ingest(pools[i]![(round + i) % VARIANTS]!);
    }
    samples += n;
    elapsed = performance.now() - start;
  }
  host.stop();
  return { assets: n, samples, seconds: elapsed / 1000, perSecond: samples / (elapsed / 1000), transitions };
}

/** The methodology alone (pure `step`), to show how the time splits between decimal math and the actor runtime. */
function benchMethodology(n: number, minSeconds: number): Throughput {
  const assets = syntheticAssets(n);
  const pools = assets.map(samplesFor);
  const states: AssetState[] = assets.map(() => INITIAL_STATE);
  let now = Date.UTC(2026, 0, 1);
  let samples = 0;
  let transitions = 0;
  let round = 0;
  const start = performance.now();
  let elapsed = 0;
  while (elapsed < minSeconds * 1000) {
    round++;
    now += 250;
    for (let i = 0; i < n; i++) {
      const r = step(assets[i]!.methodology, states[i]!, { kind: "sample", sample: pools[i]![(round + i) % VARIANTS]!, now });
      states[i] = r.state;
      for (const o of r.outcomes) if (o.kind === "decision" && o.decision.transition) transitions++;
    }
    samples += n;
    elapsed = performance.now() - start;
  }
  return { assets: n, samples, seconds: elapsed / 1000, perSecond: samples / (elapsed / 1000), transitions };
}

function heapUsed(): number {
  gc!();
  gc!();
  return process.memoryUsage().heapUsed;
}

/** Heap bytes per idle actor: cold (no sample yet) and warm (EWMA, last sample and state held). */
function benchMemory(n: number): { cold: number; warm: number } {
  const assets = syntheticAssets(n);
  const pools = assets.map((a) => samplesFor(a)[0]!);
  const clock = new SimulatedClock(Date.UTC(2026, 0, 1));
  const base = heapUsed();
  const host = new ActorHost({ assets, clock, gitSha: "" });
  const cold = (heapUsed() - base) / n;
  for (let i = 0; i < n; i++) host.ingest(pools[i]!);
  const warm = (heapUsed() - base) / n;
  // Keep the inputs alive across the measurement so they are not counted as freed actor memory.
  if (pools.length !== n || host.size !== n) throw new Error("unreachable");
  host.stop();
  return { cold, warm };
}

const fmt = (x: number) => Math.round(x).toLocaleString("en-US");
const seconds = Number(process.env["BENCH_SECONDS"] ?? "5");

const rows: string[] = [];
for (const n of [1_000, 10_000]) {
  const m = benchMethodology(n, seconds);
  const h = benchHost(n, seconds);
  rows.push(`| ${fmt(n)} | ${fmt(h.perSecond)} | ${fmt(m.perSecond)} | ${fmt(h.samples)} in ${h.seconds.toFixed(1)} s |`);
  console.log(`assets=${n} engine=${fmt(h.perSecond)}/s methodology-only=${fmt(m.perSecond)}/s transitions=${h.transitions}`);
}
const mem = benchMemory(10_000);
console.log(`heap per actor (10,000 actors): cold ${fmt(mem.cold)} B, warm ${fmt(mem.warm)} B`);

const machine = machineDescription();
const section = `<!-- engine:start -->
## Engine: methodology + band machines (one core)

Command: \`npm run bench:engine\` (\`node --expose-gc --max-semi-space-size=64 --import tsx bench/engine.bench.ts\`, ${seconds} s per measurement, \`BENCH_SECONDS\` to change).
Machine: ${machine}. Measured ${new Date().toISOString().slice(0, 10)}.

Each sample goes through the full engine: routing in the actor host, the XState band machine, the decimal
methodology (raw discount, EWMA, Schmitt classification, dwell, gates, confidence) and the host's event stream (one
subscriber). Prices cycle through per-asset variants 0-8 bps from the peg with a 180 bps one-tick excursion one sample
in sixteen, so machines also start candidates and arm and cancel dwell timers; this is steady-state traffic (the
excursions never last the 30 s dwell, so no transitions). Oracle entries are shared across assets per tick, as one
feed update is in production. "Methodology-only" runs the same samples through the pure \`step\` function, to show
how the time splits between the decimal math and the actor runtime.

| assets | engine samples/s | methodology-only samples/s | measured |
|---:|---:|---:|---:|
${rows.join("\n")}

Heap per idle actor (10,000 actors, after forced GC): **${fmt(mem.cold)} B** before its first sample,
**${fmt(mem.warm)} B** holding its EWMA, last sample and state.

Targets (issue 2): at least 50,000 samples/s per core and at most 8 KB per actor.
<!-- engine:end -->`;

writeSection("engine", section);
