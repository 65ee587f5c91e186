/**
 * A network partition of an engine (issue 26 item 3): two engines leasing partitions (`LEASE_PARTITIONS=8`), an
 * API process, nats-server and PostgreSQL, replaying `transition-burst` on one shared timeline as a live feed. One
 * engine reaches NATS through a TCP proxy the test controls; mid-burst the proxy becomes a black hole (nothing closed,
 * nothing answered) while the engine's process keeps running. Then:
 * - the cut-off engine stops every asset of its partitions (its renewals fail: "lease not renewed in time") before
 *   the other engine takes any of them, which it does once the leases expire;
 * - after the heal the engine reconnects, whatever it still had buffered is rejected by the fencing tokens or dropped,
 *   and the two engines share the partitions again;
 * - the acknowledged history is exactly the uninterrupted offline replay (one chain of transitions per asset, nothing
 *   lost, repeated or invented, identical receipts), the WebSocket client received it once and in order, and no
 *   partition changed owner before its lease expired.
 * - an API process cut off the same way closes its WebSocket clients (1013, `upstream_unavailable`) once NATS has not
 *   answered for 5 s; they reconnect to the other API process with `since_seq` and miss nothing.
 * The measured times are printed as one JSON line (`NETSPLIT`).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import { loadScenario } from "../../src/cli/scenario-files.ts";
import { leaseUnits } from "../../src/streams/jetstream/lease-partitions.ts";
import { LEASE_BUCKET, type LeaseValue } from "../../src/streams/jetstream/leases.ts";
import { replayScenario } from "../../src/streams/sources/scenario/replay.ts";
import { GIT_SHA } from "../methodology/helpers.ts";
import { startNats, type TestNats } from "../support/nats.ts";
import { startPostgres, type TestPostgres } from "../support/postgres.ts";
import { freePort, sleep, waitFor } from "../support/ports.ts";
import { TEST_SECRETS_KEY } from "../support/secrets.ts";
import { spawnServe, type ServeProcess } from "../support/serve.ts";
import { ackedHistory, Client, earlyHandovers, expectReplayed, FailoverClient, missingIntakeSamples, watchLeases } from "./cluster-checks.ts";
import { acquiredBy } from "./acquired.ts";
import { deployedNodeArgs, roleEnv } from "./deploy-env.ts";
import { startTcpProxy, type TcpProxy } from "./tcp-proxy.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const SCENARIO = "transition-burst";
const SPEED = 30;
const PARTITIONS = 8;

const catalog = loadShippedCatalog();
const scenario = loadScenario(SCENARIO);
const lastTs = scenario.samples[scenario.samples.length - 1]!.ts;
const scenarioMints = new Set([...new Set(scenario.samples.map((s) => s.asset))].map((s) => catalog.bySymbol(s)!.mint));
const units = leaseUnits(
  catalog.active.map((a) => a.mint),
  PARTITIONS,
);
const expected = replayScenario({ ...scenario, until: lastTs + 10 * 60_000 }, { resolve: (s) => catalog.bySymbol(s), gitSha: GIT_SHA }).receipts;

let nats: TestNats;
let pg: TestPostgres;
let proxy: TcpProxy;
let apiProxy: TcpProxy;
let databaseUrl: string;
const procs: ServeProcess[] = [];
const dirs: string[] = [];

beforeAll(async () => {
  [nats, pg] = await Promise.all([startNats(), startPostgres()]);
  databaseUrl = await pg.createDatabase();
  proxy = await startTcpProxy(nats.port);
  apiProxy = await startTcpProxy(nats.port);
}, 120_000);

const OUT = join(ROOT, "test-results", "netsplit");
function writeArtifact(name: string, text: string): void {
  mkdirSync(OUT, { recursive: true });
  writeFileSync(join(OUT, name), text);
}

afterAll(async () => {
  for (const p of procs) if (p.proc.exitCode === null) p.proc.kill("SIGKILL");
  await Promise.all(procs.map((p) => p.exited));
  for (const p of procs) writeArtifact(`${p.name}.log`, p.stderr());
  await proxy?.close();
  await apiProxy?.close();
  await nats?.dispose();
  await pg?.dispose();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** The partitions' leases as they stand. */
async function leases(nc: NatsConnection): Promise<Map<string, LeaseValue>> {
  const kv = await new Kvm(nc).open(LEASE_BUCKET);
  const out = new Map<string, LeaseValue>();
  for (const unit of units.units) {
    const e = await kv.get(`partition.${unit}`);
    if (e !== null && e.operation === "PUT") out.set(unit, e.json<LeaseValue>());
  }
  return out;
}

const at = (l: Record<string, unknown>) => Date.parse(String(l["ts"]));

describe("network partition of an engine", () => {
  it("a cut-off engine stops deciding before its partitions are taken, leaves one chain per asset, and rejoins after the heal", async () => {
    // The role files of deploy/env, with this test's servers, store, secrets and feed.
    const env = (role: "engine" | "api", port?: number, natsUrl = nats.url) => {
      const dir = mkdtempSync(join(tmpdir(), `peg-netsplit-${role}-`));
      dirs.push(dir);
      return roleEnv(
        role,
        {
          NATS_URL: natsUrl,
          NATS_REPLICAS: "1",
          DATABASE_URL: databaseUrl,
          SECRETS_KEY: TEST_SECRETS_KEY,
          LEASE_PARTITIONS: String(PARTITIONS),
          FEED: `scenario:${SCENARIO}`,
          DATA_DIR: dir,
          METRICS_PORT: "0",
          ...(role === "api" ? { HOST: "127.0.0.1", PORT: String(port) } : {}),
        },
        { SCENARIO_SPEED: String(SPEED), SCENARIO_CATCHUP: "received", GIT_SHA, RATE_LIMIT_PER_MIN: "1000000" },
      );
    };
    const apiPort = await freePort();
    const api = spawnServe(env("api", apiPort), { name: "api", nodeArgs: deployedNodeArgs("api") });
    procs.push(api);
    await api.started();
    const client = new Client("api", `ws://127.0.0.1:${apiPort}/v1/ws`);
    // A second API process reaches NATS through its own proxy; its clients fail over to the first one.
    const api2Port = await freePort();
    const api2 = spawnServe(env("api", api2Port, `nats://127.0.0.1:${apiProxy.port}`), { name: "api-2", nodeArgs: deployedNodeArgs("api") });
    procs.push(api2);
    await api2.started();
    const urls = [`ws://127.0.0.1:${api2Port}/v1/ws`, `ws://127.0.0.1:${apiPort}/v1/ws`];
    const failovers = [new FailoverClient("failover-a", urls), new FailoverClient("failover-b", urls)];
    const nc = await connect({ servers: nats.url });
    const watch = await watchLeases(nc, "partition.>");

    // Engine-2 (the one to be cut off) starts first and becomes the cluster's intake (INTAKE=shared, the default with
    // partitions), so the cut also hands the intake over.
    const engine2 = spawnServe(env("engine", undefined, `nats://127.0.0.1:${proxy.port}`), { name: "engine-2", nodeArgs: deployedNodeArgs("engine") });
    procs.push(engine2);
    await engine2.started();
    await waitFor(() => engine2.lines().some((l) => l["msg"] === "this engine is the intake"), 20_000, "engine-2 to be the intake");
    const engine1 = spawnServe(env("engine"), { name: "engine-1", nodeArgs: deployedNodeArgs("engine") });
    procs.push(engine1);
    await engine1.started();
    const engineId = (p: ServeProcess) => String(p.lines().find((l) => l["msg"] === "serving")?.["engine"]);
    const ids = [engineId(engine1), engineId(engine2)] as const;

    const share = Math.ceil(units.units.length / 2);
    const owned = (split: Map<string, LeaseValue>, id: string) => [...split].filter(([, v]) => v.owner === id && v.expires_at > Date.now()).map(([u]) => u);
    await waitFor(
      async () => {
        const split = await leases(nc);
        const counts = ids.map((id) => owned(split, id).length);
        return counts[0]! + counts[1]! === units.units.length && counts.every((c) => c <= share);
      },
      30_000,
      `both engines to hold about ${share} partitions each`,
    );
    await waitFor(() => client.transitions().length >= 10, 60_000, "transitions mid-burst");

    // 1. Cut engine-2 off NATS; its process keeps running.
    const cutOff = owned(await leases(nc), ids[1]);
    const cutOffMints = cutOff.flatMap((u) => [...units.assetsOf(u)]);
    expect(cutOffMints.filter((m) => scenarioMints.has(m)).length, "the cut-off engine runs some of the scenario's assets").toBeGreaterThan(0);
    const cutAt = Date.now();
    proxy.cut();

    // The other engine takes every partition of the cut-off one once its lease expired, and restores each asset.
    await waitFor(
      async () => {
        const now = await leases(nc);
        const restored = acquiredBy(engine1.lines(), at, cutAt);
        return cutOff.every((u) => now.get(u)?.owner === ids[0]) && cutOffMints.every((m) => restored.has(m));
      },
      20_000,
      "engine-1 to take the cut-off partitions",
    );
    const takenAt = new Map<string, number>();
    for (const h of watch.history) if (h.op === "PUT" && h.value?.owner === ids[0] && h.at >= cutAt && !takenAt.has(h.key)) takenAt.set(h.key, h.at);
    // Engine-2 fenced itself: each of its partitions stopped before engine-1's first write of that lease.
    const fencedAt = new Map<string, number>();
    for (const l of engine2.lines()) {
      if (l["msg"] === "lease not renewed in time: stopping the asset before it can expire" && at(l) >= cutAt && !fencedAt.has(String(l["mint"]))) fencedAt.set(String(l["mint"]), at(l));
    }
    for (const u of cutOff) {
      expect(fencedAt.get(u), `partition ${u} fenced by engine-2`).toBeDefined();
      expect(takenAt.get(`partition.${u}`), `partition ${u} taken by engine-1`).toBeDefined();
      expect(fencedAt.get(u)!, `partition ${u}: engine-2 stopped before engine-1 took it`).toBeLessThan(takenAt.get(`partition.${u}`)!);
    }
    // The intake moved too: engine-2 stopped publishing (fenced) and engine-1 continued after its watermark.
    await waitFor(() => engine1.lines().some((l) => l["msg"] === "this engine is the intake" && at(l) >= cutAt), 20_000, "engine-1 to be the intake");
    expect(engine2.lines().some((l) => l["msg"] === "this engine is no longer the intake" && at(l) >= cutAt)).toBe(true);
    const restoredBy = acquiredBy(engine1.lines(), at, cutAt);
    const restoredAt = Math.max(...cutOffMints.map((m) => at(restoredBy.get(m)!)));

    // 2. Heal after a few more seconds: engine-2 comes back and the partitions are shared again.
    await sleep(3_000);
    const healAt = Date.now();
    proxy.heal();
    let rejoinedAt = 0;
    await waitFor(
      async () => {
        const now = await leases(nc);
        const counts = ids.map((id) => owned(now, id).length);
        if (counts[1]! > 0 && counts[0]! + counts[1]! === units.units.length && counts.every((c) => c <= share)) rejoinedAt ||= Date.now();
        return rejoinedAt > 0;
      },
      45_000,
      "engine-2 to rejoin and the partitions to be shared again",
    );

    // 3. Cut the second API process off NATS: its clients are closed (1013, upstream_unavailable) and resume on the
    // first one from the last transition they processed.
    const jsm = await jetstreamManager(nc);
    const before = failovers.map((c) => c.transitions.length);
    const apiCutAt = Date.now();
    apiProxy.cut();
    await waitFor(() => failovers.every((c) => c.closes.some((x) => x.at >= apiCutAt && x.url === urls[0])), 20_000, "the cut-off API process to close its clients");
    const apiClosedAt = Math.max(...failovers.map((c) => c.closes.find((x) => x.at >= apiCutAt)!.at));
    for (const c of failovers) {
      expect(c.closes.find((x) => x.at >= apiCutAt)?.code, c.name).toBe(1013);
      expect(c.errors.map((e) => e["error"]), c.name).toContain("upstream_unavailable");
    }
    const lastSeq = (await jsm.streams.info("PEG_TRANSITIONS")).state.last_seq;
    await waitFor(() => failovers.every((c) => c.transitions.some((m) => m.via === urls[1] && (m["seq"] as number) > lastSeq)), 60_000, "transitions through the other API process");
    expect(failovers.map((c) => c.transitions.length - before[failovers.indexOf(c)]!).every((n) => n > 0)).toBe(true);
    apiProxy.heal();

    // 4. The end of the scenario: the acknowledged history is the offline replay, and every client saw all of it.
    // If they never all come, the comparison says which are missing (and the artifacts what the stream holds).
    const complete = await waitFor(async () => (await jsm.streams.info("PEG_TRANSITIONS")).state.messages >= expected.length, 150_000, `${expected.length} transitions`).then(
      () => true,
      () => false,
    );
    if (complete) await sleep(1_000);
    const { receipts, firstSeq } = await ackedHistory(jsm);
    const intakeGaps = await missingIntakeSamples(jsm, scenario.samples);
    writeArtifact("acked.txt", receipts.map((r, i) => `${firstSeq + i} ${r.asset} ${r.from_state}->${r.to_state} at ${r.detected_at}`).join("\n"));
    writeArtifact("intake-missing.txt", intakeGaps.join("\n"));
    const context = `cut at ${new Date(cutAt).toISOString()}, healed at ${new Date(healAt).toISOString()}${complete ? "" : `, ${receipts.length} of ${expected.length} transitions after 150 s`}`;
    const counts = expectReplayed(receipts, expected, context);
    await waitFor(() => client.transitions().length >= receipts.length, 20_000, "the client to receive every transition");
    expect(client.closed).toBeNull();
    expect(client.transitions().map((m) => m["alert_id"])).toEqual(receipts.map((r) => r.alert_id));
    expect(client.transitions().map((m) => m["seq"])).toEqual(receipts.map((_, i) => firstSeq + i));
    await waitFor(() => failovers.every((c) => c.transitions.length >= receipts.length), 20_000, "the failover clients to receive every transition");
    for (const c of failovers) expect(c.transitions.map((m) => m["alert_id"]), `${c.name}: every transition once, in order, across the failover`).toEqual(receipts.map((r) => r.alert_id));
    expect(earlyHandovers(watch.history)).toEqual([]);
    watch.stop();
    // Through both intakes, every sample of the scenario reached PEG_INTAKE (published twice at the handover at most).
    expect(intakeGaps).toEqual([]);

    const measured = {
      partitions: units.units.length,
      cut_off_partitions: cutOff.length,
      cut_off_assets: cutOffMints.length,
      partition_fenced_ms: Math.max(...fencedAt.values()) - cutAt,
      cut_to_taken_ms: Math.max(...takenAt.values()) - cutAt,
      cut_to_restored_ms: restoredAt - cutAt,
      heal_to_rejoined_ms: rejoinedAt - healAt,
      api_cut_to_clients_closed_ms: apiClosedAt - apiCutAt,
      transitions: receipts.length,
      transitions_lost: counts.lost,
      transitions_duplicated: counts.duplicated,
      double_owner_transitions: counts.invented,
    };
    process.stdout.write(`NETSPLIT ${JSON.stringify(measured)}\n`);
    client.ws.close();
    for (const c of failovers) c.close();
    await nc.close();
  }, 300_000);
});
