/**
 * Issue 26 (d): a process starting while NATS does not answer for a few seconds (a loaded machine, a cluster electing)
 * must wait and go on, not exit. bench:cluster lost engines and API processes so: the first JetStream request of a
 * start-up step timed out, the start failed, and its child printed only the TimeoutError (built in nats-core's timer,
 * naming no caller), which read as an unhandled rejection. Here the process reaches nats-server through a proxy that
 * holds every byte (`cut`) from before the step until after the step's request timeout (`heal`).
 */
import { jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureTopology, natsLeaseStore, startBatchConsumer, startLiveFeed, TOPOLOGY, untilAnswered, type LiveSink } from "../../src/streams/jetstream/index.ts";
import { natsForSuite } from "../support/nats.ts";
import { startTcpProxy, type TcpProxy } from "../scale/tcp-proxy.ts";

const suite = natsForSuite();
let proxy: TcpProxy;
let nc: NatsConnection;

beforeAll(async () => {
  await ensureTopology(suite.nc);
  proxy = await startTcpProxy(suite.nats.port);
  nc = await connect({ servers: `nats://127.0.0.1:${proxy.port}`, maxReconnectAttempts: -1, reconnectTimeWait: 250, noAsyncTraces: true });
});

afterAll(async () => {
  await nc?.close();
  await proxy?.close();
});

/** Runs `step` with the link cut, healed after `healAfterMs`. */
async function whileCut<T>(healAfterMs: number, step: () => Promise<T>): Promise<T> {
  proxy.cut();
  const heal = setTimeout(() => proxy.heal(), healAfterMs);
  try {
    return await step();
  } finally {
    clearTimeout(heal);
    proxy.heal();
  }
}

const sink: LiveSink = { state: () => {}, transition: () => {}, coverFrom: () => {} };

describe("start-up steps while NATS does not answer for a while", () => {
  it("the live feed of an API process opens once NATS answers again (its requests time out after 2 s)", async () => {
    const logged: string[] = [];
    const feed = await whileCut(3_500, () => startLiveFeed(nc, sink, { windowMs: 60_000, now: Date.now, log: (_l, msg) => logged.push(msg) }));
    await feed.ready;
    await feed.stop();
    expect(logged.some((m) => m.startsWith("opening the transitions feed: NATS did not answer"))).toBe(true);
  }, 30_000);

  it("the lease bucket opens once NATS answers again (its requests time out after 5 s)", async () => {
    await natsLeaseStore(suite.nc, 1);
    const store = await whileCut(6_500, () => natsLeaseStore(nc, "open"));
    expect(await store.get("engine.nobody")).toBeNull();
  }, 30_000);

  it("a durable consumer starts once NATS answers again", async () => {
    const jsm = await jetstreamManager(nc);
    const c = await whileCut(6_500, () =>
      startBatchConsumer(nc, jsm, { stream: TOPOLOGY.transitions.stream, durable: "start-timeouts", filterSubject: TOPOLOGY.transitions.subjects }, async () => {}),
    );
    await c.stop();
  }, 40_000);

  it("gives up on a failure that is not a timeout at once, and on timeouts after its budget", async () => {
    let calls = 0;
    await expect(untilAnswered("x", async () => (calls++, Promise.reject(new Error("stream not found"))))).rejects.toThrow("stream not found");
    expect(calls).toBe(1);
    const timeout = Object.assign(new Error("timeout"), { name: "TimeoutError" });
    calls = 0;
    await expect(untilAnswered("x", async () => (calls++, Promise.reject(timeout)), { budgetMs: 300, firstWaitMs: 50 })).rejects.toBe(timeout);
    expect(calls).toBeGreaterThan(1);
  });
});
