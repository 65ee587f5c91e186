/**
 * Soak test (npm run soak; not in CI): the real service (`peg-oracle serve` from src/main.ts, FEED=sim, the shipped
 * catalog) runs for SOAK_MINUTES (default 30) with its simulated market at SOAK_RATE_MULTIPLIER (default 10) times the
 * production rate, against a nats-server and a PostgreSQL 15 this script starts in temporary directories on free
 * ports. Meanwhile it
 *
 * - samples the service's RSS (/proc/<pid>/status VmRSS), CPU (/proc/<pid>/stat) and, from its /metrics (on the
 *   metrics listener, METRICS_PORT), heap, external memory, event-loop lag and ingested samples, every
 *   SOAK_SAMPLE_SECONDS (10);
 * - drives an open-loop HTTP load of SOAK_HTTP_RATE (20) requests/s (fixed send schedule, never waiting for answers)
 *   over five public routes with node:http, latency from the scheduled send time to the end of the body;
 * - follows `/v1/ws` as a dashboard does (one client subscribed to `*`): detected -> received latency of every
 *   transition (its `ts` is the receipt's detected_at) and sample -> received of the coalesced `state` messages;
 * - reads the service's stdout (each transition JSON line once JetStream acknowledged it: detected -> acknowledged)
 *   and stderr (error and warning logs, the per-minute `stats` line with dropped samples).
 *
 * Reports RSS over time and its least-squares slope after a warm-up of one window, and per window of
 * SOAK_WINDOW_MINUTES (5): latency percentiles, errors and load. Rewrites the "soak" section of docs/benchmarks.md
 * (not with SOAK_NO_DOC=1) and exits 1 when the service died or stopped badly, any error occurred (HTTP non-2xx or
 * failure, WebSocket close or error message, an error log line, a transition acknowledged but never received on the
 * WebSocket), no transition was measured, the achieved sample rate fell below 90 % of the target, or the RSS slope
 * exceeds SOAK_MAX_RSS_SLOPE MiB/hour (default 64; only judged when the fit spans at least 10 minutes).
 *
 * Other knobs: SOAK_INCIDENT_EVERY_MS (mean time between simulated incidents; default 600000 / multiplier, so
 * incidents, and with them transitions, also come ten times as often), SIM_SEED (1), SOAK_JSON=<file> (write every raw
 * sample and window as JSON).
 */
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { Agent, request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import WebSocket from "ws";
import { loadShippedCatalog } from "../src/catalog/index.ts";
import { SIM_DEFAULT_INCIDENT_EVERY_MS, SIM_DEFAULT_TICK_MS } from "../src/streams/sources/simulated-market/index.ts";
import { startNats, type TestNats } from "../test/support/nats.ts";
import { startPostgres, type TestPostgres } from "../test/support/postgres.ts";
import { freePort } from "../test/support/ports.ts";
import { loadAverage, machineDescription, today, writeSection } from "./report.ts";
import { fit } from "./throughput-stats.ts";

const num = (k: string, d: number): number => {
  const v = process.env[k];
  const n = v === undefined || v === "" ? d : Number(v);
  if (!Number.isFinite(n) || n < 0) throw new Error(`${k} must be a non-negative number, got ${v}`);
  return n;
};
const MINUTES = num("SOAK_MINUTES", 30);
const WINDOW_MIN = num("SOAK_WINDOW_MINUTES", 5);
const MULTIPLIER = num("SOAK_RATE_MULTIPLIER", 10);
const TICK_MS = Math.max(1, Math.round(SIM_DEFAULT_TICK_MS / MULTIPLIER));
/** What the simulated market really runs at: the tick is a whole number of milliseconds. */
const EFFECTIVE_MULTIPLIER = SIM_DEFAULT_TICK_MS / TICK_MS;
const INCIDENT_EVERY_MS = Math.round(num("SOAK_INCIDENT_EVERY_MS", SIM_DEFAULT_INCIDENT_EVERY_MS / MULTIPLIER));
const HTTP_RATE = num("SOAK_HTTP_RATE", 20);
const SAMPLE_S = num("SOAK_SAMPLE_SECONDS", 10);
const MAX_SLOPE = num("SOAK_MAX_RSS_SLOPE", 64);
/** The RSS slope is only judged over at least this span (a shorter fit mostly measures the young generation). */
const MIN_FIT_MIN = 10;
const SEED = num("SIM_SEED", 1);
if (MINUTES <= 0 || WINDOW_MIN <= 0 || MULTIPLIER <= 0 || SAMPLE_S <= 0) throw new Error("SOAK_MINUTES, SOAK_WINDOW_MINUTES, SOAK_RATE_MULTIPLIER and SOAK_SAMPLE_SECONDS must be positive");

const DURATION_MS = MINUTES * 60_000;
const WINDOW_MS = WINDOW_MIN * 60_000;
const WINDOWS = Math.ceil(DURATION_MS / WINDOW_MS - 1e-9);
/** Warm-up excluded from the RSS slope: the first window. */
const WARMUP_MS = Math.min(WINDOW_MS, DURATION_MS);
const HTTP_TIMEOUT_MS = 10_000;
/** A transition acknowledged this long before the end must have reached the WebSocket client. */
const WS_GRACE_MS = 10_000;
const MAIN = fileURLToPath(new URL("../src/main.ts", import.meta.url));
const MiB = 2 ** 20;

const catalog = loadShippedCatalog();
const ASSETS = catalog.active.length;
const TARGET_RATE = (ASSETS * SIM_DEFAULT_TICK_MS) / TICK_MS;

// ---------------------------------------------------------------------------------------------------------------
// Measurements.

interface Window {
  readonly http: number[];
  httpErrors: number;
  readonly httpErrorKinds: Map<string, number>;
  /** Detected -> received on the WebSocket. */
  readonly wsTransition: number[];
  /** Sample -> received, coalesced `state` messages. */
  readonly wsState: number[];
  /** Detected -> acknowledged by JetStream (the service's stdout line). */
  readonly acked: number[];
  wsErrors: number;
  errorLogs: number;
  warnLogs: number;
  lagP99Max: number;
  /** The load generator's own lateness (its event loop), at most: it is inside every HTTP latency of the window. */
  clientLagMax: number;
}
const windows: Window[] = Array.from({ length: WINDOWS }, () => ({
  http: [],
  httpErrors: 0,
  httpErrorKinds: new Map(),
  wsTransition: [],
  wsState: [],
  acked: [],
  wsErrors: 0,
  errorLogs: 0,
  warnLogs: 0,
  lagP99Max: 0,
  clientLagMax: 0,
}));

interface Sample {
  /** Milliseconds since the soak started (t0). */
  readonly t: number;
  readonly rss: number;
  readonly heapUsed: number;
  readonly heapTotal: number;
  readonly external: number;
  /** Samples ingested by the engine so far (peg_oracle_samples_total, every result). */
  readonly ingested: number;
  /** Process CPU seconds (user + system) so far. */
  readonly cpu: number;
  readonly lagP99Ms: number;
}
const samples: Sample[] = [];

let t0 = 0;
let running = false;
const elapsed = () => performance.now() - t0;
const windowAt = (t: number): Window | undefined => (running || t < DURATION_MS ? windows[Math.min(WINDOWS - 1, Math.max(0, Math.floor(t / WINDOW_MS)))] : undefined);

const errorLines: string[] = [];
const warnMessages = new Map<string, number>();
/** Lines of the service that are not JSON (stderr, or stdout prefixed `stdout:`), for the summary. */
const otherStderr: string[] = [];
const noteError = (what: string) => {
  if (errorLines.length < 20) errorLines.push(what);
};
/** Cumulative link stats from the service's per-minute `stats` log line, with the soak time they arrived. */
const stats: { t: number; dropped: number; queued: number; projected: number }[] = [];
/** Alert id -> detected_at of every acknowledged transition (service stdout), and when it arrived. */
const acked = new Map<string, { at: number; detected: number }>();
const received = new Set<string>();
let wsDuplicates = 0;
let wsSeqGaps = 0;
let wsCloses = 0;
let wsSnapshots = 0;
/** Soak time at which the WebSocket subscription was live (its first snapshot): transitions acked before are not expected. */
let wsLiveAt = NaN;
/** Error log lines of the service at any time, shutdown included. */
let errorLogsTotal = 0;

// ---------------------------------------------------------------------------------------------------------------
// Processes and their cleanup on every way out.

let nats: TestNats | null = null;
let pg: TestPostgres | null = null;
let dataDir: string | null = null;
let child: ReturnType<typeof spawn> | null = null;
async function cleanup(): Promise<void> {
  if (child !== null && child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  await nats?.dispose().catch(() => {});
  await pg?.dispose().catch(() => {});
  nats = null;
  pg = null;
  if (dataDir !== null) rmSync(dataDir, { recursive: true, force: true });
  dataDir = null;
}
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
  process.on(sig, () => {
    console.error(`soak: ${sig}, cleaning up`);
    void cleanup().finally(() => process.exit(130));
  });
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const version = (cmd: string, args: string[]) => (spawnSync(cmd, args, { encoding: "utf8" }).stdout ?? "").trim().split("\n")[0] ?? "?";

// ---------------------------------------------------------------------------------------------------------------
// HTTP.

/**
 * Keep-alive, with idle pooled connections closed after 5 s: before uWS closes them (10 s idle), so a request is never
 * written on a connection the server is closing at that moment (the keep-alive race, seen as ECONNRESET when a stall
 * of the server made several idle connections reach the timeout together).
 */
const agent = new Agent({ keepAlive: true, maxSockets: 64, timeout: 5_000 });
let port = 0;
/** The metrics listener's port (METRICS_PORT): /metrics is not served on the public port. */
let metricsPort = 0;

function get(path: string, to = port): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port: to, path, agent, timeout: HTTP_TIMEOUT_MS }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
      res.on("error", reject);
    });
    req.on("timeout", () => req.destroy(new Error(`timeout after ${HTTP_TIMEOUT_MS} ms`)));
    req.on("error", reject);
    req.end();
  });
}

const symbols = catalog.active.map((a) => encodeURIComponent(a.symbol));
/** The light client load: one route after the other, assets in turn. */
const ROUTES = [
  () => "/v1/peg/feed",
  (i: number) => `/v1/assets/${symbols[i % symbols.length]}/state`,
  (i: number) => `/v1/assets/${symbols[i % symbols.length]}`,
  (i: number) => `/v1/assets/${symbols[i % symbols.length]}/history`,
  () => "/v1/alerts?limit=20",
];
const routeTemplates = ["GET /v1/peg/feed", "GET /v1/assets/{symbol}/state", "GET /v1/assets/{symbol}", "GET /v1/assets/{symbol}/history", "GET /v1/alerts?limit=20"];
const perRoute = routeTemplates.map(() => [] as number[]);
let httpInFlight = 0;
let httpSent = 0;
let generatorLagMax = 0;

async function httpLoad(): Promise<void> {
  if (HTTP_RATE === 0) return;
  const interval = 1000 / HTTP_RATE;
  for (let i = 0; ; i++) {
    const due = i * interval;
    if (due >= DURATION_MS) return;
    const wait = due - elapsed();
    if (wait > 0) await sleep(wait);
    const w = windows[Math.min(WINDOWS - 1, Math.floor(due / WINDOW_MS))]!;
    w.clientLagMax = Math.max(w.clientLagMax, elapsed() - due);
    generatorLagMax = Math.max(generatorLagMax, w.clientLagMax);
    const r = i % ROUTES.length;
    const path = ROUTES[r]!(Math.floor(i / ROUTES.length));
    httpInFlight++;
    httpSent++;
    get(path)
      .then(({ status }) => {
        if (status >= 200 && status < 300) {
          const ms = elapsed() - due;
          w.http.push(ms);
          perRoute[r]!.push(ms);
        } else {
          w.httpErrors++;
          w.httpErrorKinds.set(`${status}`, (w.httpErrorKinds.get(`${status}`) ?? 0) + 1);
          noteError(`HTTP ${status} ${path} at ${(due / 1000).toFixed(1)} s`);
        }
      })
      .catch((e: unknown) => {
        const why = e instanceof Error ? e.message : String(e);
        w.httpErrors++;
        w.httpErrorKinds.set(why, (w.httpErrorKinds.get(why) ?? 0) + 1);
        noteError(`HTTP failure ${path} at ${(due / 1000).toFixed(1)} s: ${why}`);
      })
      .finally(() => httpInFlight--);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The WebSocket client: subscribed to `*`, resuming with since_seq should it be closed.

let ws: WebSocket | null = null;
let lastSeq = 0;
let wsWanted = true;

function connectWs(): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = new WebSocket(`ws://127.0.0.1:${port}/v1/ws`);
    ws = s;
    s.on("open", () => {
      s.send(JSON.stringify({ op: "subscribe", assets: ["*"], ...(lastSeq > 0 ? { since_seq: lastSeq } : {}) }));
      resolve();
    });
    s.on("message", (data: Buffer) => {
      const now = Date.now();
      const m = JSON.parse(data.toString()) as { type: string; seq?: number; alert_id?: string; ts?: string; updated_at?: string | null; error?: string; message?: string };
      const w = windowAt(elapsed());
      if (m.type === "transition") {
        if (received.has(m.alert_id!)) wsDuplicates++;
        received.add(m.alert_id!);
        if (lastSeq > 0 && m.seq! !== lastSeq + 1) wsSeqGaps++;
        lastSeq = Math.max(lastSeq, m.seq!);
        w?.wsTransition.push(now - Date.parse(m.ts!));
      } else if (m.type === "state") {
        if (m.updated_at != null) w?.wsState.push(now - Date.parse(m.updated_at));
      } else if (m.type === "snapshot") {
        wsSnapshots++;
        if (Number.isNaN(wsLiveAt)) wsLiveAt = elapsed();
      }
      else if (m.type === "error") {
        if (w !== undefined) w.wsErrors++;
        noteError(`WebSocket error message: ${m.error}: ${m.message}`);
      }
    });
    s.on("error", (e) => {
      if (!wsWanted) return;
      const w = windowAt(elapsed());
      if (w !== undefined) w.wsErrors++;
      noteError(`WebSocket error: ${e.message}`);
      reject(e);
    });
    s.on("close", (code, reason) => {
      if (!wsWanted) return;
      wsCloses++;
      const w = windowAt(elapsed());
      if (w !== undefined) w.wsErrors++;
      noteError(`WebSocket closed ${code} ${reason.toString()} at ${(elapsed() / 1000).toFixed(1)} s; reconnecting with since_seq ${lastSeq}`);
      setTimeout(() => void connectWs().catch(() => {}), 1000);
    });
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Sampling the service.

function procStatus(pid: number): { rss: number; cpu: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = Number(/VmRSS:\s+(\d+)\s+kB/.exec(status)?.[1] ?? "NaN");
  // /proc/<pid>/stat: fields 14 and 15 (utime, stime) in clock ticks, after the parenthesised command name.
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ticks = Number(fields[11]) + Number(fields[12]);
  return { rss: kb * 1024, cpu: ticks / 100 };
}

function metricsOf(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (line.startsWith("#") || line === "") continue;
    const sp = line.lastIndexOf(" ");
    const name = line.slice(0, sp).replace(/\{.*\}$/, "");
    out.set(name, (out.get(name) ?? 0) + Number(line.slice(sp + 1)));
  }
  return out;
}

async function sampleOnce(pid: number): Promise<void> {
  const t = elapsed();
  const { rss, cpu } = procStatus(pid);
  let m = new Map<string, number>();
  try {
    const r = await get("/metrics", metricsPort);
    if (r.status === 200) m = metricsOf(r.body);
  } catch {
    // Counted by the load when the service is unreachable; the RSS sample still stands.
  }
  const p = "peg_oracle_";
  const lag = (m.get(`${p}nodejs_eventloop_lag_p99_seconds`) ?? NaN) * 1000;
  samples.push({
    t,
    rss,
    heapUsed: m.get(`${p}nodejs_heap_size_used_bytes`) ?? NaN,
    heapTotal: m.get(`${p}nodejs_heap_size_total_bytes`) ?? NaN,
    external: m.get(`${p}nodejs_external_memory_bytes`) ?? NaN,
    ingested: m.get(`${p}samples_total`) ?? NaN,
    cpu,
    lagP99Ms: lag,
  });
  const w = windowAt(t);
  if (w !== undefined && Number.isFinite(lag)) w.lagP99Max = Math.max(w.lagP99Max, lag);
}

// ---------------------------------------------------------------------------------------------------------------
// Statistics.

const sortNum = (xs: readonly number[]) => [...xs].sort((a, b) => a - b);
/** Nearest-rank percentile of a sorted list. */
const pct = (sorted: readonly number[], p: number) => (sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!);
function summary(xs: readonly number[]) {
  const s = sortNum(xs);
  return { count: s.length, p50: pct(s, 50), p90: pct(s, 90), p99: pct(s, 99), max: s.length === 0 ? NaN : s[s.length - 1]! };
}

const fmt = (x: number) => (Number.isFinite(x) ? Math.round(x).toLocaleString("en-US") : "-");
const ms = (x: number) => (!Number.isFinite(x) ? "-" : x < 10 ? `${x.toFixed(1)} ms` : `${fmt(x)} ms`);
const mib = (b: number) => (Number.isFinite(b) ? `${(b / MiB).toFixed(1)}` : "-");
const minutes = (t: number) => (t / 60_000).toFixed(t % 60_000 === 0 ? 0 : 1);

// ---------------------------------------------------------------------------------------------------------------
// The run.

const loadBefore = loadAverage();
const failures: string[] = [];
let childExit: { code: number | null; signal: NodeJS.Signals | null; at: number } | null = null;
let stopMs = NaN;
let servingMs = NaN;
let readyMs = NaN;
const versions = { nats: version("nats-server", ["--version"]), pg: version("/usr/lib/postgresql/15/bin/postgres", ["--version"]) };

console.log(
  `soak: ${MINUTES} min, windows of ${WINDOW_MIN} min, ${ASSETS} assets at ${EFFECTIVE_MULTIPLIER}x (tick ${TICK_MS} ms, ${fmt(TARGET_RATE)} samples/s), ` +
    `incidents every ${fmt(INCIDENT_EVERY_MS / 1000)} s on average, HTTP ${HTTP_RATE} req/s`,
);
try {
  nats = await startNats();
  pg = await startPostgres();
  dataDir = mkdtempSync(join(tmpdir(), "peg-soak-"));
  port = await freePort();
  metricsPort = await freePort();
  const env: Record<string, string> = {
    PATH: process.env["PATH"] ?? "",
    HOME: process.env["HOME"] ?? "/tmp",
    NATS_URL: nats.url,
    DATABASE_URL: await pg.createDatabase(),
    DATA_DIR: dataDir,
    HOST: "127.0.0.1",
    PORT: String(port),
    METRICS_PORT: String(metricsPort),
    // DATABASE_URL is set: the private keys in it are sealed under a key of this run.
    SECRETS_KEY: randomBytes(32).toString("base64"),
    FEED: "sim",
    SIM_SEED: String(SEED),
    SIM_INCIDENT_EVERY_MS: String(INCIDENT_EVERY_MS),
    // The load is one client address at SOAK_HTTP_RATE: above the public default of 60 per minute.
    RATE_LIMIT_PER_MIN: "1000000",
    LOG_LEVEL: "info",
    SIM_TICK_MS: String(TICK_MS),
  };
  const spawned = performance.now();
  const p = spawn(process.execPath, ["--max-semi-space-size=64", "--import", "tsx", MAIN, "serve"], { env, stdio: ["ignore", "pipe", "pipe"] });
  child = p;
  const pid = p.pid!;
  const exited = new Promise<void>((resolve) =>
    p.once("exit", (code, signal) => {
      childExit = { code, signal, at: t0 === 0 ? -1 : elapsed() };
      resolve();
    }),
  );
  let serving: () => void = () => {};
  const isServing = new Promise<void>((r) => (serving = r));
  const lines = (stream: NodeJS.ReadableStream, onLine: (l: string) => void) => {
    let buf = "";
    stream.on("data", (c: Buffer) => {
      buf += c.toString();
      const ls = buf.split("\n");
      buf = ls.pop()!;
      for (const l of ls) if (l !== "") onLine(l);
    });
  };
  lines(p.stdout!, (l) => {
    const now = Date.now();
    let o: { ts: string; alert_id: string };
    try {
      o = JSON.parse(l) as typeof o;
    } catch {
      if (otherStderr.length < 20) otherStderr.push(`stdout: ${l.slice(0, 300)}`);
      return;
    }
    const detected = Date.parse(o.ts);
    acked.set(o.alert_id, { at: t0 === 0 ? 0 : elapsed(), detected });
    windowAt(t0 === 0 ? 0 : elapsed())?.acked.push(now - detected);
  });
  lines(p.stderr!, (l) => {
    let o: { level?: string; msg?: string; link?: { droppedSamples: number; queuedSamples: number }; projected?: { samples: { projected: number } } };
    try {
      o = JSON.parse(l) as typeof o;
    } catch {
      if (otherStderr.length < 20) otherStderr.push(l.slice(0, 300));
      return;
    }
    const t = t0 === 0 ? 0 : elapsed();
    if (o.msg === "serving") serving();
    if (o.msg === "stats" && o.link !== undefined) stats.push({ t, dropped: o.link.droppedSamples, queued: o.link.queuedSamples, projected: o.projected?.samples.projected ?? NaN });
    if (o.level === "error") {
      errorLogsTotal++;
      const w = windowAt(t);
      if (w !== undefined) w.errorLogs++;
      noteError(`service error log at ${(t / 1000).toFixed(1)} s: ${l.slice(0, 300)}`);
    } else if (o.level === "warn") {
      const w = windowAt(t);
      if (w !== undefined) w.warnLogs++;
      warnMessages.set(o.msg ?? "?", (warnMessages.get(o.msg ?? "?") ?? 0) + 1);
    }
  });

  await Promise.race([isServing, exited, sleep(180_000)]);
  if (childExit !== null) throw new Error(`the service exited before serving: ${JSON.stringify(childExit)} ${errorLines.join("; ")} ${otherStderr.join("; ")}`);
  servingMs = performance.now() - spawned;
  for (const deadline = performance.now() + 60_000; performance.now() < deadline; await sleep(250)) {
    const r = await get("/readyz").catch(() => null);
    if (r?.status === 200) {
      readyMs = performance.now() - spawned;
      break;
    }
  }
  console.log(`soak: serving after ${fmt(servingMs)} ms, /readyz 200 after ${fmt(readyMs)} ms; running for ${MINUTES} min`);

  t0 = performance.now();
  running = true;
  await connectWs();
  const sampler = (async () => {
    for (let i = 0; i * SAMPLE_S * 1000 <= DURATION_MS && childExit === null; i++) {
      const wait = i * SAMPLE_S * 1000 - elapsed();
      if (wait > 0) await sleep(wait);
      if (childExit !== null) break;
      await sampleOnce(pid).catch((e: unknown) => noteError(`sampling failed: ${e instanceof Error ? e.message : String(e)}`));
      const last = samples[samples.length - 1];
      if (last !== undefined && i % Math.max(1, Math.round(60 / SAMPLE_S)) === 0) {
        console.log(
          `soak: ${minutes(Math.round(last.t / 1000) * 1000)} min: RSS ${mib(last.rss)} MiB, heap ${mib(last.heapUsed)} MiB, ` +
            `${fmt(last.ingested)} samples, ${acked.size} transitions, ${errorLines.length} errors`,
        );
      }
    }
  })();
  const load = httpLoad();
  await Promise.race([Promise.all([sampler, load]), exited]);
  running = false;
  if (childExit !== null) failures.push(`the service died during the run: ${JSON.stringify(childExit)}`);
  // Let the last requests and transitions arrive.
  for (const deadline = performance.now() + HTTP_TIMEOUT_MS; httpInFlight > 0 && performance.now() < deadline; ) await sleep(50);
  await sleep(3000);
  wsWanted = false;
  (ws as WebSocket | null)?.close();
  if (childExit === null) {
    const stopFrom = performance.now();
    p.kill("SIGTERM");
    await Promise.race([exited, sleep(60_000)]);
    if (childExit === null) {
      failures.push("the service did not stop within 60 s of SIGTERM (killed)");
      p.kill("SIGKILL");
      await exited;
    } else {
      stopMs = performance.now() - stopFrom;
      const ex = childExit as { code: number | null; signal: NodeJS.Signals | null };
      if (ex.code !== 0) failures.push(`the service exited with ${ex.code ?? ex.signal} after SIGTERM`);
    }
  }
} finally {
  agent.destroy();
  await cleanup();
}
const loadAfter = loadAverage();

// ---------------------------------------------------------------------------------------------------------------
// Results.

const httpAll = windows.flatMap((w) => w.http);
const httpErrors = windows.reduce((a, w) => a + w.httpErrors, 0);
const wsErrors = windows.reduce((a, w) => a + w.wsErrors, 0);
const errorLogs = errorLogsTotal;
const warnLogs = windows.reduce((a, w) => a + w.warnLogs, 0);
const wsTransitions = windows.reduce((a, w) => a + w.wsTransition.length, 0);
const missed = [...acked].filter(([id, a]) => !received.has(id) && a.at > wsLiveAt + 1000 && a.at < DURATION_MS - WS_GRACE_MS).map(([id]) => id);
const fitFrom = WARMUP_MS;
const fitted = samples.filter((s) => s.t >= fitFrom - 1);
const fitSpanMs = fitted.length === 0 ? 0 : fitted[fitted.length - 1]!.t - fitted[0]!.t;
const rssFit = fit(fitted.map((s) => [s.t / 3_600_000, s.rss / MiB]));
const heapFit = fit(fitted.filter((s) => Number.isFinite(s.heapUsed)).map((s) => [s.t / 3_600_000, s.heapUsed / MiB]));
const extFit = fit(fitted.filter((s) => Number.isFinite(s.external)).map((s) => [s.t / 3_600_000, s.external / MiB]));
const slopeJudged = fitSpanMs >= MIN_FIT_MIN * 60_000;
/** Samples ingested per second between two soak times (from the sampled counter). */
function rateBetween(from: number, to: number): number {
  const a = samples.filter((s) => s.t >= from - 1 && s.t <= to + 1 && Number.isFinite(s.ingested));
  if (a.length < 2) return NaN;
  const first = a[0]!;
  const last = a[a.length - 1]!;
  return ((last.ingested - first.ingested) / (last.t - first.t)) * 1000;
}
function cpuBetween(from: number, to: number): number {
  const a = samples.filter((s) => s.t >= from - 1 && s.t <= to + 1);
  if (a.length < 2) return NaN;
  return ((a[a.length - 1]!.cpu - a[0]!.cpu) / ((a[a.length - 1]!.t - a[0]!.t) / 1000)) * 100;
}
/** Samples dropped by the engine link within a window (cumulative counter from the per-minute stats lines). */
function droppedBetween(from: number, to: number): number {
  const before = stats.filter((s) => s.t < from).at(-1)?.dropped ?? 0;
  const inside = stats.filter((s) => s.t >= from && s.t < to).at(-1)?.dropped;
  return inside === undefined ? NaN : inside - before;
}
const steadyRate = rateBetween(WARMUP_MS < DURATION_MS ? WARMUP_MS : 0, DURATION_MS);
const droppedTotal = stats.at(-1)?.dropped ?? 0;

if (httpErrors > 0) failures.push(`${httpErrors} HTTP errors`);
if (wsErrors > 0) failures.push(`${wsErrors} WebSocket closes or errors`);
if (errorLogs > 0) failures.push(`${errorLogs} error log lines from the service`);
if (missed.length > 0) failures.push(`${missed.length} acknowledged transitions never reached the WebSocket client`);
if (wsTransitions === 0) failures.push("no transition reached the WebSocket client: no transition latency measured");
if (!(steadyRate >= 0.9 * TARGET_RATE)) failures.push(`achieved ${fmt(steadyRate)} samples/s, below 90 % of the target ${fmt(TARGET_RATE)}`);
if (slopeJudged && !(rssFit.slope <= MAX_SLOPE)) failures.push(`RSS slope ${rssFit.slope.toFixed(1)} MiB/hour above ${MAX_SLOPE} MiB/hour`);
const passed = failures.length === 0;

const windowLabel = (i: number) => `${minutes(i * WINDOW_MS)}-${minutes(Math.min(DURATION_MS, (i + 1) * WINDOW_MS))} min`;
const httpRows = windows.map((w, i) => {
  const s = summary(w.http);
  return `| ${windowLabel(i)} | ${fmt(s.count)} | ${ms(s.p50)} | ${ms(s.p90)} | ${ms(s.p99)} | ${ms(s.max)} | ${w.httpErrors}${w.httpErrorKinds.size > 0 ? ` (${[...w.httpErrorKinds].map(([k, n]) => `${k}: ${n}`).join(", ")})` : ""} | ${ms(w.clientLagMax)} |`;
});
const transitionRows = windows.map((w, i) => {
  const a = summary(w.acked);
  const t = summary(w.wsTransition);
  const st = summary(w.wsState);
  return `| ${windowLabel(i)} | ${fmt(a.count)} | ${ms(a.p50)} / ${ms(a.p99)} / ${ms(a.max)} | ${fmt(t.count)} | ${ms(t.p50)} | ${ms(t.p90)} | ${ms(t.p99)} | ${ms(t.max)} | ${fmt(st.count)} | ${ms(st.p50)} / ${ms(st.p99)} / ${ms(st.max)} | ${w.wsErrors} |`;
});
const healthRows = windows.map((w, i) => {
  const from = i * WINDOW_MS;
  const to = Math.min(DURATION_MS, (i + 1) * WINDOW_MS);
  const end = samples.filter((s) => s.t <= to + 1).at(-1);
  return `| ${windowLabel(i)} | ${fmt(rateBetween(from, to))} | ${fmt(droppedBetween(from, to))} | ${fmt(cpuBetween(from, to))} % | ${ms(w.lagP99Max)} | ${mib(end?.rss ?? NaN)} MiB | ${w.errorLogs} | ${w.warnLogs} |`;
});
/** One RSS row per minute (the sample nearest each whole minute), or per sample when the run is shorter than 5 minutes. */
const rowEvery = MINUTES < 5 ? SAMPLE_S * 1000 : 60_000;
const rssRows: string[] = [];
for (let t = 0; t <= DURATION_MS; t += rowEvery) {
  const s = samples.reduce<Sample | null>((best, x) => (best === null || Math.abs(x.t - t) < Math.abs(best.t - t) ? x : best), null);
  if (s === null || Math.abs(s.t - t) > SAMPLE_S * 1000) continue;
  rssRows.push(`| ${minutes(Math.round(s.t / 1000) * 1000)} | ${mib(s.rss)} | ${mib(s.heapUsed)} | ${mib(s.heapTotal)} | ${mib(s.external)} | ${fmt(s.ingested)} |`);
}
const routeRows = perRoute.map((xs, r) => {
  const s = summary(xs);
  return `| \`${routeTemplates[r]}\` | ${fmt(s.count)} | ${ms(s.p50)} | ${ms(s.p90)} | ${ms(s.p99)} | ${ms(s.max)} |`;
});

const result = {
  passed,
  failures,
  minutes: MINUTES,
  windowMinutes: WINDOW_MIN,
  multiplier: EFFECTIVE_MULTIPLIER,
  tickMs: TICK_MS,
  targetRate: TARGET_RATE,
  steadyRate,
  rssSlopeMiBPerHour: rssFit.slope,
  rssR2: rssFit.r2,
  heapSlopeMiBPerHour: heapFit.slope,
  externalSlopeMiBPerHour: extFit.slope,
  slopeJudged,
  rssFirst: samples[0]?.rss,
  rssLast: samples.at(-1)?.rss,
  rssMax: Math.max(...samples.map((s) => s.rss)),
  http: { sent: httpSent, ...summary(httpAll), errors: httpErrors, generatorLagMaxMs: generatorLagMax },
  transitions: { acked: acked.size, received: received.size, missed: missed.length, duplicates: wsDuplicates, seqGaps: wsSeqGaps, closes: wsCloses, snapshots: wsSnapshots },
  droppedSamples: droppedTotal,
  errorLogs,
  warnLogs,
  warnings: Object.fromEntries(warnMessages),
  errors: errorLines,
  otherStderr,
  servingMs,
  readyMs,
  stopMs,
};
console.log(JSON.stringify(result, null, 1));
console.log("\nHTTP latency per window (open loop, scheduled send -> body read):");
console.log(httpRows.join("\n"));
console.log("\nTransitions per window:");
console.log(transitionRows.join("\n"));
console.log("\nLoad and health per window:");
console.log(healthRows.join("\n"));

const jsonOut = process.env["SOAK_JSON"];
if (jsonOut !== undefined && jsonOut !== "") {
  writeFileSync(jsonOut, JSON.stringify({ result, samples, stats, windows: windows.map((w) => ({ ...w, httpErrorKinds: Object.fromEntries(w.httpErrorKinds) })) }));
  console.log(`wrote ${jsonOut}`);
}

const machine = machineDescription();
const settings = `SOAK_MINUTES=${MINUTES}, SOAK_WINDOW_MINUTES=${WINDOW_MIN}, SOAK_RATE_MULTIPLIER=${MULTIPLIER}, SOAK_HTTP_RATE=${HTTP_RATE}, SOAK_INCIDENT_EVERY_MS=${INCIDENT_EVERY_MS}, SIM_SEED=${SEED}`;
const slopeLine = `${rssFit.slope >= 0 ? "+" : ""}${rssFit.slope.toFixed(1)} MiB/hour`;
const verdict = passed
  ? "**Passed**: the service ran to the end and stopped in order (exit 0), no HTTP error, no WebSocket close or error, no error log line, every acknowledged transition reached the WebSocket client, the target sample rate was held" +
    (slopeJudged ? `, and the RSS slope is within ${MAX_SLOPE} MiB/hour.` : `; the RSS slope was not judged (fit over ${minutes(fitSpanMs)} min, under ${MIN_FIT_MIN} min).`)
  : `**Failed**: ${failures.join("; ")}.`;
const section = `<!-- soak:start -->
## Soak: ${minutes(DURATION_MS)} minutes at ${EFFECTIVE_MULTIPLIER}x the production rate

Command: \`${MINUTES === 30 && WINDOW_MIN === 5 ? "" : `SOAK_MINUTES=${MINUTES} SOAK_WINDOW_MINUTES=${WINDOW_MIN} `}npm run soak\` (\`node --import tsx bench/soak.ts\`; not in CI; here ${settings}).
Machine: ${machine}; ${versions.nats} and ${versions.pg.replace(/^postgres \(PostgreSQL\) /, "PostgreSQL ")} started by the soak on the same machine (PostgreSQL with fsync off, as in the tests). Measured ${today()} (load average ${loadBefore} at the start, ${loadAfter} at the end).

The service is the real \`peg-oracle serve\` in its own process (\`src/main.ts serve\`, \`--max-semi-space-size=64\` as
\`npm start\`; external nats-server and PostgreSQL, \`FEED=sim\`, the shipped catalog: ${ASSETS} active assets). The
production rate is the simulated market's default of one sample per asset per second (${ASSETS} samples/s); here its tick
is ${TICK_MS} ms (\`SIM_TICK_MS=${TICK_MS}\`), ${fmt(TARGET_RATE)} samples/s, with the same price
dynamics and incident shapes per unit of time, and incidents every ${fmt(INCIDENT_EVERY_MS / 1000)} s on average
(production: ${fmt(SIM_DEFAULT_INCIDENT_EVERY_MS / 1000)} s), so transitions keep coming. Achieved after the warm-up: ${fmt(steadyRate)} samples/s
ingested. Each sample is evaluated, published to JetStream and projected into PostgreSQL; nobody registered webhooks.

Load: ${HTTP_RATE} HTTP requests/s, open loop (sent on a fixed schedule whatever the answers; latency from the scheduled
send to the end of the body, node:http with keep-alive) over \`/v1/peg/feed\`, \`/v1/assets/{symbol}/state\`,
\`/v1/assets/{symbol}\`, \`/v1/assets/{symbol}/history\` and \`/v1/alerts?limit=20\` in turn (assets in turn), and one
WebSocket client on \`/v1/ws\` subscribed to \`*\`. RSS is the service's VmRSS (\`/proc/<pid>/status\`), heap and external
memory its own \`/metrics\` (the metrics listener, \`METRICS_PORT\`), every ${SAMPLE_S} s.

Memory (one row per ${rowEvery === 60_000 ? "minute" : `${SAMPLE_S} s`}; MiB):

| minute | RSS | heap used | heap total | external | samples ingested |
|---:|---:|---:|---:|---:|---:|
${rssRows.join("\n")}

RSS slope (least squares over the ${fitted.length} samples after a warm-up of the first window, ${minutes(fitFrom)}-${minutes(DURATION_MS)} min): **${slopeLine}**
(r² ${Number.isFinite(rssFit.r2) ? rssFit.r2.toFixed(2) : "-"}); heap used ${heapFit.slope.toFixed(1)} MiB/hour, external ${extFit.slope.toFixed(1)} MiB/hour. RSS ${mib(result.rssFirst ?? NaN)} MiB at the
start, ${mib(result.rssLast ?? NaN)} MiB at the end, at most ${mib(result.rssMax)} MiB. Threshold: ${MAX_SLOPE} MiB/hour (\`SOAK_MAX_RSS_SLOPE\`), judged only
when the fit spans at least ${MIN_FIT_MIN} minutes (below that the young generation, up to three 64 MiB semi-spaces, dominates).

HTTP latency per window (every route together; errors = non-2xx answers, failures and ${HTTP_TIMEOUT_MS / 1000} s timeouts; client lag:
how late the load generator itself sent, at most, which is part of the latency, as the machine is shared):

| window | requests | p50 | p90 | p99 | max | errors | client lag max |
|---|---:|---:|---:|---:|---:|---:|---:|
${httpRows.join("\n")}

Per route, whole run:

| route | requests | p50 | p90 | p99 | max |
|---|---:|---:|---:|---:|---:|
${routeRows.join("\n")}

Transitions per window. "Acknowledged": the service's stdout line, printed once JetStream acknowledged the transition,
minus its \`detected_at\`. "WebSocket": receive time of the \`transition\` message minus its \`ts\` (= \`detected_at\`):
decision, JetStream, the API's ordered consumer, the hub, the socket. "state": the coalesced (at most 4/s per asset)
\`state\` messages, receive time minus \`updated_at\` (the sample's time). Closes/errors: WebSocket closes and \`error\`
messages.

| window | acknowledged | detected -> acked p50 / p99 / max | on the WebSocket | detected -> received p50 | p90 | p99 | max | state messages | sample -> state p50 / p99 / max | closes/errors |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
${transitionRows.join("\n")}

${fmt(acked.size)} transitions acknowledged, ${fmt(received.size)} received on the WebSocket (${missed.length} missing, ${wsDuplicates} duplicates, ${wsSeqGaps} sequence gaps).

Load and health per window (samples/s from \`peg_oracle_samples_total\`; dropped: samples the engine link dropped, from
the service's per-minute \`stats\` log line; CPU of the service process, 100 % = one core; event-loop lag: the highest
p99 of \`/metrics\` over the window's scrapes):

| window | samples/s | dropped | service CPU | event-loop lag p99 | RSS at the end | error logs | warnings |
|---|---:|---:|---:|---:|---:|---:|---:|
${healthRows.join("\n")}
${warnMessages.size > 0 ? `\nWarnings logged: ${[...warnMessages].map(([m, n]) => `"${m}" x${n}`).join(", ")}.\n` : ""}
Service: serving ${fmt(servingMs)} ms after spawn, \`/readyz\` 200 after ${fmt(readyMs)} ms; ordered stop after SIGTERM ${fmt(stopMs)} ms.

${verdict}
<!-- soak:end -->`;

if (process.env["SOAK_NO_DOC"] !== "1") writeSection("soak", section);
console.log(passed ? "soak: PASSED" : `soak: FAILED: ${failures.join("; ")}`);
process.exit(passed ? 0 : 1);
