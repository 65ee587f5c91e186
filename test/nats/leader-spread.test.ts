/**
 * The lease bucket's leader is kept on a node that leads none of the streams a take-over waits on (`LeaderSpread`,
 * docs/scaling.md "Stream leaders"): on a real three-node cluster, PEG_TRANSITIONS is steered onto the lease bucket's
 * leader by step-downs, then one look moves it off; a process not on duty, or a single server, moves nothing.
 */
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemClock } from "../../src/clock.ts";
import { ensureTopology, natsLeaseStore, TOPOLOGY } from "../../src/streams/jetstream/index.ts";
import { LEASE_STREAM, LeaderSpread, stepDownSubject } from "../../src/streams/jetstream/leader-spread.ts";
import { startNatsCluster, type TestNatsCluster } from "../support/nats-cluster.ts";
import { startNats, type TestNats } from "../support/nats.ts";
import { waitFor } from "../support/ports.ts";

const TRANSITIONS = TOPOLOGY.transitions.stream;

async function leaderOf(jsm: JetStreamManager, stream: string): Promise<string | undefined> {
  return (await jsm.streams.info(stream).catch(() => null))?.cluster?.leader;
}

describe("LeaderSpread on a three-node cluster (replicas 3)", () => {
  let cluster: TestNatsCluster;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  beforeAll(async () => {
    cluster = await startNatsCluster();
    nc = await connect({ servers: cluster.urls.split(",") });
    await ensureTopology(nc, 3);
    await natsLeaseStore(nc, 3);
    jsm = await jetstreamManager(nc);
    await waitFor(async () => (await leaderOf(jsm, LEASE_STREAM)) !== undefined && (await leaderOf(jsm, TRANSITIONS)) !== undefined, 30_000, "both leaders");
  }, 60_000);
  afterAll(async () => {
    await nc?.close();
    await cluster?.dispose();
  });

  /** Steps PEG_TRANSITIONS down until the lease bucket's leader leads it too (each step-down elects another peer). */
  async function together(): Promise<string> {
    for (let i = 0; i < 40; i++) {
      const leases = await leaderOf(jsm, LEASE_STREAM);
      const transitions = await leaderOf(jsm, TRANSITIONS);
      if (leases !== undefined && leases === transitions) return leases;
      if (transitions !== undefined) await nc.request(stepDownSubject(TRANSITIONS), undefined, { timeout: 5_000 });
      await waitFor(async () => (await leaderOf(jsm, TRANSITIONS)) !== undefined, 20_000, "a leader of PEG_TRANSITIONS");
    }
    throw new Error("PEG_TRANSITIONS never landed on the lease bucket's leader");
  }

  it("moves a stream that shares the lease bucket's leader off its node, and leaves the bucket's leader where it was", async () => {
    const node = await together();
    const logged: string[] = [];
    const spread = new LeaderSpread({ nc, jsm, duty: () => true, clock: systemClock, log: (_level, msg) => logged.push(msg), streams: [TRANSITIONS] });
    expect(await spread.check()).toEqual({ moved: [TRANSITIONS] });
    expect(logged).toContain("stream leaders moved off the lease bucket's node");
    await waitFor(async () => ![undefined, node].includes(await leaderOf(jsm, TRANSITIONS)), 20_000, "PEG_TRANSITIONS led by another node");
    expect(await leaderOf(jsm, LEASE_STREAM)).toBe(node);
    // Apart now: a second look moves nothing.
    expect(await spread.check()).toEqual({ moved: [] });
  }, 120_000);

  it("a process not on duty moves nothing, though the leaders coincide", async () => {
    const node = await together();
    const spread = new LeaderSpread({ nc, jsm, duty: () => false, clock: systemClock, log: () => {}, streams: [TRANSITIONS] });
    expect(await spread.check()).toEqual({ skipped: "not on duty" });
    expect(await leaderOf(jsm, TRANSITIONS)).toBe(node);
  }, 120_000);

  it("started, it looks on its own every period until the leaders are apart", async () => {
    const node = await together();
    const spread = new LeaderSpread({ nc, jsm, duty: () => true, clock: systemClock, log: () => {}, streams: [TRANSITIONS], everyMs: 200 });
    spread.start();
    await waitFor(async () => ![undefined, node].includes(await leaderOf(jsm, TRANSITIONS)), 30_000, "PEG_TRANSITIONS led by another node");
    await spread.stop();
  }, 120_000);
});

describe("LeaderSpread on a single nats-server", () => {
  let nats: TestNats;
  beforeAll(async () => {
    nats = await startNats();
  }, 60_000);
  afterAll(async () => nats?.dispose());

  it("has nothing to spread: streams of one replica have no peers", async () => {
    const nc = await connect({ servers: nats.url });
    await ensureTopology(nc, 1);
    await natsLeaseStore(nc, 1);
    const spread = new LeaderSpread({ nc, jsm: await jetstreamManager(nc), duty: () => true, clock: systemClock, log: () => {} });
    expect(await spread.check()).toEqual({ skipped: "no cluster" });
    await nc.close();
  });
});
