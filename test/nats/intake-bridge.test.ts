/**
 * An engine goes on evaluating while its PEG_INTAKE consumer is gone and no new one can be created (issue 26: after a
 * nats-server loss the consumer's node may be dead, and creating a consumer waits for the meta group's election, 4-9 s
 * on nats-server 2.9; bench:cluster saw engines evaluate nothing for that long). The stream is read by sequence
 * meanwhile, from its leader, with no consumer. Decided by the mechanism: the stream allows one consumer; the test
 * deletes the engine's on the server and takes the slot itself, so no consumer can deliver until the test frees it. Every sample published meanwhile must be evaluated, once, in order; and once a consumer can
 * be created again, it goes on after them.
 */
import { AckPolicy, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import { SimulatedClock } from "../../src/clock.ts";
import { D, type Sample } from "../../src/methodology/index.ts";
import { IntakeConsumer } from "../../src/streams/jetstream/intake-consumer.ts";
import { IntakePublisher } from "../../src/streams/jetstream/intake-publisher.ts";
import { partitionOf } from "../../src/streams/jetstream/lease-partitions.ts";
import { PipelinedPublisher } from "../../src/streams/jetstream/pipelined-publisher.ts";
import { TOPOLOGY } from "../../src/streams/jetstream/topology.ts";
import { natsForSuite } from "../support/nats.ts";
import { waitFor } from "../support/ports.ts";

const PARTITIONS = 8;
const catalog = loadShippedCatalog();
const mintOf = (symbol: string) => catalog.bySymbol(symbol)?.mint;
const A = catalog.active[0]!.symbol;
const T0 = Date.now() - 60_000;
const HOLDER = "slot-holder";

const sample = (ts: number): Sample => ({ asset: A, ts, intrinsic_usd: new D(1), market_usd: new D(1), intrinsic_sol: null, market_sol: null, cr: null, oracle: {}, intrinsic_stale: false });

const suite = natsForSuite();
const log = (_level: string, msg: string, fields?: unknown) => (process.env["DEBUG_INTAKE"] ? console.log(msg, fields) : undefined);
let jsm: JetStreamManager;
let consumer: IntakeConsumer;
const events: number[] = [];

/** One group of A's samples at `ats` (ms after T0), sealed at the last of them, stored when this resolves. */
async function publish(ats: readonly number[]): Promise<void> {
  const publisher = new IntakePublisher({ publisher: new PipelinedPublisher(suite.nc), partitions: PARTITIONS, mintOf, maxQueued: 10_000, log });
  for (const at of ats) publisher.add({ sample: sample(T0 + at), at: T0 + at });
  publisher.seal(T0 + ats.at(-1)!);
  await publisher.close();
}

async function consumerNames(): Promise<string[]> {
  const names: string[] = [];
  for await (const c of jsm.consumers.list(TOPOLOGY.intake.stream)) names.push(c.name);
  return names;
}

beforeAll(async () => {
  jsm = await jetstreamManager(suite.nc);
  // PEG_INTAKE's subjects, with room for one consumer only.
  await jsm.streams.add({ name: TOPOLOGY.intake.stream, subjects: [TOPOLOGY.intake.subjects], max_consumers: 1 });
  consumer = new IntakeConsumer({ nc: suite.nc, clock: new SimulatedClock(T0), ingest: (s) => events.push(s.at - T0), wallOf: (at) => at, log });
  await consumer.start();
  consumer.hold(String(partitionOf(mintOf(A)!, PARTITIONS))).release();
});
afterAll(() => consumer.stop());

describe("an engine whose intake consumer is gone and cannot be re-created", () => {
  it("evaluates what the stream receives meanwhile, once and in order, then goes on with a new consumer", async () => {
    await publish([100, 200]);
    await waitFor(() => events.length === 2, 10_000, "the first group");

    // The engine's consumer is deleted on the server and the test takes the slot (the engine may create one again
    // before the test's is added: deleted again, until the test's is in).
    expect(await consumerNames()).toHaveLength(1);
    for (;;) {
      for (const name of await consumerNames()) await jsm.consumers.delete(TOPOLOGY.intake.stream, name).catch(() => {});
      if (await jsm.consumers.add(TOPOLOGY.intake.stream, { durable_name: HOLDER, ack_policy: AckPolicy.None }).then(() => true, () => false)) break;
    }

    await publish([300, 400, 500]);
    await publish([600]);
    await waitFor(() => events.length === 6, 20_000, "the groups published while no consumer could be created");
    expect(events).toEqual([100, 200, 300, 400, 500, 600]);
    expect(consumer.stats.bridged).toBeGreaterThanOrEqual(2);
    // No consumer of the engine's could deliver them: the test's held the only slot throughout.
    expect(await consumerNames()).toEqual([HOLDER]);

    // A slot again: a consumer is created after what the bridge read, and nothing is evaluated twice.
    await jsm.consumers.delete(TOPOLOGY.intake.stream, HOLDER);
    await waitFor(async () => (await consumerNames()).length === 1, 20_000, "the engine's consumer created again");
    await publish([700, 800]);
    await waitFor(() => events.length === 8, 10_000, "the group after the re-creation");
    // And nothing more comes (a sample evaluated twice would show up after).
    await new Promise((r) => setTimeout(r, 1_500));
    expect(events).toEqual([100, 200, 300, 400, 500, 600, 700, 800]);
  });
});
