/**
 * Issue 26 item 3 (c): an API process's transitions consumer (an ordered consumer: one replica) lives on one node of
 * the cluster. When that node is SIGKILLed the client would only ask the dead consumer for its info again and again;
 * the live feed notices the missed heartbeats (2 s) and re-creates it after the last sequence delivered, so the next
 * transition reaches the feed's sink within moments of JetStream storing it, without waiting for the stream to move and
 * a 3 s stall (the watchdog, 8 s after a loss in bench:cluster). Three-node nats-server 2.9 cluster, replicas 3.
 */
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BoundedPublisher, ensureTopology, startLiveFeed, subjects, TOPOLOGY, type LiveSink } from "../../src/streams/jetstream/index.ts";
import { startNatsCluster, type TestNatsCluster } from "../support/nats-cluster.ts";
import { waitFor } from "../support/ports.ts";

let cluster: TestNatsCluster;
let admin: NatsConnection;
let feedNc: NatsConnection;

beforeAll(async () => {
  cluster = await startNatsCluster(3);
  admin = await connect({ servers: cluster.urls.split(","), maxReconnectAttempts: -1, reconnectTimeWait: 250 });
  await ensureTopology(admin, 3);
  feedNc = await connect({ servers: cluster.urls.split(","), maxReconnectAttempts: -1, reconnectTimeWait: 250, noAsyncTraces: true });
}, 60_000);

afterAll(async () => {
  await feedNc?.close();
  await admin?.close();
  await cluster?.dispose();
});

const MINT = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";
const transition = (n: number) =>
  JSON.stringify({ alert_id: `a-${n}`, mint: MINT, asset: "USDC", from_state: "PEGGED", to_state: "WATCH", discount: "0.01", detected_at: new Date().toISOString() });

describe("live feed across the loss of its consumer's node", () => {
  it("re-creates the transitions consumer and delivers the next transition soon after it is stored", async () => {
    const got: { alert_id: string; at: number }[] = [];
    const sink: LiveSink = { state: () => {}, coverFrom: () => {}, transition: (t) => void got.push({ alert_id: t.alert_id, at: performance.now() }) };
    const logged: string[] = [];
    let killedAt: number | null = null;
    const feed = await startLiveFeed(feedNc, sink, { windowMs: 60_000, now: Date.now, log: (_l, msg, f) => logged.push(`${Math.round(performance.now() - (killedAt ?? 0))} ${msg} ${JSON.stringify(f ?? {})}`) });
    await feed.ready;
    const publisher = new BoundedPublisher(jetstream(admin), 4);
    await publisher.publish(subjects.transition(MINT), transition(1), "a-1");
    await waitFor(() => got.length === 1, 10_000, "the first transition");

    const jsm = await jetstreamManager(admin);
    const consumers = await jsm.consumers.list(TOPOLOGY.transitions.stream).next();
    const node = consumers.find((c) => c.config.durable_name === undefined)?.cluster?.leader;
    const victim = cluster.nodes.find((n) => n.name === node);
    expect(victim, `the feed's consumer is on ${String(node)}`).toBeDefined();
    const streamLeader = (await jsm.streams.info(TOPOLOGY.transitions.stream)).cluster?.leader;
    killedAt = performance.now();
    await victim!.kill();
    // Retried until the stream (re-elected if its leader died too) stores it.
    let ack = await publisher.publish(subjects.transition(MINT), transition(2), "a-2", 5_000).catch(() => null);
    while (ack === null) ack = await publisher.publish(subjects.transition(MINT), transition(2), "a-2", 5_000).catch(() => null);
    const storedAt = performance.now();
    await waitFor(() => got.some((g) => g.alert_id === "a-2"), 30_000, "the transition after the node loss", 20);
    const deliveredAt = got.find((g) => g.alert_id === "a-2")!.at;
    if (killedAt === null) throw new Error("not killed");
    const figures = { node, log: logged.slice(-6), stream_leader_killed: streamLeader === node, kill_to_stored_ms: Math.round(storedAt - killedAt), stored_to_delivered_ms: Math.round(deliveredAt - storedAt), kill_to_delivered_ms: Math.round(deliveredAt - killedAt) };
    console.log(`LIVE-FEED-NODE-LOSS ${JSON.stringify(figures)}`);
    // Noticed by its heartbeats (2 s), not by the stream moving plus a 3 s stall.
    expect(deliveredAt - Math.max(storedAt, killedAt + 2_000)).toBeLessThan(1_500);
    expect(got.map((g) => g.alert_id)).toEqual(["a-1", "a-2"]);
    await feed.stop();
  }, 90_000);
});
