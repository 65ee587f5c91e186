/**
 * Scale-out (issue 8 item 4, issue 15 item 3): a three-node nats-server cluster (JetStream, replicas 3) on loopback,
 * PostgreSQL, two engine processes (ROLE=engine) and two API processes (ROLE=api), replaying `transition-burst` (12
 * assets, 40 scenario minutes) on one shared scenario timeline as a live feed (`SCENARIO_CATCHUP=received`: an engine
 * taking an asset over cannot read what it missed from the scenario, only what it received itself). WebSocket clients
 * subscribe on both API processes. Then:
 * - `kill -9` of one engine: its assets are leased by the other, restored from KV (snapshot or last acknowledged
 *   transition) and fed the samples the survivor received since that state (the gap: skipping them changes the
 *   history, which must equal the offline replay);
 * - SIGKILL of the nats-server leading PEG_TRANSITIONS: clients see nothing different (no WebSocket closed, no
 *   transition missed, public reads keep answering 200).
 * Afterwards: the acknowledged history is exactly the uninterrupted offline replay (nothing lost, duplicated or
 * invented; identical receipts), every transition is in PostgreSQL exactly once, every WebSocket client received
 * every transition once and in order, and a watch of the lease bucket saw no asset change owner before its lease
 * expired. The measured times are printed as one JSON line (`SCALE-OUT`) for docs/scaling.md.
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import { loadScenario } from "../../src/cli/scenario-files.ts";
import { systemClock } from "../../src/clock.ts";
import { replayBundle, verifyBundle } from "../../src/methodology/index.ts";
import { LEASE_BUCKET, type LeaseValue } from "../../src/streams/jetstream/leases.ts";
import { replayScenario } from "../../src/streams/sources/scenario/replay.ts";
import { openStore } from "../../src/store/index.ts";
import { GIT_SHA } from "../methodology/helpers.ts";
import { startNatsCluster, type TestNatsCluster } from "../support/nats-cluster.ts";
import { startPostgres, type TestPostgres } from "../support/postgres.ts";
import { freePort, sleep, waitFor } from "../support/ports.ts";
import { TEST_SECRETS_KEY } from "../support/secrets.ts";
import { spawnServe, type ServeProcess } from "../support/serve.ts";
import { ackedHistory, Client, earlyHandovers, expectReplayed, watchLeases } from "./cluster-checks.ts";
import { acquiredBy, acquiredTotals } from "./acquired.ts";
import { deployedNodeArgs, roleEnv } from "./deploy-env.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const SCENARIO = "transition-burst";
const SPEED = 30;
/** A log line's instant. */
const at = (l: Record<string, unknown>) => Date.parse(String(l["ts"]));

const catalog = loadShippedCatalog();
const scenario = loadScenario(SCENARIO);
const lastTs = scenario.samples[scenario.samples.length - 1]!.ts;
const assets = [...new Set(scenario.samples.map((s) => s.asset))].map((s) => catalog.bySymbol(s)!);
const scenarioMints = new Set(assets.map((a) => a.mint));
// The engines lease every active asset; the scenario feeds 12 of them.
const mints = catalog.active.map((a) => a.mint);
// The engines keep running after the last sample, so dwells pending then commit too: replay past every deadline.
// The engines' receipts are compared hash for hash: they run with this GIT_SHA, not the checkout's HEAD (which moves).
const expected = replayScenario({ ...scenario, until: lastTs + 10 * 60_000 }, { resolve: (s) => catalog.bySymbol(s), gitSha: GIT_SHA }).receipts;

let cluster: TestNatsCluster;
let pg: TestPostgres;
let databaseUrl: string;
const procs: ServeProcess[] = [];
const dirs: string[] = [];

beforeAll(async () => {
  [cluster, pg] = await Promise.all([startNatsCluster(3), startPostgres()]);
  databaseUrl = await pg.createDatabase();
}, 120_000);

afterAll(async () => {
  for (const p of procs) if (p.proc.exitCode === null) p.proc.kill("SIGKILL");
  await Promise.all(procs.map((p) => p.exited));
  // Each process's log, for a failure's post-mortem.
  const out = join(ROOT, "test-results", "scale-out");
  mkdirSync(out, { recursive: true });
  for (const p of procs) writeFileSync(join(out, `${p.name}.log`), p.stderr());
  for (const n of cluster?.nodes ?? []) if (existsSync(n.logFile)) copyFileSync(n.logFile, join(out, `nats-${n.name}.log`));
  await cluster?.dispose();
  await pg?.dispose();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function leases(nc: NatsConnection): Promise<Map<string, LeaseValue>> {
  const kv = await new Kvm(nc).open(LEASE_BUCKET);
  const out = new Map<string, LeaseValue>();
  for (const mint of mints) {
    const e = await kv.get(`asset.${mint}`);
    if (e !== null && e.operation === "PUT") out.set(mint, e.json<LeaseValue>());
  }
  return out;
}

describe("scale-out on a three-node NATS cluster", () => {
  it("partitions assets, survives an engine kill and a NATS node kill, and loses or repeats nothing", async () => {
    // The role files of deploy/env, with this test's servers, store, secrets and feed.
    const env = (role: "engine" | "api", port?: number) => {
      const dir = mkdtempSync(join(tmpdir(), `peg-scale-${role}-`));
      dirs.push(dir);
      return roleEnv(
        role,
        {
          NATS_URL: cluster.urls,
          DATABASE_URL: databaseUrl,
          // One deployment: every process seals and opens the signing keys under the same key.
          SECRETS_KEY: TEST_SECRETS_KEY,
          // Leases per asset, so each engine runs the whole feed (the partition leases and the shared intake run in
          // netsplit.test.ts and intake-failover.test.ts).
          LEASE_PARTITIONS: "0",
          ...(role === "engine" ? { INTAKE: "local" } : {}),
          FEED: `scenario:${SCENARIO}`,
          DATA_DIR: dir,
          METRICS_PORT: "0",
          ...(role === "api" ? { HOST: "127.0.0.1", PORT: String(port) } : {}),
        },
        // Live-style: what an engine missed comes only from the samples it received (RecentSamples), never the file.
        { SCENARIO_SPEED: String(SPEED), SCENARIO_CATCHUP: "received", GIT_SHA, RATE_LIMIT_PER_MIN: "1000000" },
      );
    };
    const apiPorts = [await freePort(), await freePort()];
    // The first API process creates the schema, the topology (replicas 3) and the webhook signing key alone.
    const api1 = spawnServe(env("api", apiPorts[0]), { name: "api-1", nodeArgs: deployedNodeArgs("api") });
    procs.push(api1);
    await api1.started();
    const api2 = spawnServe(env("api", apiPorts[1]), { name: "api-2", nodeArgs: deployedNodeArgs("api") });
    procs.push(api2);
    await api2.started();
    const clients = apiPorts.flatMap((port, i) => [new Client(`api-${i + 1}/a`, `ws://127.0.0.1:${port}/v1/ws`), new Client(`api-${i + 1}/b`, `ws://127.0.0.1:${port}/v1/ws`)]);

    const nc = await connect({ servers: cluster.urls.split(","), maxReconnectAttempts: -1, reconnectTimeWait: 250 });
    // Every lease write, as the bucket saw it: an owner may change only after the previous lease expired or was deleted.
    const watch = await watchLeases(nc, "asset.>", 3);

    const engine1 = spawnServe(env("engine"), { name: "engine-1", nodeArgs: deployedNodeArgs("engine") });
    const engine2 = spawnServe(env("engine"), { name: "engine-2", nodeArgs: deployedNodeArgs("engine") });
    procs.push(engine1, engine2);
    await Promise.all([engine1.started(), engine2.started()]);
    const engineId = (p: ServeProcess) => String(p.lines().find((l) => l["msg"] === "serving")?.["engine"]);
    const ids = [engineId(engine1), engineId(engine2)];

    // Balanced: ceil(N / 2) and the rest, every asset leased once.
    let split: Map<string, LeaseValue> = new Map();
    const share = Math.ceil(mints.length / 2);
    await waitFor(
      async () => {
        split = await leases(nc);
        const now = Date.now();
        const counts = ids.map((id) => [...split.values()].filter((v) => v.owner === id && v.expires_at > now).length);
        return counts[0]! + counts[1]! === mints.length && counts.every((c) => c <= share);
      },
      30_000,
      `both engines to hold about ${share} assets each`,
    );
    await waitFor(() => clients.every((c) => c.transitions().length >= 20), 60_000, "transitions on every client");
    // Every stream and bucket is replicated on the three nodes (one created with a single replica would not survive
    // the loss of its node).
    const jsm0 = await jetstreamManager(nc);
    for (const name of ["PEG_SAMPLES", "PEG_TRANSITIONS", "PEG_DELIVERIES", "KV_peg_actors", "KV_PEG_LEASES"]) {
      expect((await jsm0.streams.info(name)).config.num_replicas, name).toBe(3);
    }

    // 1. kill -9 one engine mid-burst.
    const victimAssets = [...split].filter(([, v]) => v.owner === ids[0]).map(([m]) => m);
    expect(victimAssets.filter((m) => scenarioMints.has(m)).length, "the killed engine runs some of the scenario's assets").toBeGreaterThan(0);
    const killedAt = Date.now();
    engine1.proc.kill("SIGKILL");
    await engine1.exited;
    let leasedAt = 0;
    await waitFor(
      async () => {
        const now = await leases(nc);
        if (victimAssets.every((m) => now.get(m)?.owner === ids[1])) leasedAt ||= Date.now();
        const restored = acquiredBy(engine2.lines(), at, killedAt);
        return leasedAt > 0 && victimAssets.every((m) => restored.has(m));
      },
      15_000,
      "the surviving engine to take over",
    );
    const restoredBy = acquiredBy(engine2.lines(), at, killedAt);
    const restoredAt = Math.max(...victimAssets.map((m) => at(restoredBy.get(m)!)));
    const engineFailoverMs = restoredAt - killedAt;
    expect(leasedAt - killedAt).toBeLessThanOrEqual(10_000);
    expect(engineFailoverMs).toBeLessThanOrEqual(10_000);
    // Restored from KV (snapshot, or the last acknowledged transition), not cold: the scenario's assets (the others
    // never had a sample, so they have no state to restore).
    const movedScenario = victimAssets.filter((m) => scenarioMints.has(m));
    const { from, cold, caughtUp } = acquiredTotals(movedScenario.map((m) => restoredBy.get(m)!));
    expect(movedScenario.every((m) => restoredBy.has(m))).toBe(true);
    expect(cold.filter((m) => scenarioMints.has(m)), "scenario assets restored cold").toEqual([]);
    expect(Object.keys(from).every((s) => s === "snapshot" || s === "transition" || s === "cold"), JSON.stringify(from)).toBe(true);
    // The samples that arrived between the killed engine's last state and the take-over were evaluated (only the
    // scenario's assets have samples).
    expect(caughtUp, "gap samples fed to the restored actors").toBeGreaterThan(0);

    // The owner answers machine inspection through either API process.
    for (const port of apiPorts) {
      const r = await fetch(`http://127.0.0.1:${port}/v1/assets/${assets[0]!.symbol}/machine`);
      expect(r.status).toBe(200);
    }

    // 2. kill the nats-server leading PEG_TRANSITIONS, while reading through both API processes.
    const jsm = await jetstreamManager(nc);
    const leaderName = (await jsm.streams.info("PEG_TRANSITIONS")).cluster?.leader;
    const leader = cluster.nodes.find((n) => n.name === leaderName) ?? cluster.nodes[0]!;
    const seenBefore = clients.map((c) => c.transitions().length);
    const reads: number[] = [];
    let polling = true;
    const poller = (async () => {
      while (polling) {
        for (const port of apiPorts) {
          const r = await fetch(`http://127.0.0.1:${port}/v1/assets/${assets[1]!.symbol}`).catch(() => null);
          reads.push(r?.status ?? 0);
        }
        await sleep(100);
      }
    })();
    const natsKilledAt = Date.now();
    await leader.kill();
    try {
      await waitFor(() => clients.every((c, i) => c.transitions().length > seenBefore[i]! + 5), 45_000, "transitions after the NATS node kill");
    } catch (e) {
      const state = await jsm.streams.info("PEG_TRANSITIONS").then((i) => i.state, (x: unknown) => String(x));
      throw new Error(`${String(e)}; stream ${JSON.stringify(state)}; clients ${JSON.stringify(clients.map((c, i) => [c.name, seenBefore[i], c.transitions().length, c.closed]))}`);
    }
    const natsGapMs = Math.max(...clients.map((c) => c.transitions().find((m) => (m["received_at"] as number) > natsKilledAt)!["received_at"] as number)) - natsKilledAt;
    const newLeader = (await jsm.streams.info("PEG_TRANSITIONS")).cluster?.leader;
    await sleep(2_000);
    polling = false;
    await poller;

    // 3. The end of the scenario (and its last dwells): the acknowledged history is the offline replay.
    await waitFor(
      async () => {
        const info = await jsm.streams.info("PEG_TRANSITIONS");
        return info.state.messages >= expected.length;
      },
      150_000,
      `${expected.length} transitions in PEG_TRANSITIONS`,
    );
    await sleep(1_000);
    const { receipts: acked, firstSeq } = await ackedHistory(jsm);
    const ackedIds = acked.map((r) => r.alert_id);
    expectReplayed(acked, expected, `killed at ${new Date(killedAt).toISOString()}`);
    expect(verifyBundle(JSON.parse(JSON.stringify(replayBundle(acked[0]!)))).exit).toBe(0);

    // Every WebSocket client on either API process received every transition once, in stream order, and stayed open.
    await waitFor(() => clients.every((c) => c.transitions().length >= acked.length), 20_000, "every client to receive every transition");
    for (const c of clients) {
      expect(c.closed, `${c.name} stayed connected`).toBeNull();
      const got = c.transitions();
      expect(got.map((m) => m["alert_id"]), c.name).toEqual(ackedIds);
      expect(got.map((m) => m["seq"])).toEqual(Array.from({ length: acked.length }, (_, i) => firstSeq + i));
    }
    expect(reads.length).toBeGreaterThan(10);
    expect(reads.filter((s) => s !== 200), "public reads during the NATS node kill").toEqual([]);

    // Projected into PostgreSQL exactly once (two engines share the projector consumer).
    const store = await openStore({ kind: "postgres", url: databaseUrl }, systemClock);
    try {
      await waitFor(async () => (await store.alerts({ limit: 1000, offset: 0 })).length >= acked.length, 30_000, "the projection");
      const ids2 = (await store.alerts({ limit: 1000, offset: 0 })).map((a) => a.id);
      expect(ids2.length).toBe(new Set(ids2).size);
      expect([...ids2].sort()).toEqual([...ackedIds].sort());
    } finally {
      await store.close();
    }

    // No asset was ever owned twice: an owner changes only after the previous lease expired or was deleted.
    expect(watch.history.length).toBeGreaterThan(mints.length);
    expect(earlyHandovers(watch.history)).toEqual([]);
    // No take-over (after the kill, or after fencing during the NATS node loss) ever lacked a sample it needed.
    for (const e of [engine1, engine2]) {
      expect(e.lines().filter((l) => String(l["msg"]).startsWith("samples since the restored state are no longer kept")), e.name).toEqual([]);
    }
    watch.stop();

    const measured = {
      engine_kill_to_leases_ms: leasedAt - killedAt,
      engine_kill_to_restored_ms: engineFailoverMs,
      moved_assets: victimAssets.length,
      moved_scenario_assets: victimAssets.filter((m) => scenarioMints.has(m)).length,
      gap_samples_caught_up: caughtUp,
      nats_node_killed: leader.name,
      nats_new_stream_leader: newLeader,
      nats_kill_to_next_ws_transition_ms: natsGapMs,
      reads_during_nats_kill: reads.length,
      reads_not_200: reads.filter((s) => s !== 200).length,
      transitions: acked.length,
      ws_clients: clients.length,
    };
    process.stdout.write(`SCALE-OUT ${JSON.stringify(measured)}\n`);
    for (const c of clients) c.ws.close();
    await nc.close();
  }, 300_000);
});
