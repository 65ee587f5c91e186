/**
 * Ordered consumers on a 3-node cluster with one node down (issue 26: a take-over's reads after a nats-server loss).
 * nats-server before 2.12 places an ephemeral consumer of a replicated stream on any of the stream's peers, the
 * offline one included (nats-io/nats-server#7165), and that creation is never answered. The control shows the server
 * does it here: plain creations, one after another, until one times out. `orderedConsumer` then creates every consumer
 * it is asked for, each reading its subject's message, by trying again with a new name (a retry under the first
 * name would meet the first placement). Decided by the server's placement, not by timing: without the retries, all 12
 * creations succeed with a probability of (2/3)^12, under 1 %.
 */
import { DeliverPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { orderedConsumer, ORDERED_CREATE_TRY_MS } from "../../src/streams/jetstream/ordered-consumer.ts";
import { startNatsCluster, type TestNatsCluster } from "../support/nats-cluster.ts";

const STREAM = "ORDERED_PLACEMENT";
const SUBJECTS = 12;

let cluster: TestNatsCluster;
let nc: NatsConnection;

beforeAll(async () => {
  cluster = await startNatsCluster(3);
  nc = await connect({ servers: cluster.urls.split(",") });
  const jsm = await jetstreamManager(nc);
  // startNatsCluster returns once a stream with a replica on each node can be placed.
  await jsm.streams.add({ name: STREAM, subjects: [`${STREAM}.>`], num_replicas: 3 });
  const js = jetstream(nc);
  for (let i = 0; i < SUBJECTS; i++) await js.publish(`${STREAM}.${i}`, String(i));
  // A node that does not lead the stream goes down: the stream keeps its leader and answers; only placements suffer.
  const leader = (await jsm.streams.info(STREAM)).cluster?.leader;
  await cluster.nodes.find((n) => n.name !== leader)!.kill();
}, 90_000);

afterAll(async () => {
  await nc?.close();
  await cluster?.dispose();
});

describe("ordered consumers with a node of three down", () => {
  it("the server leaves some creations unanswered (the control)", async () => {
    const js = jetstream(nc, { timeout: ORDERED_CREATE_TRY_MS });
    const outcomes: string[] = [];
    // Each creation lands on the offline peer with a probability of 1/3: 40 in a row answered is 1 in 10 million.
    for (let i = 0; i < 40 && !outcomes.includes("timeout"); i++) {
      try {
        const c = await js.consumers.get(STREAM, { filter_subjects: `${STREAM}.0`, deliver_policy: DeliverPolicy.All });
        outcomes.push("created");
        await c.delete().catch(() => {});
      } catch (e) {
        outcomes.push(e instanceof Error && /timeout/i.test(e.message) ? "timeout" : String(e));
      }
    }
    expect(outcomes).toContain("timeout");
    expect(outcomes.filter((o) => o !== "created" && o !== "timeout")).toEqual([]);
  }, 120_000);

  it("orderedConsumer creates every consumer, trying again with a new name, and each reads its subject", async () => {
    const retries: string[] = [];
    for (let i = 0; i < SUBJECTS; i++) {
      const opts = { filter_subjects: `${STREAM}.${i}`, deliver_policy: DeliverPolicy.All } as const;
      // A long budget: the mechanism is under test here, not the production budgets (10 s, 5 s).
      const consumer = await orderedConsumer(nc, STREAM, opts, { what: `consumer ${i}`, budgetMs: 60_000, log: (_level, msg) => retries.push(msg) });
      const m = await consumer.next({ expires: 5_000 });
      expect(m?.string()).toBe(String(i));
      await consumer.delete().catch(() => {});
      // The caller's options are not written to: the next try (or call) picks a new name.
      expect(opts).not.toHaveProperty("name_prefix");
    }
    expect(retries.every((r) => /^consumer \d+: NATS did not answer; trying again$/.test(r))).toBe(true);
  }, 240_000);
});
