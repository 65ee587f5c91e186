/**
 * End-to-end throughput of the real service (npm run bench:throughput; issue 15 item 1). The service runs in its own
 * process (`throughput-child.ts`: `startService` as `peg-oracle serve` runs it, ROLE=all, FEED=sim, on a synthetic
 * catalog of BENCH_ASSETS active assets) against a nats-server and a PostgreSQL that this benchmark starts.
 *
 * 1. Intake runs for BENCH_SECONDS from the moment the service serves; the simulated market offers one sample per
 *    asset every BENCH_TICK_MS. Every second the benchmark reads the service's /metrics (samples by result, drops,
 *    the sample publish queue, heap), /readyz, PEG_SAMPLES and its projector's durable (`projector-sample-batches`), and the
 *    newest committed sample in PostgreSQL; every 10 s the service's VmRSS and CPU from /proc.
 * 2. At the cut-off it sends SIGUSR2: the child closes intake at a tick boundary (every actor released), and the
 *    pipeline drains what was offered before (publish queue empty, nothing pending on the projector's durable).
 * 3. It then counts offered / evaluated / in JetStream / raw rows / rollup sums, and reads each raw row's commit
 *    instant (PostgreSQL's `track_commit_timestamp`, switched on for this server): projection lag = commit - sample ts
 *    per row, exactly, and rows committed per window.
 * 4. SIGTERM: the ordered stop. Prints a JSON summary line and rewrites the "throughput" section of docs/benchmarks.md.
 *
 * Environment: BENCH_ASSETS (default 10,000), BENCH_SECONDS of intake (300; 30 for a check), BENCH_TICK_MS (1,000: the
 * simulated market's SIM_TICK_MS, i.e. the offered load; raise it to find the highest rate sustained),
 * BENCH_WINDOW_SECONDS (30), BENCH_DRAIN_SECONDS (the longest wait for the drain: max(300, 2 x BENCH_SECONDS)),
 * BENCH_MAX_LAG_MS (5,000: the last window's lag p99 above it means "did not keep up"), BENCH_RAW_FILE (a path: every
 * poll and the raw rows' (ts, commit) groups as JSON, for a closer look).
 */
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import pg from "pg";
import { startNats, type TestNats } from "../test/support/nats.ts";
import { startPostgres, type TestPostgres } from "../test/support/postgres.ts";
import { freePort } from "../test/support/ports.ts";
import { HOT_ROWS, partitionStart } from "../src/store/partitions.ts";
import { decodeSampleBatch, isSampleBatch } from "../src/streams/jetstream/sample-batch.ts";
import { positiveInt } from "./bench-env.ts";
import { loadAverage } from "./report.ts";
import { analyse, type Polls } from "./throughput-analysis.ts";
import { writeThroughputSection } from "./throughput-report.ts";
import { machineCpu, metric, parseMetrics, procStatus } from "./throughput-stats.ts";

const ASSETS = positiveInt("BENCH_ASSETS", 10_000);
const SECONDS = positiveInt("BENCH_SECONDS", 300);
const TICK_MS = positiveInt("BENCH_TICK_MS", 1000);
const WINDOW_S = positiveInt("BENCH_WINDOW_SECONDS", 30);
const DRAIN_S = positiveInt("BENCH_DRAIN_SECONDS", Math.max(300, 2 * SECONDS));
const MAX_LAG_MS = positiveInt("BENCH_MAX_LAG_MS", 5000);
const POLL_MS = 1000;
const MEMORY_EVERY_MS = 10_000;
const CHILD = fileURLToPath(new URL("./throughput-child.ts", import.meta.url));
const SAMPLES_STREAM = "PEG_SAMPLES";
const SAMPLES_DURABLE = "projector-sample-batches";

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const version = (cmd: string, args: string[]) => (spawnSync(cmd, args, { encoding: "utf8" }).stdout ?? "").trim().split("\n")[0] ?? "?";

// ---------------------------------------------------------------------------------------------------------------
// Processes, and their cleanup on every way out.

let nats: TestNats | null = null;
let server: TestPostgres | null = null;
let child: ReturnType<typeof spawn> | null = null;
let dataDir: string | null = null;
let nc: NatsConnection | null = null;
let db: pg.Client | null = null;
async function cleanup(): Promise<void> {
  if (child !== null && child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  await nc?.close().catch(() => {});
  await db?.end().catch(() => {});
  await nats?.dispose().catch(() => {});
  await server?.dispose().catch(() => {});
  if (dataDir !== null) rmSync(dataDir, { recursive: true, force: true });
  nc = db = nats = server = child = dataDir = null;
}
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
  process.on(sig, () => {
    console.error(`throughput: ${sig}, cleaning up`);
    void cleanup().finally(() => process.exit(130));
  });
}

/** PostgreSQL records each transaction's commit instant from now on (needs a restart): the lag is read per row. */
async function enableCommitTimestamps(s: TestPostgres): Promise<void> {
  const c = new pg.Client({ connectionString: s.url });
  await c.connect();
  await c.query("alter system set track_commit_timestamp = on").finally(() => c.end());
  await s.stop();
  await s.start();
}

/** `fn`'s result, trying up to 5 times, 1 s apart. */
async function retry<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (e) {
      if (attempt >= 5) throw e;
      await sleep(1000);
    }
  }
}

/** Runs `fn` every `ms` (never two at once; a slow run delays the next) until stopped. */
function every(ms: number, fn: () => Promise<void>): { stop(): Promise<void> } {
  let stopped = false;
  const done = (async () => {
    for (let next = Date.now(); !stopped; ) {
      await fn().catch(() => {});
      next += ms;
      const wait = next - Date.now();
      if (wait > 0) await sleep(wait);
      else next = Date.now();
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await done;
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// The child's lines.

type Line = Record<string, unknown> & { bench: string; at: number };
const lines = new Map<string, Line>();
const waiters = new Map<string, (l: Line) => void>();
/** Log lines of the service by level and message; the last fields of each warning and error. */
const logCounts = new Map<string, { level: string; msg: string; count: number; last: Record<string, unknown> }>();
let stderrTail = "";

function readLines(stream: NodeJS.ReadableStream, onLine: (l: string) => void): void {
  let buf = "";
  stream.on("data", (c: Buffer) => {
    buf += c.toString();
    const parts = buf.split("\n");
    buf = parts.pop()!;
    for (const p of parts) if (p !== "") onLine(p);
  });
}

function waitLine(kind: string, timeoutMs: number): Promise<Line> {
  const seen = lines.get(kind);
  if (seen !== undefined) return Promise.resolve(seen);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "${kind}" line from the service within ${timeoutMs} ms; stderr: ${stderrTail}`)), timeoutMs);
    waiters.set(kind, (l) => {
      clearTimeout(timer);
      resolve(l);
    });
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Reading the service, JetStream and PostgreSQL.

let metricsUrl = "";
let readyUrl = "";
let jsm: JetStreamManager | null = null;

async function scrape() {
  const r = await fetch(metricsUrl, { signal: AbortSignal.timeout(10_000) });
  const m = parseMetrics(await r.text());
  const n = "peg_oracle_samples_total";
  return {
    t: Date.now(),
    accepted: metric(m, n, 'result="accepted"'),
    skipped: metric(m, n, 'result="skipped"'),
    released: metric(m, n, 'result="released"'),
    unknown: metric(m, n, 'result="unknown_asset"'),
    dropped: metric(m, "peg_oracle_samples_dropped_total"),
    queue: metric(m, "peg_oracle_sample_publish_queue"),
    ticksSkipped: metric(m, "peg_oracle_feed_ticks_skipped_total"),
    heapUsed: metric(m, "peg_oracle_nodejs_heap_size_used_bytes"),
    heapTotal: metric(m, "peg_oracle_nodejs_heap_size_total_bytes"),
    external: metric(m, "peg_oracle_nodejs_external_memory_bytes"),
    loopLagP99Ms: metric(m, "peg_oracle_nodejs_eventloop_lag_p99_seconds") * 1000,
  };
}

/** Samples in the messages of PEG_SAMPLES read so far, and the last sequence read (each message is read once). */
const streamSamples = { count: 0, through: 0, reading: Promise.resolve() };

async function streamPoll() {
  const [s, c] = await Promise.all([jsm!.streams.info(SAMPLES_STREAM), jsm!.consumers.info(SAMPLES_STREAM, SAMPLES_DURABLE)]);
  // One reader at a time: the drain's poll and the interval's overlap, and both reading a batch counted it twice.
  streamSamples.reading = streamSamples.reading.then(async () => {
    for (let seq = Math.max(streamSamples.through + 1, s.state.first_seq); seq <= s.state.last_seq; seq++) {
      const m = await jsm!.streams.getMessage(SAMPLES_STREAM, { seq }).catch(() => null);
      if (m !== null) streamSamples.count += isSampleBatch(m.data) ? decodeSampleBatch(m.data).length : 1;
      streamSamples.through = seq;
    }
  });
  await streamSamples.reading;
  return { t: Date.now(), messages: s.state.messages, samples: streamSamples.count, lastSeq: s.state.last_seq, pending: c.num_pending, ackPending: c.num_ack_pending, ackFloor: c.ack_floor.stream_seq };
}

async function readyPoll() {
  const from = Date.now();
  try {
    const r = await fetch(readyUrl, { signal: AbortSignal.timeout(10_000) });
    const body = (await r.json()) as { message?: string };
    return { t: Date.now(), status: r.status, message: r.status === 200 ? "" : (body.message ?? ""), ms: Date.now() - from };
  } catch (e) {
    return { t: Date.now(), status: 0, message: `no answer: ${e instanceof Error ? e.message : String(e)}`, ms: Date.now() - from };
  }
}

async function freshnessPoll() {
  const r = await db!.query<{ ms: string | null }>("select floor(extract(epoch from max(ts)) * 1000)::bigint as ms from sample_rows");
  const newest = r.rows[0]?.ms;
  return { t: Date.now(), newestMs: newest === null || newest === undefined ? null : Number(newest) };
}

/**
 * Each raw row's commit instant, read while the row is still in its minute's partition of `sample_rows`: the service
 * packs a minute into `sample_minutes` (one row per asset, committed then) 60-120 s after it closed, so each closed
 * partition is read once, 30 s after its end; at the end, whatever is left. Rows packed before they were read (a
 * bench process far behind) are counted as such and have no commit instant.
 */
const rowGroups: { ts_ms: string; c_ms: string | null; seq: number; n: string }[] = [];
const partitionsRead = new Set<string>();
async function readClosedPartitions(closedBeforeMs: number): Promise<void> {
  const parts = await db!.query<{ name: string }>("select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent = 'sample_rows'::regclass");
  for (const { name } of parts.rows) {
    const start = partitionStart(HOT_ROWS, name);
    if (start === null || partitionsRead.has(name) || start + HOT_ROWS.widthMs > closedBeforeMs) continue;
    const r = await db!.query<{ ts_ms: string; c_ms: string | null; seq: number; n: string }>(
      `select floor(extract(epoch from ts) * 1000)::bigint as ts_ms,
              floor(extract(epoch from pg_xact_commit_timestamp(xmin)) * 1000)::bigint as c_ms, seq, count(*)::bigint as n
       from "${name}" group by 1, 2, 3`,
    );
    partitionsRead.add(name);
    rowGroups.push(...r.rows);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The run.

const loadBefore = loadAverage();
const versions = { nats: version("nats-server", ["--version"]), pg: version("/usr/lib/postgresql/15/bin/postgres", ["--version"]) };
const polls: Polls = { scrapes: [], streams: [], ready: [], freshness: [], memory: [] };
console.log(`throughput: ${ASSETS} assets, tick ${TICK_MS} ms (${Math.round((ASSETS * 1000) / TICK_MS)} samples/s offered), ${SECONDS} s of intake`);
try {
  nats = await startNats();
  server = await startPostgres();
  await enableCommitTimestamps(server);
  const dbUrl = await server.createDatabase();
  dataDir = mkdtempSync(join(tmpdir(), "peg-bench-throughput-"));
  const metricsPort = await freePort();
  const port = await freePort();
  const env: Record<string, string> = {
    PATH: process.env["PATH"] ?? "",
    HOME: process.env["HOME"] ?? "/tmp",
    ROLE: "all",
    FEED: "sim",
    SIM_TICK_MS: String(TICK_MS),
    NATS_URL: nats.url,
    DATABASE_URL: dbUrl,
    // DATABASE_URL is set: the service refuses to start without a key sealing its private keys (a fresh one per run).
    SECRETS_KEY: randomBytes(32).toString("base64"),
    DATA_DIR: dataDir,
    HOST: "127.0.0.1",
    PORT: String(port),
    METRICS_PORT: String(metricsPort),
    LOG_LEVEL: "info",
    BENCH_ASSETS: String(ASSETS),
  };
  metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
  readyUrl = `http://127.0.0.1:${port}/readyz`;
  const spawnedAt = Date.now();
  // BENCH_CPU_PROF_DIR: a V8 CPU profile of the service (written at its ordered stop), for finding where the time goes.
  const prof = process.env["BENCH_CPU_PROF_DIR"] === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${process.env["BENCH_CPU_PROF_DIR"]}`];
  const p = spawn(process.execPath, [...prof, "--max-semi-space-size=64", "--import", "tsx", CHILD], { env, stdio: ["ignore", "pipe", "pipe"] });
  child = p;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => p.once("exit", (code, signal) => r({ code, signal })));
  readLines(p.stdout!, (l) => {
    let o: Line;
    try {
      o = JSON.parse(l) as Line;
    } catch {
      return;
    }
    if (typeof o.bench !== "string") return;
    lines.set(o.bench, o);
    waiters.get(o.bench)?.(o);
  });
  readLines(p.stderr!, (l) => {
    stderrTail = (stderrTail + l + "\n").slice(-4000);
    try {
      const o = JSON.parse(l) as { level: string; msg: string };
      if (o.level !== "warn" && o.level !== "error") return;
      const key = `${o.level}\u0000${o.msg}`;
      const e = logCounts.get(key) ?? { level: o.level, msg: o.msg, count: 0, last: {} };
      e.count++;
      e.last = o;
      logCounts.set(key, e);
    } catch {
      // not a log line (a crash's stack): kept in the tail
    }
  });
  // Before the stop was asked for, the service exiting is a failure of the run.
  const died = (what: string) => exited.then((x) => Promise.reject(new Error(`the service exited (${x.code ?? x.signal}) before ${what}; stderr: ${stderrTail}`)));

  const serving = await Promise.race([waitLine("serving", 300_000), died("serving")]);
  const t0 = serving.at;
  const pid = serving["pid"] as number;
  console.log(`throughput: serving after ${t0 - spawnedAt} ms; intake until ${new Date(t0 + SECONDS * 1000).toISOString()}`);
  nc = await connect({ servers: nats.url, noAsyncTraces: true });
  jsm = await jetstreamManager(nc);
  db = new pg.Client({ connectionString: dbUrl });
  await db.connect();

  const pollers = [
    every(POLL_MS, async () => void polls.scrapes.push(await scrape())),
    every(POLL_MS, async () => void polls.streams.push(await streamPoll())),
    every(POLL_MS, async () => void polls.ready.push(await readyPoll())),
    every(POLL_MS, async () => void polls.freshness.push(await freshnessPoll())),
    every(5_000, () => readClosedPartitions(Date.now() - 30_000)),
    every(MEMORY_EVERY_MS, async () => {
      const t = Date.now();
      const proc = procStatus(pid);
      const cpu = machineCpu();
      const m = await scrape().catch(() => null);
      polls.memory.push({ t, rss: proc.rss, cpuS: proc.cpuS, machineBusy: cpu.busy, machineTotal: cpu.total, heapUsed: m?.heapUsed ?? NaN, heapTotal: m?.heapTotal ?? NaN, external: m?.external ?? NaN });
    }),
  ];

  // Intake, then the cut-off at a tick boundary.
  for (let next = t0 + 10_000; next < t0 + SECONDS * 1000; next += 10_000) {
    await sleep(next - Date.now());
    const s = polls.scrapes[polls.scrapes.length - 1];
    const j = polls.streams[polls.streams.length - 1];
    console.log(
      `throughput: +${Math.round((next - t0) / 1000)} s offered ${s === undefined ? "-" : s.accepted + s.skipped} dropped ${s?.dropped ?? "-"} queue ${s?.queue ?? "-"} ` +
        `in JetStream ${j?.samples ?? "-"} samples (${j?.lastSeq ?? "-"} messages) projector pending ${j === undefined ? "-" : j.pending + j.ackPending}`,
    );
  }
  await sleep(t0 + SECONDS * 1000 - Date.now());
  p.kill("SIGUSR2");
  const closed = await Promise.race([waitLine("intake_closed", 60_000), died("closing intake")]);
  const tCut = closed.at;
  console.log(`throughput: intake closed after ${tCut - t0} ms; draining`);

  // Drain: publish queue empty, nothing pending or unacked on the projector's durable, the stream no longer growing.
  let drainedAt = NaN;
  for (let stable = 0, lastSeq = -1; Date.now() - tCut < DRAIN_S * 1000; await sleep(500)) {
    // An overloaded service may not answer within the scrape's 10 s: not at rest yet.
    const read = await Promise.all([scrape(), streamPoll()]).catch(() => null);
    if (read === null) {
      stable = 0;
      continue;
    }
    const [m, j] = read;
    stable = m.queue === 0 && j.pending === 0 && j.ackPending === 0 && j.lastSeq === lastSeq ? stable + 1 : 0;
    lastSeq = j.lastSeq;
    if (stable >= 2) {
      drainedAt = Date.now();
      break;
    }
  }
  console.log(Number.isNaN(drainedAt) ? `throughput: NOT drained within ${DRAIN_S} s` : `throughput: drained ${drainedAt - tCut} ms after the cut-off`);
  for (const poller of pollers) await poller.stop();

  // Final counts, with the pipeline at rest.
  const finalScrape = await retry(scrape);
  const finalStream = await retry(streamPoll);
  await readClosedPartitions(Infinity);
  const rows = { rows: rowGroups };
  // Rows packed before their partition was read: in the counts, without a commit instant.
  const stored = await db.query<{ n: string }>("select (select count(*) from sample_rows) + (select coalesce(sum(n), 0) from sample_minutes) as n");
  const unread = Number(stored.rows[0]?.n ?? 0) - rowGroups.reduce((a, g) => a + Number(g.n), 0);
  if (unread !== 0) console.log(`throughput: ${unread} raw rows were packed before their commit instant was read`);
  const rollups = await db.query<{ n: string; minutes: string }>("select coalesce(sum(samples), 0)::bigint as n, count(*)::bigint as minutes from rollup_minutes");
  const alerts = await db.query<{ n: string }>("select count(*)::bigint as n from alerts");
  const mints = await db.query<{ n: string }>("select count(*)::bigint as n from (select asset from sample_rows union select asset from sample_minutes) x");
  // To the second (the start-up benchmark measures it closely): the first 200 of the 1 s polls.
  const firstReady = polls.ready.find((r) => r.status === 200);
  const readyMs = firstReady === undefined ? NaN : firstReady.t - spawnedAt;

  p.kill("SIGTERM");
  const stopped = await Promise.race([waitLine("stopped", 120_000), exited.then(() => null)]).catch(() => null);
  const exit = await Promise.race([exited, sleep(30_000).then(() => null)]);
  const loadAfter = loadAverage();

  const result = analyse({
    config: { assets: ASSETS, seconds: SECONDS, tickMs: TICK_MS, windowS: WINDOW_S, drainS: DRAIN_S, maxLagMs: MAX_LAG_MS },
    t0,
    tCut,
    drainedAt,
    servingMs: t0 - spawnedAt,
    readyMs,
    polls,
    closed,
    stopped,
    exit,
    finalScrape,
    finalStream,
    rowGroups: rows.rows.map((r) => ({ tsMs: Number(r.ts_ms), commitMs: r.c_ms === null ? null : Number(r.c_ms), seq: r.seq, n: Number(r.n) })),
    rollupSum: Number(rollups.rows[0]?.n ?? 0),
    rollupMinutes: Number(rollups.rows[0]?.minutes ?? 0),
    alerts: Number(alerts.rows[0]?.n ?? 0),
    mintsWithRows: Number(mints.rows[0]?.n ?? 0),
    logs: [...logCounts.values()],
  });
  await cleanup();
  // Everything collected, for a closer look at one run.
  const raw = process.env["BENCH_RAW_FILE"];
  if (raw !== undefined && raw !== "") writeFileSync(raw, JSON.stringify({ t0, tCut, drainedAt, polls, rowGroups: rows.rows, closed, stopped }));
  console.log(JSON.stringify(result.summary));
  writeThroughputSection(result, { loadBefore, loadAfter, versions });
  process.exit(0);
} catch (e) {
  console.error(`throughput: failed: ${e instanceof Error ? e.stack ?? e.message : String(e)}`);
  await cleanup();
  process.exit(1);
}
