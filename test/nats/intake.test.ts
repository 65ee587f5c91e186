/**
 * The shared intake (issue 26 item 2) on a real nats-server: what the intake publishes to PEG_INTAKE and how an engine
 * reads it.
 * - the codec gives back every sample and supply, and refuses what is not an intake message;
 * - an engine evaluates only the partitions it runs, in the order of the samples' instants across partitions, and a
 *   dwell timer fires between the samples before and after its deadline, whatever order the messages of one group
 *   arrive in (the watermark of the group's first messages holds the later samples back);
 * - a partition being acquired: its history up to the hold and what arrives during the hold, together exactly once;
 * - the intake lease: one intake at a time; a new intake continues after the stream's watermark; an intake whose
 *   renewals stop answering stops publishing before another one can take the lease (decided on the stream's order).
 */
import { jetstreamManager } from "@nats-io/jetstream";
import { Subject } from "rxjs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import { SimulatedClock, systemClock } from "../../src/clock.ts";
import { D, type Sample } from "../../src/methodology/index.ts";
import { decodeIntakeBatch, decodeIntakeSupplies, encodeIntakeBatch, encodeIntakeSupplies, IntakeBatchError } from "../../src/streams/jetstream/intake-batch.ts";
import { IntakeConsumer } from "../../src/streams/jetstream/intake-consumer.ts";
import { IntakeLeader, INTAKE_LEASE_KEY, type IntakeSource } from "../../src/streams/jetstream/intake-leader.ts";
import { IntakePublisher } from "../../src/streams/jetstream/intake-publisher.ts";
import { partitionOf } from "../../src/streams/jetstream/lease-partitions.ts";
import { natsLeaseStore, type LeaseStore } from "../../src/streams/jetstream/leases.ts";
import { PipelinedPublisher } from "../../src/streams/jetstream/pipelined-publisher.ts";
import type { ReceivedSample } from "../../src/streams/jetstream/recent-samples.ts";
import { ensureIntakeStream, TOPOLOGY } from "../../src/streams/jetstream/topology.ts";
import { natsForSuite } from "../support/nats.ts";
import { waitFor } from "../support/ports.ts";

const PARTITIONS = 8;
const catalog = loadShippedCatalog();
const mintOf = (symbol: string) => catalog.bySymbol(symbol)?.mint;
const partitionOfSymbol = (symbol: string) => partitionOf(mintOf(symbol)!, PARTITIONS);
/** Two assets in different partitions. */
const [A, B] = (() => {
  const symbols = catalog.active.map((a) => a.symbol);
  const a = symbols[0]!;
  const b = symbols.find((s) => partitionOfSymbol(s) !== partitionOfSymbol(a))!;
  return [a, b];
})();
/** A minute ago: the stream stamps messages with the wall clock, and a history read starts from an instant's wall time. */
const T0 = Date.now() - 60_000;

function sample(asset: string, ts: number, market = "1"): Sample {
  return { asset, ts, intrinsic_usd: new D(1), market_usd: new D(market), intrinsic_sol: null, market_sol: null, cr: null, oracle: {}, intrinsic_stale: false };
}

const suite = natsForSuite();
const log = (level: string, msg: string, fields?: unknown) => (process.env["DEBUG_INTAKE"] ? console.log(level, msg, fields) : undefined);

beforeAll(async () => {
  await ensureIntakeStream(await jetstreamManager(suite.nc), 1);
});

/** Empties PEG_INTAKE, so each test reads only its own messages. */
async function purge(): Promise<void> {
  await (await jetstreamManager(suite.nc)).streams.purge(TOPOLOGY.intake.stream);
}

function publisher(): IntakePublisher {
  return new IntakePublisher({ publisher: new PipelinedPublisher(suite.nc), partitions: PARTITIONS, mintOf, maxQueued: 10_000, log });
}

describe("PEG_INTAKE", () => {
  it("is created by engines starting together, and bounded by the largest halving the server can reserve", async () => {
    const jsm = await jetstreamManager(suite.nc);
    await jsm.streams.delete(TOPOLOGY.intake.stream);
    // Different bounds at once (as after each start halved what its servers could not reserve): the adds after the
    // first find it created with another configuration, and update it instead of failing the start.
    const bounds = await Promise.all([1, 2, 3, 4, 5].map((k) => ensureIntakeStream(jsm, 1, k * 64 * 2 ** 20)));
    expect(bounds).toEqual([1, 2, 3, 4, 5].map((k) => k * 64 * 2 ** 20));
    const info = await jsm.streams.info(TOPOLOGY.intake.stream);
    expect(info.config.subjects).toEqual([TOPOLOGY.intake.subjects]);
    // 64 GiB does not fit the server's file store (nats.conf): it gets the largest halving that does.
    expect(await ensureIntakeStream(jsm, 1, 64 * 2 ** 30)).toBe(16 * 2 ** 30);
  });
});

describe("intake messages", () => {
  it("give back every sample with its instant, and every supply", async () => {
    const samples: ReceivedSample[] = [
      { sample: sample(A, T0, "0.9931"), at: T0 + 7 },
      { sample: { ...sample(B, T0 + 1), market_sol: new D("1.1"), intrinsic_sol: new D("1.2"), oracle: { pyth: { price: new D("150.1"), conf: new D("0.05"), publish_time: T0 - 400 } } }, at: T0 + 9 },
    ];
    const batch = decodeIntakeBatch(await encodeIntakeBatch(samples, T0 + 10));
    expect(batch.wm).toBe(T0 + 10);
    expect(batch.samples.map((s) => ({ at: s.at, ts: s.sample.ts, market: s.sample.market_usd.toString(), oracle: s.sample.oracle["pyth"]?.price.toString() ?? null }))).toEqual([
      { at: T0 + 7, ts: T0, market: "0.9931", oracle: null },
      { at: T0 + 9, ts: T0 + 1, market: "1", oracle: "150.1" },
    ]);
    const legs = decodeIntakeSupplies(await encodeIntakeSupplies([{ kind: "supply", mint: mintOf(A)!, supply: new D("123456.789"), observed_at: T0 }]));
    expect(legs.map((l) => [l.mint, l.supply.toString(), l.observed_at])).toEqual([[mintOf(A), "123456.789", T0]]);
    expect(() => decodeIntakeBatch(new TextEncoder().encode("{}"))).toThrow(IntakeBatchError);
  });
});

describe("an engine reading PEG_INTAKE", () => {
  let consumer: IntakeConsumer;
  const events: string[] = [];
  let clock: SimulatedClock;

  beforeAll(async () => {
    await purge();
    clock = new SimulatedClock(T0);
    consumer = new IntakeConsumer({ nc: suite.nc, clock, ingest: (s) => events.push(`${s.sample.asset}@${s.at - T0}`), wallOf: (at) => at, log });
    await consumer.start();
  });
  afterAll(() => consumer.stop());

  it("evaluates its partitions in the order of the instants, a timer between, whatever the order within a group", async () => {
    for (const unit of [String(partitionOfSymbol(A)), String(partitionOfSymbol(B))]) consumer.hold(unit).release();
    events.length = 0;
    clock.setTimeout(() => events.push(`timer@${clock.now() - T0}`), 150);
    const p = publisher();
    // A's later sample first: its partition's batch is the group's first message, stamped with the previous watermark.
    p.add({ sample: sample(A, T0 + 200), at: T0 + 200 });
    p.add({ sample: sample(B, T0 + 100), at: T0 + 100 });
    p.seal(T0 + 250);
    await p.close();
    await waitFor(() => clock.now() === T0 + 250, 10_000, "the watermark");
    expect(events).toEqual([`${B}@100`, "timer@150", `${A}@200`]);
  });

  it("decodes nothing of a partition it does not run, and follows its watermark", async () => {
    const other = catalog.active.map((a) => a.symbol).find((s) => ![partitionOfSymbol(A), partitionOfSymbol(B)].includes(partitionOfSymbol(s)))!;
    const decoded = consumer.stats.decoded;
    events.length = 0;
    const p = publisher();
    p.add({ sample: sample(other, T0 + 300), at: T0 + 300 });
    p.seal(T0 + 400);
    await p.close();
    await waitFor(() => clock.now() === T0 + 400, 10_000, "the watermark");
    expect(events).toEqual([]);
    expect(consumer.stats.decoded).toBe(decoded);
  });

  it("gives an acquired partition its history up to the hold and what came meanwhile, each sample once", async () => {
    const unit = String(partitionOfSymbol(A));
    consumer.drop(unit);
    const p = publisher();
    for (let i = 0; i < 5; i++) p.add({ sample: sample(A, T0 + 1_000 + i), at: T0 + 1_000 + i });
    p.seal(T0 + 1_010);
    await waitFor(() => clock.now() === T0 + 1_010, 10_000, "the first group");
    const hold = consumer.hold(unit);
    for (let i = 5; i < 10; i++) p.add({ sample: sample(A, T0 + 1_000 + i), at: T0 + 1_000 + i });
    p.seal(T0 + 1_020);
    await p.close();
    await waitFor(() => clock.now() === T0 + 1_020, 10_000, "the second group");
    events.length = 0;
    const history = await hold.history(T0 + 1_002);
    const meanwhile = hold.release();
    // From about `after` (a slack before it: the partition drops what its state already reflects), up to the hold.
    expect(history.map((s) => s.at - T0).filter((at) => at >= 1_000)).toEqual([1_000, 1_001, 1_002, 1_003, 1_004]);
    expect(meanwhile.map((s) => s.at - T0)).toEqual([1_005, 1_006, 1_007, 1_008, 1_009]);
    expect(events).toEqual([]);
    // This engine received all of it: read from what it kept, not from the stream.
    expect(consumer.stats.histories_kept).toBe(1);
    expect(consumer.stats.histories_read).toBe(0);
  });

  it("reads the history from the stream when it was not received (an engine started after it)", async () => {
    const late = new IntakeConsumer({ nc: suite.nc, clock: new SimulatedClock(T0), ingest: () => {}, wallOf: (at) => at, log });
    await late.start();
    try {
      const hold = late.hold(String(partitionOfSymbol(A)));
      const history = await hold.history(T0 + 1_002);
      hold.release();
      expect(history.map((s) => s.at - T0).filter((at) => at >= 1_000)).toEqual([1_000, 1_001, 1_002, 1_003, 1_004, 1_005, 1_006, 1_007, 1_008, 1_009]);
      expect(late.stats.histories_read).toBe(1);
    } finally {
      await late.stop();
    }
  });

  it("holds one asset's samples alone when asked, its partition's other assets evaluated live meanwhile", async () => {
    const unit = String(partitionOfSymbol(A));
    const other = catalog.active.map((a) => a.symbol).find((x) => x !== A && partitionOfSymbol(x) === partitionOfSymbol(A))!;
    consumer.hold(unit).release();
    events.length = 0;
    const hold = consumer.hold(unit, new Set([A]));
    const p = publisher();
    p.add({ sample: sample(A, T0 + 2_000), at: T0 + 2_000 });
    p.add({ sample: sample(other, T0 + 2_001), at: T0 + 2_001 });
    p.seal(T0 + 2_010);
    await p.close();
    await waitFor(() => clock.now() === T0 + 2_010, 10_000, "the watermark");
    // The other asset was evaluated; A's sample waits for its restore.
    expect(events).toEqual([`${other}@2001`]);
    expect(hold.release().map((s) => `${s.sample.asset}@${s.at - T0}`)).toEqual([`${A}@2000`]);
  });
});

describe("the intake lease", () => {
  /** A source that records where it was opened and emits what the test pushes. */
  function source(): IntakeSource & { opened: number[]; push(at: number): void } {
    const subject = new Subject<{ sample: Sample; at: number }>();
    let wm = -Infinity;
    const opened: number[] = [];
    return {
      opened,
      push: (at) => {
        wm = at;
        subject.next({ sample: sample(A, at), at });
      },
      open: (after) => {
        opened.push(after);
        return { samples: subject.asObservable(), watermark: () => wm };
      },
    };
  }
  /** A lease store whose renewals stop answering when `cut` (a network partition of that engine). */
  function cuttable(store: LeaseStore): LeaseStore & { cut: boolean } {
    const s = {
      cut: false,
      list: (p: string) => store.list(p),
      get: (k: string) => store.get(k),
      create: (k: string, v: Parameters<LeaseStore["create"]>[1]) => store.create(k, v),
      update: (k: string, v: Parameters<LeaseStore["update"]>[1], r: number) =>
        s.cut ? new Promise<number>((_, reject) => setTimeout(() => reject(new Error("TIMEOUT")), 2_000)) : store.update(k, v, r),
      remove: (k: string, r: number) => store.remove(k, r),
      put: (k: string, v: Parameters<LeaseStore["put"]>[1]) => store.put(k, v),
      purge: (k: string) => store.purge(k),
    };
    return s;
  }
  const timing = { ttlMs: 900, renewEveryMs: 100, fenceAfterMs: 500, sealEveryMs: 20 };

  it("runs one intake at a time; a cut-off intake stops publishing before the next one starts; the next continues after its watermark", async () => {
    await purge();
    const kv = await natsLeaseStore(suite.nc, 1);
    await kv.purge(INTAKE_LEASE_KEY).catch(() => {});
    const jsm = await jetstreamManager(suite.nc);
    const [s1, s2] = [source(), source()];
    const [l1, l2] = [cuttable(kv), cuttable(kv)];
    const byId = new Map<string, string>();
    const leader = (self: string, store: LeaseStore, src: IntakeSource) =>
      new IntakeLeader({
        store,
        self,
        jsm,
        source: src,
        publisher: () => {
          const p = publisher();
          return p;
        },
        clock: systemClock,
        log,
        ...timing,
      });
    const e1 = leader("e1", l1, s1);
    e1.start();
    await waitFor(() => e1.leading, 5_000, "e1 leads");
    const e2 = leader("e2", l2, s2);
    e2.start();
    for (let i = 1; i <= 5; i++) s1.push(T0 + i);
    await waitFor(async () => (await jsm.streams.info(TOPOLOGY.intake.stream)).state.messages >= 1, 5_000, "e1's messages");
    // The feed is polled once: e2 has not opened its source while e1 is the intake.
    expect(e2.leading).toBe(false);
    expect(s2.opened).toEqual([]);
    const before = (await jsm.streams.info(TOPOLOGY.intake.stream)).state.last_seq;
    // e1 is cut off: its renewals hang. It must fence itself, then e2 takes over after the lease's expiry.
    l1.cut = true;
    await waitFor(() => !e1.leading, 5_000, "e1 fenced");
    for (let i = 6; i <= 8; i++) s1.push(T0 + i); // after the fence: never published
    await waitFor(() => e2.leading, 5_000, "e2 leads");
    expect(s2.opened.length).toBe(1);
    expect(s2.opened[0]).toBe(T0 + 5);
    s2.push(T0 + 9);
    await waitFor(async () => (await jsm.streams.info(TOPOLOGY.intake.stream)).state.last_seq > before, 5_000, "e2's messages");
    await e2.stop();
    await e1.stop();
    // Stream order decides it: nothing of e1's after e2's first message, and no sample of e1's after its fence.
    const owners: string[] = [];
    const ats: number[] = [];
    for (let seq = 1; seq <= (await jsm.streams.info(TOPOLOGY.intake.stream)).state.last_seq; seq++) {
      const m = await jsm.streams.getMessage(TOPOLOGY.intake.stream, { seq }).catch(() => null);
      if (m === null || m.subject === "peg.intake.tick") continue;
      const id = m.header.get("Nats-Msg-Id").split(".")[0]!;
      if (!byId.has(id)) byId.set(id, `p${byId.size + 1}`);
      owners.push(byId.get(id)!);
      ats.push(...decodeIntakeBatch(m.data).samples.map((s) => s.at - T0));
    }
    expect(owners.join(",")).toMatch(/^(p1,)*p1(,p2)+$/);
    expect(ats).toEqual([1, 2, 3, 4, 5, 9]);
  });
});
