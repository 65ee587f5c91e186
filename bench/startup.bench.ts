/**
 * Start-up and recovery time with 10,000 synthetic assets (npm run bench:startup). The real service
 * (`startup-child.ts`: `startService` on the synthetic catalog, `FEED=sim`) is started three times on the same
 * nats-server and PostgreSQL, which the benchmark starts itself:
 *
 * 1. first start: empty store and empty `peg_actors`; runs a few seconds (every actor gets samples), stops in order
 *    (which flushes every actor's snapshot to KV);
 * 2. restart after that clean stop: every actor is restored from its KV snapshot; killed with SIGKILL after a few
 *    seconds of running;
 * 3. restart after the kill -9: restored again, the projectors catch up on what was acknowledged but not projected.
 *
 * For each, as a client sees it from spawning the process: the first HTTP answer (`/healthz` 200) and the first 200
 * from `/readyz`; and as the child reports it (ms since its own start, so module loading is included): the catalog
 * built, HTTP listening, the actors recovered, `startService` returned, plus the recovery summary and RSS. Rewrites
 * the "startup" section of docs/benchmarks.md.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { startNats } from "../test/support/nats.ts";
import { startPostgres } from "../test/support/postgres.ts";
import { freePort } from "../test/support/ports.ts";
import { loadAverage, machineDescription, writeSection } from "./report.ts";

const ASSETS = Number(process.env["BENCH_ASSETS"] ?? "10000");
const HOLD_MS = Number(process.env["BENCH_HOLD_MS"] ?? "5000");
/** The simulated market's tick: one sample per asset every 10 s keeps 10,000 assets within what the pipeline sustains. */
const SIM_TICK_MS = Number(process.env["BENCH_SIM_TICK_MS"] ?? "10000");
const CHILD = fileURLToPath(new URL("./startup-child.ts", import.meta.url));
/** How long the benchmark waits for the first `/readyz` 200 before giving up on it. */
const READY_WITHIN_MS = 120_000;

/** What the child reports when `startService` has returned (ms since the child's own start). */
interface Started {
  readonly catalogMs: number;
  readonly httpMs: number;
  readonly recoveredMs: number;
  readonly startedMs: number;
  readonly recovery: Record<string, unknown>;
  readonly rss: number;
  readonly actors: number;
}

interface Run {
  readonly name: string;
  readonly started: Started;
  /** Parent-side, ms from spawn: the first 200 from `/healthz`, the first from `/readyz` (NaN: none within 120 s). */
  readonly answeringMs: number;
  readonly readyMs: number;
  /** The last reason `/readyz` gave while not ready. */
  readonly notReady: string;
  readonly stopMs: number | null;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `url` from now until it answers 200 (every `everyMs`); resolves with the time of that answer and the last non-200 reason. */
async function firstOk(url: string, everyMs: number, deadline: number, exited: () => boolean): Promise<{ at: number; last: string }> {
  let last = "";
  while (performance.now() < deadline && !exited()) {
    const r = await fetch(url, { signal: AbortSignal.timeout(5_000) }).catch(() => null);
    if (r?.status === 200) {
      await r.body?.cancel();
      return { at: performance.now(), last };
    }
    if (r !== null) last = ((await r.json().catch(() => ({}))) as { message?: string }).message ?? `status ${r.status}`;
    await sleep(everyMs);
  }
  return { at: NaN, last };
}

async function run(name: string, env: Record<string, string>, mode: "stop" | "kill"): Promise<Run> {
  // BENCH_CPU_PROF_DIR: a V8 CPU profile of each child that exits on its own (not the killed one), for finding where
  // start-up time goes.
  const prof = process.env["BENCH_CPU_PROF_DIR"] === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${process.env["BENCH_CPU_PROF_DIR"]}`];
  const base = `http://127.0.0.1:${env["PORT"]}`;
  const spawned = performance.now();
  const p = spawn(process.execPath, [...prof, "--max-semi-space-size=64", "--import", "tsx", CHILD], {
    env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "/tmp", ...env, BENCH_MODE: mode === "kill" ? "hold" : "stop" },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let err = "";
  p.stderr.on("data", (c: Buffer) => (err = (err + c.toString()).slice(-4000)));
  let exitCode: number | null | undefined;
  const exited = new Promise<number | null>((resolve) => p.once("exit", (code) => resolve((exitCode = code))));
  let stopMs: number | null = null;
  let buf = "";
  let onStarted: (s: Started) => void = () => {};
  const started = new Promise<Started>((resolve, reject) => {
    onStarted = resolve;
    void exited.then((code) => reject(new Error(`${name}: child exited (${code}) before it started: ${err}`)));
  });
  started.catch(() => {});
  p.stdout.on("data", (c: Buffer) => {
    buf += c.toString();
    const lines = buf.split("\n");
    buf = lines.pop()!;
    for (const l of lines) {
      const o = JSON.parse(l) as { msg: string; stopMs?: number } & Started;
      if (o.msg === "started") onStarted(o);
      if (o.msg === "stopped") stopMs = o.stopMs ?? null;
    }
  });
  const gone = () => exitCode !== undefined;
  const answering = await firstOk(`${base}/healthz`, 10, spawned + READY_WITHIN_MS, gone);
  const ready = await firstOk(`${base}/readyz`, 50, spawned + READY_WITHIN_MS, gone);
  const s = await started;
  await sleep(HOLD_MS);
  if (mode === "kill") p.kill("SIGKILL");
  else p.stdin.write("stop\n");
  const code = await exited;
  if (mode === "stop" && code !== 0) throw new Error(`${name}: child exited with ${code}: ${err}`);
  const r: Run = { name, started: s, answeringMs: answering.at - spawned, readyMs: ready.at - spawned, notReady: ready.last, stopMs };
  console.log(`${name}: answering ${Math.round(r.answeringMs)} ms, ready ${Math.round(r.readyMs)} ms, started ${Math.round(s.startedMs)} ms, recovery ${JSON.stringify(s.recovery)}, stop ${stopMs} ms`);
  return r;
}

const loadBefore = loadAverage();
const nats = await startNats();
const pg = await startPostgres();
const dataDir = mkdtempSync(join(tmpdir(), "peg-bench-startup-"));
const runs: Run[] = [];
try {
  const env = {
    NATS_URL: nats.url,
    DATABASE_URL: await pg.createDatabase(),
    DATA_DIR: dataDir,
    HOST: "127.0.0.1",
    PORT: String(await freePort()),
    METRICS_PORT: "0",
    // DATABASE_URL is set: the private keys in it are sealed under a key of this run (the same for the three starts).
    SECRETS_KEY: randomBytes(32).toString("base64"),
    FEED: "sim",
    SIM_TICK_MS: String(SIM_TICK_MS),
    LOG_LEVEL: "info",
    BENCH_ASSETS: String(ASSETS),
  };
  runs.push(await run("first start (empty store and KV)", env, "stop"));
  runs.push(await run("restart after a clean stop", env, "kill"));
  runs.push(await run("restart after kill -9", env, "stop"));
} finally {
  await nats.dispose();
  await pg.dispose();
  rmSync(dataDir, { recursive: true, force: true });
}
const loadAfter = loadAverage();

const fmt = (x: number | null | undefined) => (x === null || x === undefined || Number.isNaN(x) ? "-" : Math.round(x).toLocaleString("en-US"));
const rows = runs.map((r) => {
  const s = r.started;
  const rec = s.recovery;
  const recovered = ["fromSnapshot", "fromTransition", "fromStore", "cold"].filter((k) => typeof rec[k] === "number" && (rec[k] as number) > 0).map((k) => `${k} ${fmt(rec[k] as number)}`).join(", ");
  return `| ${r.name} | **${fmt(r.answeringMs)}** | **${fmt(r.readyMs)}** | ${fmt(s.catalogMs)} | ${fmt(s.httpMs)} | ${fmt(s.recoveredMs)} | ${fmt(s.startedMs)} | ${recovered || JSON.stringify(rec)} | ${fmt(s.rss / 2 ** 20)} MiB | ${fmt(r.stopMs)} |`;
});

const notReadyNotes = runs
  .filter((r) => Number.isNaN(r.readyMs))
  .map((r) => `\n"${r.name}": \`/readyz\` did not answer 200 within 120 s of spawning; its last answer: "${r.notReady || "none"}".\n`)
  .join("");

const machine = machineDescription();
const section = `<!-- startup:start -->
## Start-up and recovery: ${fmt(ASSETS)} synthetic assets

Command: \`npm run bench:startup\` (\`node --import tsx bench/startup.bench.ts\`; \`BENCH_ASSETS\`, \`BENCH_HOLD_MS\`, \`BENCH_SIM_TICK_MS\` to change; here ${fmt(ASSETS)} active assets, ${fmt(HOLD_MS)} ms of running between start and stop or kill, a simulated tick of ${fmt(SIM_TICK_MS)} ms).
Machine: ${machine}; nats-server and PostgreSQL 15 started by the benchmark on the same machine. Measured ${new Date().toISOString().slice(0, 10)} (load average ${loadBefore} at the start, ${loadAfter} at the end).

The service (\`bench/startup-child.ts\`: the real \`startService\`, \`FEED=sim\`) runs a catalog of ${fmt(ASSETS)} active
assets: the shipped ones plus copies under new symbols and mints (\`bench/synthetic.ts\`), one actor each. Three
starts on the same nats-server and PostgreSQL database: the first on an empty store and an empty \`peg_actors\` KV
bucket (it runs, then stops in order, which writes every actor's snapshot to KV); a restart after that clean stop
(every actor restored from its snapshot; then killed with SIGKILL); a restart after the kill.

"Answering" and "/readyz 200" are what a client sees, in milliseconds from spawning the process (module loading
included): the first 200 from \`/healthz\` (polled every 10 ms) and the first 200 from \`/readyz\` (every 50 ms;
it needs the database, NATS, the engine running and a projected snapshot no older than 15 minutes). The other times
are the child's own, from its start (Node's time origin): the catalog built and validated, HTTP listening (store and
NATS opened side by side, the API started; the engine is not running yet and \`/readyz\` says so), the actors
recovered (one pass over the actor snapshots and one over the last transitions,
\`src/streams/jetstream/recovery.ts\`, read while the API starts; 10,000 actors created and restored), and
\`startService\` returned (projectors, webhook delivery and intake started; docs/lifecycle.md).

| start | answering (spawn -> /healthz 200) | spawn -> /readyz 200 | catalog built | HTTP listening | actors recovered | started | recovered from | RSS at started | ordered stop |
|---|---:|---:|---:|---:|---:|---:|---|---:|---:|
${rows.join("\n")}
${notReadyNotes}
The simulated feed ticks every ${fmt(SIM_TICK_MS)} ms here (\`SIM_TICK_MS\`): ${fmt((ASSETS * 1000) / SIM_TICK_MS)} samples/s for ${fmt(ASSETS)}
assets, so that start-up and recovery are measured on their own; the full production rate (one sample per asset per
second) is the throughput section's load.
<!-- startup:end -->`;

writeSection("startup", section);
