/**
 * The cluster at chain scale (npm run bench:cluster; issue 26 items 3 and 4): BENCH_ASSETS synthetic assets (default
 * 10,000), BENCH_ENGINES engine processes (3) leasing LEASE_PARTITIONS partitions (64), 2 API processes, a 3-node
 * nats-server cluster from deploy/nats/cluster.conf (replicas 3) and PostgreSQL, every process started from
 * deploy/env (test/scale/deploy-env.ts) on the simulated market (one sample per asset every BENCH_TICK_MS, 10,000).
 *
 * 0. Steady state: every partition leased, every engine within one partition of its share, every asset acquired, a
 *    transition on every WebSocket client. Lease writes per second = the growth of KV_PEG_LEASES' last sequence over
 *    BENCH_STEADY_SECONDS (10).
 * 1. kill -9 of the first engine: kill -> the last `acquired assets` line of a survivor for a partition of the killed
 *    engine (its assets restored, and fed the samples the survivor received since their states: `caught_up`);
 *    gap samples missed = the survivors' "samples since the restored state are no longer kept" lines for them.
 * 2. Two nats-server losses, each by SIGKILL 0.5 s before the intake's next tick (once no lease moved for 3 s), so
 *    that tick's decisions come during the loss; each timed from the kill to the first transition decided after it on
 *    every WebSocket client, with public reads through both API processes meanwhile:
 *    a. a node that leads no stream (they are moved off it first), restarted after until it is current again;
 *    b. the node leading PEG_TRANSITIONS (no transition is stored before its election ends), and apart the delivery
 *       blind time: that transition's decision -> its arrival on every client.
 * 3. Network partition of the last engine (it reaches NATS through a TCP proxy that becomes a black hole, its process
 *    keeps running): cut -> its last "lease not renewed in time" line (it fenced itself); each of its partitions must
 *    be fenced before a survivor's first write of that lease. Healed after BENCH_PARTITION_SECONDS (3): it rejoins.
 * 4. The stream against the clients: every transition of PEG_TRANSITIONS received by every client once and in order,
 *    one chain of states per asset, no owner change before the previous lease expired.
 *
 * Prints one JSON line and rewrites the "cluster" section of docs/benchmarks.md (BENCH_WRITE_DOC=0: not). BENCH_CPU_PROF_DIR:
 * the engines run under --cpu-prof, their profiles written there.
 */
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { leaseUnits } from "../src/streams/jetstream/lease-partitions.ts";
import { LEASE_BUCKET, type LeaseValue } from "../src/streams/jetstream/leases.ts";
import { startNatsCluster, type ClusterNode, type TestNatsCluster } from "../test/support/nats-cluster.ts";
import { startPostgres, type TestPostgres } from "../test/support/postgres.ts";
import { freePort, sleep, waitFor } from "../test/support/ports.ts";
import { TEST_SECRETS_KEY } from "../test/support/secrets.ts";
import { acquiredBy, acquiredTotals } from "../test/scale/acquired.ts";
import { ackedHistory, earlyHandovers, watchLeases, type EarlyHandover } from "../test/scale/cluster-checks.ts";
import { deployedNodeArgs, roleEnv } from "../test/scale/deploy-env.ts";
import { startTcpProxyProcess, type TcpProxyProcess } from "../test/scale/tcp-proxy.ts";
import { compareHistory } from "./cluster-history.ts";
import { followerLoss, leaderLoss, leaseLeaderLoss, type LossRun } from "./cluster-loss-steps.ts";
import { lastSeq } from "./cluster-node-loss.ts";
import { spawnRole, TransitionClient, type LogLine, type RoleProcess } from "./cluster-procs.ts";
import { writeClusterSection, type ClusterDraft, type ClusterRun } from "./cluster-report.ts";
import { positiveInt } from "./bench-env.ts";
import { loadAverage } from "./report.ts";
import { syntheticCatalog } from "./synthetic.ts";

const ASSETS = positiveInt("BENCH_ASSETS", 10_000);
const ENGINES = positiveInt("BENCH_ENGINES", 3);
const PARTITIONS = positiveInt("LEASE_PARTITIONS", 64);
// 10 s: at 5 s this machine's 2 cores do not carry 10,000 assets with three engines (docs/benchmarks.md, "Cluster").
const TICK_MS = positiveInt("BENCH_TICK_MS", 10_000);
const INCIDENT_MS = positiveInt("BENCH_INCIDENT_EVERY_MS", 5_000);
const STEADY_S = positiveInt("BENCH_STEADY_SECONDS", 10);
const PARTITION_S = positiveInt("BENCH_PARTITION_SECONDS", 3);
const NODE_TRANSITIONS = positiveInt("BENCH_NODE_TRANSITIONS", 5);
const WRITE_DOC = process.env["BENCH_WRITE_DOC"] !== "0";
/** BENCH_CPU_PROF_DIR: the engines run under --cpu-prof, stopped with SIGTERM at the end so their profiles are written. */
const PROF_DIR = process.env["BENCH_CPU_PROF_DIR"];
const PROF = PROF_DIR === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${PROF_DIR}`];
if (ENGINES < 2) throw new Error("BENCH_ENGINES must be at least 2 (one is killed)");
const ROOT = fileURLToPath(new URL("..", import.meta.url));
const GIT_SHA = execFileSync("git", ["rev-parse", "HEAD"], { cwd: ROOT, encoding: "utf8" }).trim();
/** Start-up and take-over bounds that scale with the catalog (10,000 assets restore in seconds on an idle machine). */
const SLOW_MS = 120_000 + ASSETS * 30;

const catalog = syntheticCatalog(ASSETS);
const units = leaseUnits(
  catalog.active.map((a) => a.mint),
  PARTITIONS,
);

let cluster: TestNatsCluster | null = null;
let pg: TestPostgres | null = null;
let proxy: TcpProxyProcess | null = null;
let nc: NatsConnection | null = null;
const procs: RoleProcess[] = [];
const dirs: string[] = [];
async function cleanup(): Promise<void> {
  const live = procs.filter((p) => p.proc.exitCode === null && p.proc.signalCode === null);
  if (PROF_DIR !== undefined) {
    for (const p of live) p.proc.kill("SIGTERM");
    await Promise.race([Promise.all(live.map((p) => p.exited)), new Promise((r) => setTimeout(r, 30_000))]);
  }
  for (const p of procs) if (p.proc.exitCode === null && p.proc.signalCode === null) p.proc.kill("SIGKILL");
  await Promise.all(procs.map((p) => p.exited));
  const out = join(ROOT, "test-results", "cluster-bench");
  mkdirSync(out, { recursive: true });
  for (const p of procs) writeFileSync(join(out, `${p.name}.log`), p.lines.map((l) => JSON.stringify(l)).join("\n"));
  for (const n of cluster?.nodes ?? []) if (existsSync(n.logFile)) copyFileSync(n.logFile, join(out, `nats-${n.name}.log`));
  await nc?.close().catch(() => {});
  await proxy?.close().catch(() => {});
  await cluster?.dispose().catch(() => {});
  await pg?.dispose().catch(() => {});
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  procs.length = dirs.length = 0;
  nc = proxy = cluster = pg = null;
}
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
  process.on(sig, () => {
    console.error(`cluster bench: ${sig}, cleaning up`);
    void cleanup().finally(() => process.exit(130));
  });
}

/** Every partition's lease as it stands (a lease past its expiry counts as nobody's). */
/** Progress on stderr, so a long run at 10,000 assets shows where it is. */
const step = (what: string): void => console.error(`${new Date().toISOString()} ${what}`);

async function owners(conn: NatsConnection): Promise<Map<string, string>> {
  const kv = await new Kvm(conn).open(LEASE_BUCKET);
  const out = new Map<string, string>();
  const now = Date.now();
  for (const unit of units.units) {
    const e = await kv.get(`partition.${unit}`);
    if (e === null || e.operation !== "PUT") continue;
    const v = e.json<LeaseValue>();
    if (v.expires_at > now) out.set(unit, v.owner);
  }
  return out;
}

const owned = (split: Map<string, string>, id: string) => [...split].filter(([, o]) => o === id).map(([u]) => u);
/** Every partition leased, each of `ids` within one partition of its fair share. */
const balanced = (split: Map<string, string>, ids: readonly string[]) =>
  split.size === units.units.length && ids.every((id) => owned(split, id).length <= Math.ceil(units.units.length / ids.length)) && [...split.values()].every((o) => ids.includes(o));


/** `acquired assets` lines of `engines` from `since` on, for the assets in `mints`: the latest per mint. */
function acquisitions(engines: readonly RoleProcess[], since: number, mints: ReadonlySet<string>): Map<string, LogLine> {
  const out = new Map<string, LogLine>();
  for (const e of engines) for (const [mint, l] of acquiredBy(e.lines, (x) => x.at, since)) if (mints.has(mint)) out.set(mint, l);
  return out;
}

/** Where a role process of the run finds NATS, PostgreSQL and its own directory, from deploy/env. */
function envFor(databaseUrl: string, role: "engine" | "api", natsUrl: string, port?: number): Record<string, string> {
  const dir = mkdtempSync(join(tmpdir(), `peg-cluster-bench-${role}-`));
  dirs.push(dir);
  return roleEnv(
    role,
    {
      NATS_URL: natsUrl,
      NATS_REPLICAS: "3",
      DATABASE_URL: databaseUrl,
      SECRETS_KEY: TEST_SECRETS_KEY,
      LEASE_PARTITIONS: String(PARTITIONS),
      FEED: "sim",
      DATA_DIR: dir,
      METRICS_PORT: "0",
      ...(role === "api" ? { HOST: "127.0.0.1", PORT: String(port) } : {}),
    },
    { SIM_TICK_MS: String(TICK_MS), SIM_INCIDENT_EVERY_MS: String(INCIDENT_MS), BENCH_ASSETS: String(ASSETS), GIT_SHA, RATE_LIMIT_PER_MIN: "1000000" },
  );
}

const started = (p: RoleProcess) => p.line((l) => l.msg === "serving", SLOW_MS, "serving");

/**
 * An API process, started again (up to 3 times) when it exits before serving: on a loaded machine the first
 * JetStream requests to a young cluster can time out, and a process that cannot start exits (as under systemd,
 * which restarts it).
 */
async function startApi(name: string, env: Record<string, string>): Promise<RoleProcess> {
  for (let attempt = 1; ; attempt++) {
    const p = spawnRole(attempt === 1 ? name : `${name}-attempt-${attempt}`, env, deployedNodeArgs("api"));
    procs.push(p);
    try {
      await started(p);
      return p;
    } catch (err) {
      if (attempt >= 3 || p.proc.exitCode === null) throw err;
      console.error(`${name} exited before serving; starting it again`);
    }
  }
}

/** The running deployment, as the steps act on it. */
interface Running {
  readonly jsm: JetStreamManager;
  readonly conn: NatsConnection;
  readonly cluster: TestNatsCluster;
  readonly proxy: TcpProxyProcess;
  /** The node the last engine reaches NATS through (by `proxy`). */
  readonly proxied: ClusterNode;
  readonly watch: Awaited<ReturnType<typeof watchLeases>>;
  readonly apiPorts: readonly number[];
  readonly clients: readonly TransitionClient[];
  readonly engines: readonly RoleProcess[];
  readonly ids: readonly string[];
}

/** Starts everything, and waits for the steady state: every partition leased and balanced, a transition on every client. */
async function start(): Promise<Running> {
  [cluster, pg] = await Promise.all([startNatsCluster(3), startPostgres()]);
  const databaseUrl = await pg.createDatabase();
  const env = (role: "engine" | "api", natsUrl: string, port?: number) => envFor(databaseUrl, role, natsUrl, port);
  // API processes first: the first one creates the schema and the topology (replicas 3) alone.
  const apiPorts = [await freePort(), await freePort()];
  await startApi("api-1", env("api", cluster.urls, apiPorts[0]!));
  await startApi("api-2", env("api", cluster.urls, apiPorts[1]!));
  const conn = (nc = await connect({ servers: cluster.urls.split(","), maxReconnectAttempts: -1, reconnectTimeWait: 250 }));
  const jsm = await jetstreamManager(conn);
  const watch = await watchLeases(conn, "partition.>", 3);

  // The last engine reaches NATS only through a proxy to a node that does not lead PEG_TRANSITIONS (step 2 kills
  // that leader; the proxied engine's connection must outlive it, or its client would reconnect around the proxy).
  const leaderAtStart = (await jsm.streams.info("PEG_TRANSITIONS")).cluster?.leader;
  const proxied = cluster.nodes.find((n) => n.name !== leaderAtStart)!;
  const tcp = (proxy = await startTcpProxyProcess(proxied.port));
  const urls = cluster.urls;
  const engines = Array.from({ length: ENGINES }, (_, i) =>
    spawnRole(`engine-${i + 1}`, env("engine", i === ENGINES - 1 ? `nats://127.0.0.1:${tcp.port}` : urls), [...deployedNodeArgs("engine"), ...PROF]),
  );
  procs.push(...engines);
  const ids = (await Promise.all(engines.map(started))).map((l) => String(l["engine"]));
  const allMints = new Set(catalog.active.map((a) => a.mint));
  await waitFor(async () => balanced(await owners(conn), ids) && acquisitions(engines, 0, allMints).size === allMints.size, SLOW_MS, "every partition leased, balanced, every asset acquired", 500);
  step(`steady: ${ENGINES} engines hold ${units.units.length} partitions, ${allMints.size} assets acquired`);
  const clients = apiPorts.map((port, i) => new TransitionClient(`api-${i + 1}`, `ws://127.0.0.1:${port}/v1/ws`));
  await waitFor(() => clients.every((c) => c.transitions.length > 0), 180_000, "a transition on every WebSocket client", 200);
  return { jsm, conn, cluster, proxy: tcp, proxied, watch, apiPorts, clients, engines, ids };
}

/** 0. Steady state: lease writes and transitions per second. */
async function steadyState(r: Running, m: ClusterDraft): Promise<void> {
  const kvFrom = await lastSeq(r.jsm, `KV_${LEASE_BUCKET}`);
  const trFrom = await lastSeq(r.jsm, "PEG_TRANSITIONS");
  const steadyFrom = Date.now();
  await sleep(STEADY_S * 1000);
  const steadyS = (Date.now() - steadyFrom) / 1000;
  m.lease_writes_per_s = Math.round(((await lastSeq(r.jsm, `KV_${LEASE_BUCKET}`)) - kvFrom) / steadyS);
  m.steady_transitions_per_s = Number((((await lastSeq(r.jsm, "PEG_TRANSITIONS")) - trFrom) / steadyS).toFixed(2));
}

/** 1. kill -9 of the first engine; returns the instant of the kill. */
async function engineKill(r: Running, m: ClusterDraft): Promise<number> {
  const victim = r.engines[0]!;
  const survivors = r.engines.slice(1);
  const victimUnits = owned(await owners(r.conn), r.ids[0]!);
  const moved = new Set(victimUnits.flatMap((u) => [...units.assetsOf(u)]));
  m.moved_partitions = victimUnits.length;
  m.moved_assets = moved.size;
  step(`kill -9 of ${victim.name} (${moved.size} assets)`);
  const killedAt = Date.now();
  victim.proc.kill("SIGKILL");
  await victim.exited;
  await waitFor(() => acquisitions(survivors, killedAt, moved).size === moved.size, SLOW_MS, `the survivors to restore ${moved.size} assets`, 100);
  const restored = [...new Set(acquisitions(survivors, killedAt, moved).values())];
  const totals = acquiredTotals(restored);
  m.engine_kill_to_restored_ms = Math.max(...restored.map((l) => l.at)) - killedAt;
  m.gap_samples_evaluated = totals.caughtUp;
  const movedSymbols = new Set(catalog.active.filter((a) => moved.has(a.mint)).map((a) => a.symbol));
  m.gap_samples_missed = survivors.flatMap((e) => e.lines).filter((l) => l.at >= killedAt && l.msg.startsWith("samples since the restored state are no longer kept") && movedSymbols.has(String(l["asset"]))).length;
  m.restored_from = totals.from;
  return killedAt;
}

/** 3. Network partition of the last engine: it keeps running, cut off from NATS, then rejoins after the heal. */
async function networkPartition(r: Running, m: ClusterDraft): Promise<void> {
  const survivors = r.engines.slice(1);
  const cutEngine = r.engines[ENGINES - 1]!;
  const cutId = r.ids[ENGINES - 1]!;
  const rest = survivors.filter((e) => e !== cutEngine);
  const restIds = r.ids.slice(1, ENGINES - 1);
  const cutUnits = owned(await owners(r.conn), cutId);
  const cutMints = new Set(cutUnits.flatMap((u) => [...units.assetsOf(u)]));
  m.partition_cut_partitions = cutUnits.length;
  step(`network partition of ${cutEngine.name} (${cutUnits.length} partitions)`);
  const cutAt = Date.now();
  await r.proxy.cut();
  await waitFor(
    async () => {
      const now = await owners(r.conn);
      return cutUnits.every((u) => restIds.includes(now.get(u) ?? "")) && acquisitions(rest, cutAt, cutMints).size === cutMints.size;
    },
    SLOW_MS,
    "the other engines to take the cut-off partitions",
    200,
  );
  m.partition_cut_to_restored_ms = Math.max(...[...acquisitions(rest, cutAt, cutMints).values()].map((l) => l.at)) - cutAt;
  const fencedAt = new Map<string, number>();
  for (const l of cutEngine.lines) if (l.at >= cutAt && l.msg.startsWith("lease not renewed in time") && !fencedAt.has(String(l["mint"]))) fencedAt.set(String(l["mint"]), l.at);
  const takenAt = new Map<string, number>();
  for (const h of r.watch.history) if (h.op === "PUT" && h.at >= cutAt && h.value !== null && restIds.includes(h.value.owner) && !takenAt.has(h.key)) takenAt.set(h.key, h.at);
  m.partition_fenced_ms = fencedAt.size === 0 ? null : Math.max(...fencedAt.values()) - cutAt;
  m.partitions_not_fenced_first = cutUnits.filter((u) => !(fencedAt.get(u)! < (takenAt.get(`partition.${u}`) ?? Infinity))).length;
  await sleep(PARTITION_S * 1000);
  const healAt = Date.now();
  await r.proxy.heal();
  const liveIds = r.ids.slice(1);
  await waitFor(async () => {
    const now = await owners(r.conn);
    return owned(now, cutId).length > 0 && balanced(now, liveIds);
  }, SLOW_MS, "the healed engine to rejoin and the partitions to be shared again", 200);
  m.heal_to_rejoined_ms = Date.now() - healAt;
}

/** 4. The stream against every client, once the last transitions reached them; `since`: the first fault. */
async function readBack(r: Running, m: ClusterDraft, since: number): Promise<void> {
  step("reading PEG_TRANSITIONS back");
  const finalSeq = await lastSeq(r.jsm, "PEG_TRANSITIONS");
  await waitFor(() => r.clients.every((c) => (c.transitions.at(-1)?.seq ?? 0) >= finalSeq), 60_000, "every client to catch up with the stream", 200).catch(() => {});
  const { receipts, firstSeq } = await ackedHistory(r.jsm);
  const upTo = receipts.slice(0, finalSeq - firstSeq + 1);
  const counts = compareHistory(upTo, firstSeq, r.clients);
  // An early handover the watch saw, of a lease its previous owner logged handing back just before (it is deleted
  // right after that line): a graceful release whose delete marker the watch missed, not two owners (cluster-checks.ts).
  const idOf = (p: RoleProcess) => String(p.lines.find((l) => l.msg === "serving")?.["engine"]);
  const handedBack = (e: EarlyHandover) =>
    procs.some((p) => idOf(p) === e.previous && p.lines.some((l) => l.msg === "released assets" && l["lease"] === e.key && l.at <= e.at && l.at >= e.at - 2_000));
  const watched = earlyHandovers(r.watch.history);
  const early = watched.filter((e) => !handedBack(e));
  m.early_handovers_handed_back = watched.length - early.length;
  r.watch.stop();
  m.transitions = counts.transitions;
  m.transitions_lost = counts.lost;
  m.transitions_duplicated = counts.duplicated;
  m.transitions_out_of_order = counts.outOfOrder;
  m.chain_breaks = counts.chainBreaks;
  m.first_transitions_from_unknown = counts.firstFromUnknown.length;
  m.early_handovers = early.length;
  m.double_owner_transitions = counts.chainBreaks + early.length;
  m.ws_clients_closed = r.clients.filter((c) => c.closed !== null).length;
  // Over every fault, not only the kill: an asset restored from a state older than the survivors' recent samples
  // resumes without the samples in between (each line is one asset resuming with a gap).
  m.resumed_without_samples = r.engines.flatMap((e) => e.lines).filter((l) => l.at >= since && l.msg.startsWith("samples since the restored state are no longer kept")).length;
  if (counts.chainBreakLines.length > 0) console.error(`chain breaks: ${counts.chainBreakLines.slice(0, 10).join("; ")}`);
  if (counts.firstFromUnknown.length > 0) console.error(`first transitions from UNKNOWN: ${counts.firstFromUnknown.slice(0, 10).join("; ")}`);
  if (early.length > 0) console.error(`early handovers: ${early.slice(0, 10).map((e) => `${e.key}: ${e.owner} at ${e.at} before ${e.previous}'s lease expired at ${e.expiresAt}`).join("; ")}`);
  // How the market decided: transitions per second of their decision (their sample's instant), for reading a run's quiet stretches.
  const perTick = new Map<number, number>();
  for (const t of r.clients[0]!.transitions) {
    const second = Math.floor(t.decided_at / 1_000) * 1_000;
    perTick.set(second, (perTick.get(second) ?? 0) + 1);
  }
  step(`transitions per second of their decision: ${[...perTick].sort(([a], [b]) => a - b).map(([at, n]) => `${new Date(at).toISOString().slice(11, 19)} ${n}`).join(", ")}`);
  // Every transition the first client received, for reading a run afterwards (test-results/cluster-bench).
  mkdirSync(join(ROOT, "test-results", "cluster-bench"), { recursive: true });
  writeFileSync(join(ROOT, "test-results", "cluster-bench", "transitions.jsonl"), r.clients[0]!.transitions.map((t) => JSON.stringify(t)).join("\n"));
  for (const c of r.clients) c.close();
}

async function run(m: ClusterDraft): Promise<void> {
  const r = await start();
  await steadyState(r, m);
  const killedAt = await engineKill(r, m);
  // 2. Loss of a nats-server that leads no stream (nor, when the logs tell, the meta group), then of the one leading
  // PEG_TRANSITIONS, then of the one leading the lease bucket.
  const loss: LossRun = {
    ...r,
    engines: r.engines.slice(1),
    readSymbol: catalog.active[0]!.symbol,
    tickMs: TICK_MS,
    slowMs: SLOW_MS,
    nodeTransitions: NODE_TRANSITIONS,
    leasedAgain: async () => balanced(await owners(r.conn), r.ids.slice(1)),
    step,
  };
  await followerLoss(loss, m);
  await leaderLoss(loss, m);
  await leaseLeaderLoss(loss, m);
  await networkPartition(r, m);
  await readBack(r, m, killedAt);
}

const loadBefore = loadAverage();
const startedAt = Date.now();
const m: ClusterDraft = { assets: ASSETS, engines: ENGINES, api_processes: 2, nats_nodes: 3, partitions: units.units.length, tick_ms: TICK_MS, node_transitions: NODE_TRANSITIONS };
let failed: string | null = null;
try {
  await run(m);
} catch (e) {
  failed = e instanceof Error ? e.message.slice(0, 2000) : String(e);
} finally {
  await cleanup();
}
const result: ClusterRun = { ...(m as ClusterRun), load_before: loadBefore, load_after: loadAverage(), duration_s: Math.round((Date.now() - startedAt) / 1000), failed };
console.log(JSON.stringify(result));
if (WRITE_DOC) writeClusterSection(result);
process.exit(failed === null ? 0 : 1);
