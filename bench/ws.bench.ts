/**
 * WebSocket benchmark (npm run bench:ws): delivery latency of transitions from the decision to subscribed `/v1/ws`
 * clients, with 1,000 / 5,000 / 10,000 clients, served by the production transport (uWebSockets.js,
 * src/http/ws/uws.ts) and, in the same run, by the `ws` library (bench/ws-transport.ts) in front of the same WsHub
 * and live feed. Rewrites the "ws" section of docs/benchmarks.md.
 *
 * Topology: this process starts its own nats-server (temporary store, free port, nats.conf), creates the streams
 * (`ensureTopology`) and plays the engine: it publishes transitions straight into PEG_TRANSITIONS
 * (`peg.transition.<mint>`, msgID = alert id), noting the monotonic instant of each decision. Per client count and
 * server (the servers' order alternates per count), a fresh server process (bench/ws-server.ts: WsHub +
 * startLiveFeed + transport) and fresh client processes (bench/ws-client.ts, WebSocket clients on distinct loopback
 * source addresses, subscribed to `*`) are started. Server and nats-server are pinned to core 0, the clients to core 1
 * (taskset, when available). Phases per trial: a warm-up, isolated transitions (one at a time, each delivered to
 * every client before the next), then the burst (BENCH_WS_TRANSITIONS in bursts of BENCH_WS_BURST published 1 ms
 * apart). Latency = client receive time - decision time, over every (client, transition) delivery, on
 * CLOCK_MONOTONIC (the same clock in every process).
 *
 * Env: BENCH_WS_CLIENTS (comma-separated counts, default 1000,5000,10000), BENCH_WS_TRANSITIONS (200),
 * BENCH_WS_BURST (50), BENCH_WS_ISOLATED (20), BENCH_WS_PROCS (client processes; default one per 2,500 clients),
 * BENCH_WS_SERVERS (uws,ws), BENCH_WS_CLIENT (raw: minimal RFC 6455 client, default; ws: the `ws` library's client),
 * BENCH_PIN=0 (no taskset), BENCH_WS_DEBUG=1 (per transition: NATS leg, first / median / last client),
 * BENCH_WS_NO_DOC=1 (do not rewrite docs/benchmarks.md).
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { connect as tcpConnect, createServer } from "node:net";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { jetstream, type JetStreamClient } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { loadShippedCatalog } from "../src/catalog/index.ts";
import { ensureTopology, subjects } from "../src/streams/jetstream/index.ts";
import { CLIENTS_PER_ADDRESS, monoMs, type ClientCommand, type ClientImpl, type ClientReply, type WsServerKind, type WsServerStats } from "./ws-common.ts";
import { loadAverage, machineDescription, writeSection } from "./report.ts";

const env = (k: string, d: string) => process.env[k] ?? d;
const COUNTS = env("BENCH_WS_CLIENTS", "1000,5000,10000")
  .split(",")
  .map((s) => Number(s.trim()))
  .filter((n) => Number.isInteger(n) && n > 0);
const TRANSITIONS = Number(env("BENCH_WS_TRANSITIONS", "200"));
const BURST = Math.max(1, Number(env("BENCH_WS_BURST", "50")));
const ISOLATED = Number(env("BENCH_WS_ISOLATED", "20"));
const WARMUP = 20;
const CLIENT_IMPL: ClientImpl = env("BENCH_WS_CLIENT", "raw") === "ws" ? "ws" : "raw";
/** Clients per client process (BENCH_WS_PROCS fixes the number of processes instead). */
const PER_PROC = 2500;
const PROCS = process.env["BENCH_WS_PROCS"] === undefined ? null : Math.max(1, Number(process.env["BENCH_WS_PROCS"]));
const procsFor = (count: number) => Math.min(PROCS ?? Math.ceil(count / PER_PROC), Math.ceil(count / CLIENTS_PER_ADDRESS));
const PIN = process.env["BENCH_PIN"] !== "0" && cpus().length >= 2 && spawnSync("taskset", ["-c", "0", "true"]).status === 0;
const pinned = (cpu: number, cmd: string, args: readonly string[]): [string, string[]] =>
  PIN ? ["taskset", ["-c", String(cpu), cmd, ...args]] : [cmd, [...args]];
const SERVER_CPU = 0;
const CLIENT_CPU = 1;
const KINDS = env("BENCH_WS_SERVERS", "uws,ws")
  .split(",")
  .map((s) => s.trim())
  .filter((s): s is WsServerKind => s === "uws" || s === "ws");
const here = (f: string) => fileURLToPath(new URL(f, import.meta.url));

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------------------------------------------
// Processes, and their cleanup on every way out.

const children = new Set<ChildProcess>();
const tempDirs = new Set<string>();
function cleanup(): void {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  children.clear();
  for (const d of tempDirs) rmSync(d, { recursive: true, force: true });
  tempDirs.clear();
}
process.on("exit", cleanup);
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
  process.on(sig, () => {
    cleanup();
    process.exit(130);
  });
}

function track(c: ChildProcess): ChildProcess {
  children.add(c);
  c.once("exit", () => children.delete(c));
  return c;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr !== null ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

const portOpen = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = tcpConnect(port, "127.0.0.1");
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });

/** nats-server with JetStream as the tests start it (test/support/nats.ts), pinned with the servers. */
async function startNats(): Promise<{ url: string; version: string; stop: () => Promise<void> }> {
  const port = await freePort();
  const storeDir = mkdtempSync(join(tmpdir(), "peg-bench-ws-nats-"));
  tempDirs.add(storeDir);
  const [cmd, args] = pinned(SERVER_CPU, "nats-server", ["-c", here("../nats.conf"), "-p", String(port), "-a", "127.0.0.1", "-sd", storeDir]);
  const p = track(spawn(cmd, args, { stdio: ["ignore", "ignore", "pipe"] }));
  let stderr = "";
  p.stderr?.on("data", (c: Buffer) => (stderr = (stderr + c.toString()).slice(-4000)));
  const deadline = Date.now() + 15_000;
  while (!(await portOpen(port))) {
    if (p.exitCode !== null) throw new Error(`nats-server exited with ${p.exitCode}: ${stderr}`);
    if (Date.now() > deadline) throw new Error(`nats-server did not listen on ${port} within 15 s: ${stderr}`);
    await sleep(50);
  }
  const version = (spawnSync("nats-server", ["--version"], { encoding: "utf8" }).stdout ?? "").trim();
  return {
    url: `nats://127.0.0.1:${port}`,
    version,
    stop: async () => {
      if (p.exitCode === null) {
        const done = new Promise((r) => p.once("exit", r));
        p.kill("SIGTERM");
        await done;
      }
      rmSync(storeDir, { recursive: true, force: true });
      tempDirs.delete(storeDir);
    },
  };
}

/** Waits for the next IPC message of `child` satisfying `pick`. */
function nextMessage<T>(child: ChildProcess, pick: (m: unknown) => T | undefined, what: string, timeoutMs = 120_000): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMessage = (m: unknown) => {
      const v = pick(m);
      if (v === undefined) return;
      done();
      resolve(v);
    };
    const onExit = (code: number | null) => {
      done();
      reject(new Error(`${what}: process exited with ${code}`));
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`${what}: no answer within ${timeoutMs / 1000} s`));
    }, timeoutMs);
    const done = () => {
      clearTimeout(timer);
      child.off("message", onMessage);
      child.off("exit", onExit);
    };
    child.on("message", onMessage);
    child.once("exit", onExit);
  });
}

function stopChild(c: ChildProcess, stop: unknown): Promise<void> {
  return new Promise((resolve) => {
    if (c.exitCode !== null || c.signalCode !== null) return resolve();
    const timer = setTimeout(() => c.kill("SIGKILL"), 10_000);
    c.once("exit", () => {
      clearTimeout(timer);
      resolve();
    });
    if (c.connected) c.send(stop as never);
    else c.kill("SIGTERM");
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Server and client processes.

interface ServerProc {
  readonly kind: WsServerKind;
  readonly port: number;
  readonly child: ChildProcess;
  stats(): Promise<WsServerStats>;
  gc(): Promise<void>;
}

async function startServer(kind: WsServerKind, natsUrl: string): Promise<ServerProc> {
  const [cmd, args] = pinned(SERVER_CPU, process.execPath, [...process.execArgv, "--expose-gc", here("./ws-server.ts"), kind, natsUrl]);
  const child = track(spawn(cmd, args, { stdio: ["ignore", "inherit", "inherit", "ipc"] }));
  const port = await nextMessage(child, (m) => ((m as { op?: string }).op === "listening" ? (m as { port: number }).port : undefined), `${kind} server start`, 60_000);
  return {
    kind,
    port,
    child,
    stats: () => {
      const p = nextMessage(child, (m) => ((m as { op?: string }).op === "stats" ? (m as { stats: WsServerStats }).stats : undefined), `${kind} stats`);
      child.send({ op: "stats" });
      return p;
    },
    gc: () => {
      const p = nextMessage(child, (m) => ((m as { op?: string }).op === "gc" ? true : undefined), `${kind} gc`);
      child.send({ op: "gc" });
      return p.then(() => {});
    },
  };
}

interface ClientProc {
  readonly child: ChildProcess;
  readonly count: number;
  ask<K extends ClientReply["op"]>(cmd: ClientCommand, op: K, timeoutMs?: number): Promise<Extract<ClientReply, { op: K }>>;
}

function startClient(count: number): ClientProc {
  const [cmd, args] = pinned(CLIENT_CPU, process.execPath, [...process.execArgv, here("./ws-client.ts")]);
  const child = track(spawn(cmd, args, { stdio: ["ignore", "inherit", "inherit", "ipc"], serialization: "advanced" }));
  return {
    child,
    count,
    ask: (c, op, timeoutMs) => {
      const p = nextMessage(child, (m) => ((m as ClientReply).op === op ? (m as Extract<ClientReply, { op: typeof op }>) : undefined), `client ${c.op}`, timeoutMs);
      child.send(c);
      return p;
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// The engine's side: transitions into JetStream.

const catalog = loadShippedCatalog();
const ACTIVE = catalog.active;

interface Published {
  readonly id: string;
  decidedAt: number;
}

let published = 0;
/** Publishes transition `t` now (the decision instant), without waiting for the ack. */
function publish(js: JetStreamClient, t: Published): Promise<unknown> {
  const a = ACTIVE[published % ACTIVE.length]!;
  const up = Math.floor(published / ACTIVE.length) % 2 === 0;
  published++;
  const now = new Date();
  t.decidedAt = monoMs();
  const receipt = {
    alert_id: t.id,
    mint: a.mint,
    asset: a.symbol,
    from_state: up ? "PEGGED" : "DRIFT",
    to_state: up ? "DRIFT" : "PEGGED",
    discount: up ? "0.0042" : "0.0003",
    detected_at: now.toISOString(),
  };
  return js.publish(subjects.transition(a.mint), JSON.stringify(receipt), { msgID: t.id });
}

// ---------------------------------------------------------------------------------------------------------------
// One trial: one server, `count` clients.

interface PhaseResult {
  readonly transitions: number;
  readonly expected: number;
  readonly delivered: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  /** decision -> hub (the NATS leg), p50 / max over the phase's transitions. */
  readonly natsP50: number;
  readonly natsMax: number;
}

/** What a phase cost: wall time, and CPU time of the server process and of the client processes (which share one core). */
interface Cost {
  readonly wallMs: number;
  readonly serverMs: number;
  /** The system (kernel) part of serverMs. */
  readonly serverSysMs: number;
  readonly clientsMs: number;
  readonly clientsSysMs: number;
}

interface Trial {
  readonly kind: WsServerKind;
  readonly clients: number;
  readonly connected: number;
  readonly connectErrors: readonly string[];
  readonly connectMs: number;
  readonly rssBefore: number;
  readonly rssAfter: number;
  readonly isolated: PhaseResult;
  /** The whole isolated phase, polling pauses included. */
  readonly isolatedCost: Cost;
  readonly burst: PhaseResult;
  /** From each burst's first publish to its last delivery (as polled every 5 ms), summed over the bursts. */
  readonly burstCost: Cost;
  readonly closedDuringRun: number;
  readonly duplicates: number;
  readonly backpressureCloses: number;
}

function percentile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

async function runTrial(kind: WsServerKind, count: number, js: JetStreamClient, natsUrl: string): Promise<Trial> {
  const server = await startServer(kind, natsUrl);
  const clients: ClientProc[] = [];
  try {
    await server.gc();
    const before = await server.stats();

    // Client processes, each a contiguous range of global indices (so at most 20 per source address).
    const nProcs = procsFor(count);
    let first = 0;
    for (let p = 0; p < nProcs; p++) {
      const n = Math.floor(count / nProcs) + (p < count % nProcs ? 1 : 0);
      clients.push(startClient(n));
    }
    const t0 = monoMs();
    const connects = await Promise.all(
      clients.map((c) => {
        const cmd: ClientCommand = { op: "connect", impl: CLIENT_IMPL, port: server.port, count: c.count, firstIndex: first, snapshots: ACTIVE.length };
        first += c.count;
        return c.ask(cmd, "connected", 300_000);
      }),
    );
    const connectMs = monoMs() - t0;
    const connected = connects.reduce((s, c) => s + c.connected, 0);
    const connectErrors = connects.flatMap((c) => c.errors);
    console.log(`${kind.padEnd(4)} ${String(count).padStart(6)} clients: ${connected} subscribed in ${(connectMs / 1000).toFixed(1)} s${connectErrors.length > 0 ? ` (failures: ${connectErrors.slice(0, 3).join("; ")})` : ""}`);
    await sleep(500);
    await server.gc();
    const after = await server.stats();

    // Every transition of the trial, tracked by the clients from the start.
    const warm: Published[] = Array.from({ length: WARMUP }, () => ({ id: randomUUID(), decidedAt: NaN }));
    const iso: Published[] = Array.from({ length: ISOLATED }, () => ({ id: randomUUID(), decidedAt: NaN }));
    const burst: Published[] = Array.from({ length: TRANSITIONS }, () => ({ id: randomUUID(), decidedAt: NaN }));
    const all = [...warm, ...iso, ...burst];
    await Promise.all(clients.map((c) => c.ask({ op: "track", ids: all.map((t) => t.id) }, "tracked")));

    let baseline = 0; // tracked deliveries expected so far
    const counts = () => Promise.all(clients.map((c) => c.ask({ op: "count" }, "count")));
    /** Polls until `target` deliveries in all (or no progress for 10 s). */
    const waitDelivered = async (target: number, pollMs: number) => {
      let last = -1;
      let lastChange = monoMs();
      for (;;) {
        const got = (await counts()).reduce((s, c) => s + c.received, 0);
        if (got >= target) return got;
        if (got !== last) {
          last = got;
          lastChange = monoMs();
        } else if (monoMs() - lastChange > 10_000) {
          console.log(`  stalled at ${got} of ${target} deliveries`);
          return got;
        }
        await sleep(pollMs);
      }
    };

    const cpuNow = async () => {
      const s = await server.stats();
      const cs = await counts();
      return {
        server: s.cpuUs,
        serverSys: s.cpuSysUs,
        clients: cs.reduce((n, c) => n + c.cpuUs, 0),
        clientsSys: cs.reduce((n, c) => n + c.cpuSysUs, 0),
        wall: monoMs(),
      };
    };
    /** Adds the CPU and wall time since `from` to `into`. */
    const addCost = async (into: { -readonly [K in keyof Cost]: number }, from: Awaited<ReturnType<typeof cpuNow>>) => {
      const to = await cpuNow();
      into.wallMs += to.wall - from.wall;
      into.serverMs += (to.server - from.server) / 1000;
      into.serverSysMs += (to.serverSys - from.serverSys) / 1000;
      into.clientsMs += (to.clients - from.clients) / 1000;
      into.clientsSysMs += (to.clientsSys - from.clientsSys) / 1000;
    };
    const zero = () => ({ wallMs: 0, serverMs: 0, serverSysMs: 0, clientsMs: 0, clientsSysMs: 0 });

    // Warm-up (JIT, buffers), 10 ms apart.
    const warmAcks: Promise<unknown>[] = [];
    for (const t of warm) {
      warmAcks.push(publish(js, t));
      await sleep(10);
    }
    await Promise.all(warmAcks);
    baseline += warm.length * connected;
    await waitDelivered(baseline, 50);

    // Isolated transitions: each one delivered to every client before the next.
    const isolatedCost = zero();
    const iso0 = await cpuNow();
    for (const t of iso) {
      await publish(js, t);
      baseline += connected;
      await waitDelivered(baseline, 5);
      await sleep(20);
    }

    await addCost(isolatedCost, iso0);

    // The burst: bursts of BURST transitions 1 ms apart, each burst delivered before the next.
    const burstCost = zero();
    for (let b = 0; b < burst.length; b += BURST) {
      const slice = burst.slice(b, b + BURST);
      await sleep(200);
      const c0 = await cpuNow();
      const acks: Promise<unknown>[] = [];
      const ackAt: number[] = [];
      for (const t of slice) {
        acks.push(publish(js, t).then(() => ackAt.push(monoMs() - t.decidedAt)));
        await sleep(1);
      }
      baseline += slice.length * connected;
      await waitDelivered(baseline, 5);
      await addCost(burstCost, c0);
      await Promise.all(acks);
      if (process.env["BENCH_WS_DEBUG"] === "1") {
        ackAt.sort((x, y) => x - y);
        const hub = await server.stats();
        const legs = slice.map((t) => (hub.hubAt[t.id] ?? NaN) - t.decidedAt).sort((x, y) => x - y);
        console.log(`  burst ${b / BURST}: ack p50 ${ackAt[ackAt.length >> 1]!.toFixed(1)} max ${ackAt[ackAt.length - 1]!.toFixed(1)} ms; hub p50 ${legs[legs.length >> 1]!.toFixed(1)} max ${legs[legs.length - 1]!.toFixed(1)} ms`);
      }
    }

    const final = await server.stats();
    const collected = await Promise.all(clients.map((c) => c.ask({ op: "collect" }, "collect")));

    const phase = (from: number, list: readonly Published[]): PhaseResult => {
      const lat: number[] = [];
      for (const col of collected) {
        const per = all.length;
        const n = col.receivedAt.length / per;
        for (let c = 0; c < n; c++) {
          for (let i = 0; i < list.length; i++) {
            const at = col.receivedAt[c * per + from + i]!;
            if (!Number.isNaN(at)) lat.push(at - list[i]!.decidedAt);
          }
        }
      }
      const sorted = Float64Array.from(lat).sort();
      const nats = Float64Array.from(list.map((t) => (final.hubAt[t.id] ?? NaN) - t.decidedAt).filter((x) => !Number.isNaN(x))).sort();
      return {
        transitions: list.length,
        expected: list.length * connected,
        delivered: sorted.length,
        p50: percentile(sorted, 0.5),
        p99: percentile(sorted, 0.99),
        max: sorted[sorted.length - 1] ?? NaN,
        natsP50: percentile(nats, 0.5),
        natsMax: nats[nats.length - 1] ?? NaN,
      };
    };
    if (process.env["BENCH_WS_DEBUG"] === "1") {
      const per = all.length;
      for (const [i, t] of iso.entries()) {
        const lat: number[] = [];
        for (const col of collected) {
          for (let c = 0; c < col.receivedAt.length / per; c++) lat.push(col.receivedAt[c * per + warm.length + i]! - t.decidedAt);
        }
        lat.sort((a, b) => a - b);
        console.log(`  iso ${i}: nats ${((final.hubAt[t.id] ?? NaN) - t.decidedAt).toFixed(2)} hub done ${((final.hubDone[t.id] ?? NaN) - t.decidedAt).toFixed(2)} first ${lat[0]!.toFixed(2)} median ${lat[lat.length >> 1]!.toFixed(2)} last ${lat[lat.length - 1]!.toFixed(2)}`);
      }
    }
    const trial: Trial = {
      kind,
      clients: count,
      connected,
      connectErrors,
      connectMs,
      rssBefore: before.rss,
      rssAfter: after.rss,
      isolated: phase(warm.length, iso),
      isolatedCost,
      burst: phase(warm.length + iso.length, burst),
      burstCost,
      closedDuringRun: collected.reduce((s, c) => s + c.closed, 0),
      duplicates: collected.reduce((s, c) => s + c.duplicates, 0),
      backpressureCloses: final.backpressureCloses,
    };
    const f = (x: number) => x.toFixed(1);
    console.log(
      `  isolated p50 ${f(trial.isolated.p50)} p99 ${f(trial.isolated.p99)} max ${f(trial.isolated.max)} ms (${trial.isolated.delivered}/${trial.isolated.expected}; ` +
        `server CPU ${f(isolatedCost.serverMs)} ms, clients ${f(isolatedCost.clientsMs)} ms) | burst p50 ${f(trial.burst.p50)} p99 ${f(trial.burst.p99)} max ${f(trial.burst.max)} ms ` +
        `(${trial.burst.delivered}/${trial.burst.expected}; server CPU ${f(burstCost.serverMs)} ms, clients ${f(burstCost.clientsMs)} ms, wall ${f(burstCost.wallMs)} ms; NATS leg p50 ${f(trial.burst.natsP50)} ms) | ` +
        `RSS ${(trial.rssBefore / 2 ** 20).toFixed(0)} -> ${(trial.rssAfter / 2 ** 20).toFixed(0)} MiB`,
    );
    return trial;
  } finally {
    await Promise.all(clients.map((c) => stopChild(c.child, { op: "stop" })));
    await stopChild(server.child, { op: "stop" });
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The report.

function section(trials: readonly Trial[], natsVersion: string, totalS: number, load: { start: string; end: string }): string {
  const fmt = (x: number) => Math.round(x).toLocaleString("en-US");
  const ms = (x: number) => (Number.isNaN(x) ? "-" : x < 10 ? x.toFixed(2) : x < 100 ? x.toFixed(1) : fmt(x));
  const us = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : "-");
  const mib = (b: number) => (b / 2 ** 20).toFixed(0);
  const name = (k: WsServerKind) => (k === "uws" ? "uWS" : "`ws`");
  const wsVersion = (JSON.parse(readFileSync(here("../node_modules/ws/package.json"), "utf8")) as { version: string }).version;
  const machine = machineDescription();
  const rows = [...trials].sort((a, b) => a.clients - b.clients || (a.kind === "uws" ? -1 : 1));
  const counts = [...new Set(trials.map((t) => t.clients))].sort((a, b) => a - b);
  const byKey = new Map(trials.map((t) => [`${t.kind}/${t.clients}`, t]));
  const perDelivery = (cpuMs: number, p: PhaseResult) => (p.delivered === 0 ? NaN : (cpuMs * 1000) / p.delivered);
  const delivered = (t: Trial) => {
    const got = t.isolated.delivered + t.burst.delivered;
    const want = t.isolated.expected + t.burst.expected;
    return want === 0 ? "-" : got === want ? "100 %" : `**${((100 * got) / want).toFixed(2)} %**`;
  };

  // Targets, at 5,000 clients.
  const TARGET_CLIENTS = 5000;
  const lines: string[] = [];
  const u = byKey.get(`uws/${TARGET_CLIENTS}`);
  const w = byKey.get(`ws/${TARGET_CLIENTS}`);
  if (u === undefined || w === undefined) {
    lines.push(`- Not evaluated: this run did not measure ${fmt(TARGET_CLIENTS)} clients on both servers (BENCH_WS_CLIENTS).`);
  } else {
    const complete = u.connected === u.clients && u.burst.delivered === u.burst.expected && u.isolated.delivered === u.isolated.expected;
    const met = (ok: boolean) => (ok ? "**met**" : "**missed**");
    lines.push(
      `- p99 < 50 ms at ${fmt(TARGET_CLIENTS)} clients: burst ${met(u.burst.p99 < 50 && complete)} (uWS p99 ${ms(u.burst.p99)} ms); ` +
        `isolated transitions ${met(u.isolated.p99 < 50 && complete)} (uWS p99 ${ms(u.isolated.p99)} ms)${complete ? "" : "; not every client was served"}.`,
    );
    const rb = w.burst.p99 / u.burst.p99;
    const ri = w.isolated.p99 / u.isolated.p99;
    lines.push(
      `- At least 3x lower p99 than \`ws\` at ${fmt(TARGET_CLIENTS)} clients: burst ${met(rb >= 3)} (${ms(w.burst.p99)} / ${ms(u.burst.p99)} ms = ${rb.toFixed(1)}x); ` +
        `isolated transitions ${met(ri >= 3)} (${ms(w.isolated.p99)} / ${ms(u.isolated.p99)} ms = ${ri.toFixed(1)}x).`,
    );
  }
  for (const c of counts) {
    if (c === TARGET_CLIENTS) continue;
    const uu = byKey.get(`uws/${c}`);
    const ww = byKey.get(`ws/${c}`);
    if (uu === undefined || ww === undefined) continue;
    lines.push(
      `- For reference, ${fmt(c)} clients: burst p99 uWS ${ms(uu.burst.p99)} ms vs \`ws\` ${ms(ww.burst.p99)} ms (${(ww.burst.p99 / uu.burst.p99).toFixed(1)}x); ` +
        `isolated p99 ${ms(uu.isolated.p99)} vs ${ms(ww.isolated.p99)} ms (${(ww.isolated.p99 / uu.isolated.p99).toFixed(1)}x).`,
    );
  }

  const incomplete = trials.filter((t) => t.connected < t.clients || t.burst.delivered < t.burst.expected || t.isolated.delivered < t.isolated.expected);
  const lossNote =
    incomplete.length === 0
      ? "Every client connected and subscribed, and every transition reached every client: no loss."
      : `**Incomplete:** ${incomplete
          .map(
            (t) =>
              `${name(t.kind)} at ${fmt(t.clients)} clients: ${fmt(t.connected)} subscribed, ${fmt(t.isolated.delivered + t.burst.delivered)} of ${fmt(t.isolated.expected + t.burst.expected)} deliveries` +
              (t.connectErrors.length > 0 ? ` (connect errors: ${t.connectErrors.slice(0, 2).join("; ")})` : ""),
          )
          .join("; ")}.`;
  const odd = trials.filter((t) => t.duplicates > 0 || t.backpressureCloses > 0 || t.closedDuringRun > 0);
  const oddNote =
    odd.length === 0
      ? " No duplicate delivery, no client closed during a trial, no backpressure close."
      : ` Anomalies: ${odd.map((t) => `${name(t.kind)}/${fmt(t.clients)}: ${t.duplicates} duplicates, ${t.closedDuringRun} clients closed, ${t.backpressureCloses} backpressure closes`).join("; ")}.`;

  // Where the time goes, from the largest client count measured on both servers.
  const ref = [...counts].reverse().find((c) => byKey.has(`uws/${c}`) && byKey.has(`ws/${c}`));
  let why = "";
  if (ref !== undefined) {
    const ru = byKey.get(`uws/${ref}`)!;
    const rw = byKey.get(`ws/${ref}`)!;
    const isoU = perDelivery(ru.isolatedCost.serverMs, ru.isolated);
    const isoW = perDelivery(rw.isolatedCost.serverMs, rw.isolated);
    const isoC = perDelivery(ru.isolatedCost.clientsMs, ru.isolated);
    const bU = perDelivery(ru.burstCost.serverMs, ru.burst);
    const bW = perDelivery(rw.burstCost.serverMs, rw.burst);
    const bC = perDelivery(ru.burstCost.clientsMs, ru.burst);
    const share = (part: number, whole: number) => (whole > 0 ? `${Math.round((100 * part) / whole)} %` : "-");
    why = `
Reading the numbers (${fmt(ref)} clients). An isolated transition is one small message per socket, so each delivery
is its own write on both servers: uWS spent ${us(isoU)} µs of server CPU per delivery (${share(ru.isolatedCost.serverSysMs, ru.isolatedCost.serverMs)} of it in the
kernel) and \`ws\` ${us(isoW)} µs (${share(rw.isolatedCost.serverSysMs, rw.isolatedCost.serverMs)} in the kernel), so one transition to ${fmt(ref)} clients costs the uWS
server about ${ms((isoU * ref) / 1000)} ms of CPU before the last client can have it, and the clients' core spent ${us(isoC)} µs per
delivery reading them (${share(ru.isolatedCost.clientsSysMs, ru.isolatedCost.clientsMs)} in the kernel). A lone message per socket means one send and one receive
system call per client, loopback TCP included, which no transport avoids; and the clients share one core, so the
last of them reads its message well after the first. In a burst, uWS writes what is
queued for a socket together (${us(bU)} µs of server CPU per delivery, against ${us(bW)} µs for \`ws\`, which writes
every message separately), and \`ws\`'s send loop blocks its event loop: the NATS leg (decision -> hub) of the burst
has a p50 of ${ms(ru.burst.natsP50)} ms on uWS and ${ms(rw.burst.natsP50)} ms on \`ws\`. During uWS's bursts the clients' core was busy
${share(ru.burstCost.clientsMs, ru.burstCost.wallMs)} of the wall time (${us(bC)} µs per delivery)${ru.burstCost.clientsMs > 0.7 * ru.burstCost.wallMs ? ", so there the clients, not the server, set the pace: on this 2-core machine the measured latency includes the clients' own work" : ""}.
For scale: ${fmt(BURST)} transitions to ${fmt(TARGET_CLIENTS)} clients are ${fmt(BURST * TARGET_CLIENTS)} messages; with the decisions spread over
about ${BURST} ms, a p99 under 50 ms means reading them at about ${((BURST * TARGET_CLIENTS) / ((50 + BURST) / 1000) / 1e6).toFixed(1)} million messages per second
(${((50 + BURST) * 1000 / (BURST * TARGET_CLIENTS)).toFixed(2)} µs each) on the clients' one core, and writing them as fast on the server's.
`;
  }

  return `<!-- ws:start -->
## WebSocket: transition fan-out, uWebSockets.js vs \`ws\`, same hub

Command: \`npm run bench:ws\` (\`node --max-semi-space-size=64 --import tsx bench/ws.bench.ts\`; \`BENCH_WS_CLIENTS\`, \`BENCH_WS_TRANSITIONS\`, \`BENCH_WS_BURST\`, \`BENCH_WS_ISOLATED\`, \`BENCH_WS_PROCS\`, \`BENCH_WS_CLIENT\` to change).
Machine: ${machine}; ${natsVersion}; ws ${wsVersion}. Measured ${new Date().toISOString().slice(0, 10)} (whole run ${Math.round(totalS)} s;
load average ${load.start} at the start, ${load.end} at the end: other work on the machine adds noise).

Topology: the benchmark starts its own nats-server (temporary store) and plays the engine, publishing each
transition into \`PEG_TRANSITIONS\` (\`peg.transition.<mint>\`, msgID = alert id, real catalog assets); the
decision instant is taken just before the publish. Each server is its own Node process running the service's live
stream without HTTP: \`WsHub\` + \`startLiveFeed\` (ordered JetStream consumer, as in \`src/http/server.ts\`) + a
transport. uWS is the production binding (\`uws.App()\`, \`uwsTransport()\`, \`attachWs\`: native pub/sub topics);
\`ws\` is \`bench/ws-transport.ts\` (topics as \`Map<topic, Set<WebSocket>>\`, each published text encoded once and
sent to every subscriber). Only the transport differs. Clients run in separate client processes
(${PROCS === null ? `one per ${fmt(PER_PROC)} clients: ${counts.map((c) => `${procsFor(c)} for ${fmt(c)}`).join(", ")}` : `${PROCS}`}); ${
    CLIENT_IMPL === "raw"
      ? "each is a minimal RFC 6455 client on a plain TCP socket (`bench/ws-client.ts`; `BENCH_WS_CLIENT=ws` uses the `ws` library's client instead, which costs the clients' shared core more and so adds more of the harness to the latency)"
      : "each is a `ws` library client (`BENCH_WS_CLIENT=ws`)"
  }, bound to its own
loopback source address (127.2.x.y, at most 20 per address: the server's limit of 20 connections per address is
unchanged), subscribed to \`*\` as a dashboard is (${ACTIVE.length} snapshots each on subscribe; every transition goes to every
client). ${PIN ? "Server and nats-server are pinned to core 0, the client processes to core 1 (`taskset`)" : "Not pinned (taskset unavailable or BENCH_PIN=0)"}. Each (server,
client count) trial starts a fresh server and fresh clients; the servers' order alternates per count.

Per trial: ${WARMUP} warm-up transitions; ${ISOLATED} **isolated** transitions (each delivered to every client before the
next); then the **burst**: ${TRANSITIONS} transitions in bursts of ${BURST} published 1 ms apart (each burst delivered before
the next). Latency = client receive time - decision time, over every (client, transition) delivery, on
CLOCK_MONOTONIC (the same clock in every process); it includes the NATS leg (decision -> hub). RSS is the
server's, after a forced GC, before and after the clients subscribed.

| clients | server | subscribed | isolated p50 | isolated p99 | burst p50 | burst p99 | burst max | delivered | server RSS before -> after | per connection |
|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|
${rows
  .map(
    (t) =>
      `| ${fmt(t.clients)} | ${name(t.kind)} | ${fmt(t.connected)} | ${ms(t.isolated.p50)} ms | ${ms(t.isolated.p99)} ms | ${ms(t.burst.p50)} ms | ${ms(t.burst.p99)} ms | ${ms(t.burst.max)} ms | ` +
      `${delivered(t)} | ${mib(t.rssBefore)} -> ${mib(t.rssAfter)} MiB | ${t.connected === 0 ? "-" : ((t.rssAfter - t.rssBefore) / t.connected / 1024).toFixed(1)} KiB |`,
  )
  .join("\n")}

CPU time (user + system, from the processes' own counters). Isolated: over the whole phase, per delivery. Burst:
from each burst's first publish to its last delivery (polled every 5 ms), summed over the bursts; the clients' CPU
is that of all client processes, which share core 1.

| clients | server | isolated: server CPU / delivery | isolated: clients CPU / delivery | burst wall | burst server CPU | server CPU / delivery | burst clients CPU | NATS leg p50 in burst |
|---:|---|---:|---:|---:|---:|---:|---:|---:|
${rows
  .map(
    (t) =>
      `| ${fmt(t.clients)} | ${name(t.kind)} | ${us(perDelivery(t.isolatedCost.serverMs, t.isolated))} µs | ${us(perDelivery(t.isolatedCost.clientsMs, t.isolated))} µs | ` +
      `${fmt(t.burstCost.wallMs)} ms | ${fmt(t.burstCost.serverMs)} ms | ${us(perDelivery(t.burstCost.serverMs, t.burst))} µs | ${fmt(t.burstCost.clientsMs)} ms | ${ms(t.burst.natsP50)} ms |`,
  )
  .join("\n")}

${lossNote}${oddNote}

Targets (issue): p99 < 50 ms at 5,000 clients, and at least 3x lower p99 than \`ws\`; the issue measures a burst,
the isolated transitions are shown alongside:

${lines.join("\n")}
${why}<!-- ws:end -->`;
}

// ---------------------------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const tStart = monoMs();
  const loadStart = loadAverage();
  if (spawnSync("which", ["nats-server"], { stdio: "ignore" }).status !== 0) {
    console.error("nats-server is not installed (Debian package nats-server); see README.md");
    process.exit(1);
  }
  const nats = await startNats();
  let nc: NatsConnection | null = null;
  const trials: Trial[] = [];
  try {
    nc = await connect({ servers: nats.url });
    await ensureTopology(nc);
    const js = jetstream(nc);
    console.log(`clients ${COUNTS.join(", ")}; ${TRANSITIONS} burst transitions in bursts of ${BURST}; ${PIN ? "pinned" : "not pinned"}`);
    for (const [i, count] of COUNTS.entries()) {
      const order = i % 2 === 0 ? KINDS : [...KINDS].reverse();
      for (const kind of order) trials.push(await runTrial(kind, count, js, nats.url));
    }
  } finally {
    await nc?.close().catch(() => {});
    await nats.stop();
  }
  const text = section(trials, nats.version, (monoMs() - tStart) / 1000, { start: loadStart, end: loadAverage() });
  console.log(text);
  if (process.env["BENCH_WS_NO_DOC"] === "1") return;
  writeSection("ws", text);
}

try {
  await main();
} finally {
  cleanup();
}
process.exit(0);
