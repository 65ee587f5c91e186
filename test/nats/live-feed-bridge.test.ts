/**
 * An API process goes on delivering transitions while its PEG_TRANSITIONS consumer is gone and no new one can be
 * created (issue 26: after a nats-server loss, creating a consumer waits for the meta group's election, 4-9 s on
 * nats-server 2.9). The stream is read by sequence meanwhile, from its leader, with no consumer
 * (src/streams/jetstream/read-by-sequence.ts). Decided by the mechanism: the stream allows one consumer; the test
 * deletes the feed's on the server and takes the slot itself, so no consumer can deliver until the test frees it.
 * Every transition stored meanwhile must reach the sink once and in stream order; once a consumer can be created
 * again, it goes on after them.
 */
import { AckPolicy, jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLiveFeed, type LiveFeed, type LiveSink } from "../../src/streams/jetstream/live-feed.ts";
import { subjects, TOPOLOGY } from "../../src/streams/jetstream/topology.ts";
import { natsForSuite } from "../support/nats.ts";
import { waitFor } from "../support/ports.ts";

const MINT = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";
const HOLDER = "slot-holder";

const suite = natsForSuite();
let jsm: JetStreamManager;
let feed: LiveFeed;
const delivered: { seq: number; alert_id: string }[] = [];
let n = 0;

/** Stores the next transition (alert id `t<n>`); resolves once the stream holds it. */
async function store(): Promise<void> {
  n++;
  const transition = { alert_id: `t${n}`, mint: MINT, asset: "USDC", from_state: "PEGGED", to_state: "DRIFT", discount: "0.004", detected_at: new Date().toISOString() };
  await jetstream(suite.nc).publish(subjects.transition(MINT), JSON.stringify(transition));
}

async function consumerNames(): Promise<string[]> {
  const names: string[] = [];
  for await (const c of jsm.consumers.list(TOPOLOGY.transitions.stream)) names.push(c.name);
  return names;
}

const ids = () => delivered.map((d) => d.alert_id);
const upTo = (k: number) => Array.from({ length: k }, (_, i) => `t${i + 1}`);

beforeAll(async () => {
  jsm = await jetstreamManager(suite.nc);
  // PEG_TRANSITIONS' subjects, with room for one consumer only.
  await jsm.streams.add({ name: TOPOLOGY.transitions.stream, subjects: [TOPOLOGY.transitions.subjects], max_consumers: 1 });
  const sink: LiveSink = { state: () => {}, transition: (t) => void delivered.push({ seq: t.seq, alert_id: t.alert_id }), coverFrom: () => {} };
  feed = await startLiveFeed(suite.nc, sink, { windowMs: 60_000, now: Date.now, log: () => {} });
  await feed.ready;
});
afterAll(() => feed.stop());

describe("a live feed whose transitions consumer is gone and cannot be re-created", () => {
  it("delivers what the stream stores meanwhile, once and in order, then goes on with a new consumer", async () => {
    await store();
    await store();
    await waitFor(() => delivered.length === 2, 10_000, "the first transitions");

    // The feed's consumer is deleted on the server and the test takes the slot (the feed may create one again before
    // the test's is added: deleted again, until the test's is in).
    expect(await consumerNames()).toHaveLength(1);
    for (;;) {
      for (const name of await consumerNames()) await jsm.consumers.delete(TOPOLOGY.transitions.stream, name).catch(() => {});
      if (await jsm.consumers.add(TOPOLOGY.transitions.stream, { durable_name: HOLDER, ack_policy: AckPolicy.None }).then(() => true, () => false)) break;
    }

    for (let i = 0; i < 3; i++) await store();
    await waitFor(() => delivered.length === 5, 20_000, "the transitions stored while no consumer could be created");
    expect(ids()).toEqual(upTo(5));
    // No consumer of the feed's could deliver them: the test's held the only slot throughout.
    expect(await consumerNames()).toEqual([HOLDER]);

    // A slot again: a consumer is created after what the bridge read, and nothing is delivered twice.
    await jsm.consumers.delete(TOPOLOGY.transitions.stream, HOLDER);
    await waitFor(async () => (await consumerNames()).length === 1, 20_000, "the feed's consumer created again");
    await store();
    await store();
    await waitFor(() => delivered.length === 7, 10_000, "the transitions after the re-creation");
    // And nothing more comes (a transition delivered twice would show up after).
    await new Promise((r) => setTimeout(r, 1_500));
    expect(ids()).toEqual(upTo(7));
    expect(delivered.map((d) => d.seq)).toEqual(upTo(7).map((_, i) => i + 1));
  });
});
