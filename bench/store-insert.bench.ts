/**
 * PostgreSQL CPU per projected sample (npm run bench:store-insert; issue 25): what the sample projector's statements
 * and the retention pass cost the database, measured as the CPU time of the server's processes (/proc), which the
 * machine's other load disturbs far less than a rate does. BENCH_ASSETS (10,000) synthetic assets, BENCH_TICKS (60)
 * ticks of one sample each, inserted with the store's `insertSamples` in the projector's batches of 512; then one
 * retention pass after the minute closed (it packs the minute). Rewrites the "store-insert" section of
 * docs/benchmarks.md; `BENCH_PREVIOUS`, `BENCH_PREVIOUS_PASS` and `BENCH_PREVIOUS_NODE` (an earlier run's figures, as text)
 * are printed beside the new ones. Also the benchmark process's own CPU (the store's client side: since migration 0010
 * the pass reads and encodes each packed minute here, not in PostgreSQL).
 */
import { execSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { SimulatedClock } from "../src/clock.ts";
import { openStore, type SampleRow } from "../src/store/index.ts";
import { startPostgres } from "../test/support/postgres.ts";
import { loadAverage, machineDescription, today, writeSection } from "./report.ts";
import { syntheticCatalog } from "./synthetic.ts";

const ASSETS = Number(process.env["BENCH_ASSETS"] ?? "10000");
const TICKS = Number(process.env["BENCH_TICKS"] ?? "60");
const BATCH = 512;
const CLK_TCK = Number(execSync("getconf CLK_TCK").toString());

/** CPU seconds used so far by the postmaster listening on `port` and its children. */
function serverCpu(port: number): number {
  const ps = execSync("ps -eo pid,ppid,args").toString().split("\n").map((l) => l.trim().split(/\s+/));
  const master = ps.find((f) => f.includes("-p") && f[f.indexOf("-p") + 1] === String(port) && f.some((x) => x.endsWith("postgres")));
  if (master === undefined) throw new Error(`no postmaster on port ${port}`);
  const pids = [master[0], ...ps.filter((f) => f[1] === master[0]).map((f) => f[0])];
  let ticks = 0;
  for (const pid of pids) {
    try {
      const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
      ticks += Number(f[11]) + Number(f[12]);
    } catch {
      // a backend that ended meanwhile
    }
  }
  return ticks / CLK_TCK;
}

const loadBefore = loadAverage();
const pg = await startPostgres();
const t0 = Date.UTC(2026, 10, 26, 12, 0, 0);
const clock = new SimulatedClock(t0);
const store = await openStore({ kind: "postgres", url: await pg.createDatabase(), max: 2 }, clock);
const catalog = syntheticCatalog(ASSETS);
await store.upsertAssets(catalog.all);
const mints = catalog.active.slice(0, ASSETS).map((a) => a.mint);
// 34-significant-digit smoothed discounts, as the EWMA produces them.
const discount = (i: number, t: number) => `0.000${(i * 7919 + t * 104729) % 1_000_000}0000000000000000001998288283585205`.slice(0, 40);

let cpu = serverCpu(pg.port);
let own = process.cpuUsage();
let wall = performance.now();
let batch: SampleRow[] = [];
for (let t = 0; t < TICKS; t++) {
  clock.set(t0 + t * 1000);
  for (let i = 0; i < ASSETS; i++) {
    batch.push({ mint: mints[i]!, ts: t0 + t * 1000, seq: 1, discount: discount(i, t), discount_raw: "0.0025", state: "PEGGED", market_usd: "0.9975", intrinsic_usd: "1" });
    if (batch.length === BATCH) {
      await store.insertSamples(batch);
      batch = [];
    }
  }
}
if (batch.length > 0) await store.insertSamples(batch);
const samples = ASSETS * TICKS;
/** CPU seconds of this process (the store's client side: statements built, blocks encoded) since `from`. */
const ownCpu = (from: NodeJS.CpuUsage): number => {
  const u = process.cpuUsage(from);
  return (u.user + u.system) / 1e6;
};
const insert = { cpuS: serverCpu(pg.port) - cpu, nodeS: ownCpu(own), wallMs: performance.now() - wall };
cpu = serverCpu(pg.port);
own = process.cpuUsage();
wall = performance.now();
await store.applyRetention(t0 + TICKS * 1000 + 180_000);
const pass = { cpuS: serverCpu(pg.port) - cpu, nodeS: ownCpu(own), wallMs: performance.now() - wall };
await store.close();
await pg.dispose();

const us = (s: number) => Number(((s * 1e6) / samples).toFixed(1));
const result = {
  bench: "store-insert",
  samples,
  insert_pg_cpu_us_per_sample: us(insert.cpuS),
  pass_pg_cpu_us_per_sample: us(pass.cpuS),
  insert_node_cpu_us_per_sample: us(insert.nodeS),
  pass_node_cpu_us_per_sample: us(pass.nodeS),
  insert_wall_ms: Math.round(insert.wallMs),
  pass_wall_ms: Math.round(pass.wallMs),
};
console.log(JSON.stringify(result));
const previous = process.env["BENCH_PREVIOUS"] ?? "";
writeSection(
  "store-insert",
  `<!-- store-insert:start -->
## Store: PostgreSQL CPU per projected sample (issue 25)

Command: \`npm run bench:store-insert\` (\`node --import tsx bench/store-insert.bench.ts\`; \`BENCH_ASSETS\` ${ASSETS}, \`BENCH_TICKS\` ${TICKS}).
Machine: ${machineDescription()}; PostgreSQL 15 started by the benchmark (fsync off). Measured ${today()} (load average ${loadBefore} at the start, ${loadAverage()} at the end).
Load: ${samples.toLocaleString("en-US")} samples (${ASSETS.toLocaleString("en-US")} assets x ${TICKS} ticks of one minute) through \`insertSamples\` in batches of ${BATCH}, then one retention pass after the minute closed.
CPU is the server processes' own (/proc), so the machine's other load moves it far less than a rate.

| figure | this run | previous |
|---|---:|---|
| insert + rollup, PostgreSQL CPU per sample | ${result.insert_pg_cpu_us_per_sample} µs | ${previous === "" ? "-" : previous} |
| retention pass (packs the minute), PostgreSQL CPU per sample | ${result.pass_pg_cpu_us_per_sample} µs | ${process.env["BENCH_PREVIOUS_PASS"] ?? "-"} |
| the store's own process CPU per sample (building statements; for the pass, reading and encoding the blocks): insert / pass | ${result.insert_node_cpu_us_per_sample} µs / ${result.pass_node_cpu_us_per_sample} µs | ${process.env["BENCH_PREVIOUS_NODE"] ?? "-"} |
| wall: inserts / pass | ${result.insert_wall_ms.toLocaleString("en-US")} ms / ${result.pass_wall_ms.toLocaleString("en-US")} ms | |
<!-- store-insert:end -->`,
);
