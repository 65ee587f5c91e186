/**
 * The per-asset fencing token (docs/scaling.md, "Leases"): every transition is published with JetStream's
 * `Nats-Expected-Last-Subject-Sequence` on `peg.transition.<mint>`, so a stale owner's late publish and the new
 * owner's can never both be stored. On a real nats-server (and a three-node cluster for the lost-ack retry):
 * - the server semantics the engine relies on (0 expects no message on the subject; a wrong sequence is 10071;
 *   a re-publish of a stored msgID is answered `duplicate` by a single server before the sequence is checked);
 * - a stale owner whose held-back publish arrives after the new owner published is rejected and drops it (no retry,
 *   nothing stored twice or out of order, no snapshot written);
 * - a new owner whose token was read before the old owner's late publish landed has its publish rejected, restores
 *   its actor from that late transition through the partition's acquisition path, and continues from it;
 * - a publish whose ack was lost is retried with the same token and counts as acknowledged (single server: duplicate;
 *   cluster: wrong last sequence, resolved by reading the subject's last message).
 */
import { jetstream, JetStreamApiError, type JetStreamClient, type PubAck } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ActorHost, assetStateFromJSON, assetStateToJSON } from "../../src/actors/index.ts";
import { loadShippedCatalog, type CatalogAsset } from "../../src/catalog/index.ts";
import { SimulatedClock, systemClock } from "../../src/clock.ts";
import { D, type Receipt, type Sample } from "../../src/methodology/index.ts";
import {
  EngineLink,
  ensureTopology,
  natsLeaseStore,
  readRecovery,
  startPartition,
  subjects,
  TOPOLOGY,
  type AckedTransition,
  type Topology,
} from "../../src/streams/jetstream/index.ts";
import { startNatsCluster, type TestNatsCluster } from "../support/nats-cluster.ts";
import { startNats, type TestNats } from "../support/nats.ts";
import { sleep, waitFor } from "../support/ports.ts";

const catalog = loadShippedCatalog();
const T0 = Date.UTC(2026, 5, 12, 10, 0, 0);

type Log = { level: string; msg: string; fields: Record<string, unknown> | undefined };

/**
 * A JetStream client whose transition publishes can be held back after they were sent (the engine's view: in
 * flight) or lose their ack after the server stored them.
 */
function gatedJs(js: JetStreamClient) {
  const state = {
    hold: false,
    loseNextAck: false,
    /** While set, transition publishes fail before they reach the server (a timeout, a lost connection). */
    failing: false,
    /** Every transition publish: its msgID and the sequence it expected. */
    calls: [] as { msgID: string | undefined; expected: number | undefined }[],
    /** Transition publishes the server answered (stored, duplicate or rejected). */
    settled: 0,
    held: [] as (() => void)[],
    release(): void {
      this.hold = false;
      for (const go of this.held.splice(0)) go();
    },
  };
  const publish = async (subject: string, data?: Parameters<JetStreamClient["publish"]>[1], opts?: Parameters<JetStreamClient["publish"]>[2]): Promise<PubAck> => {
    if (!subject.startsWith("peg.transition.")) return js.publish(subject, data, opts);
    state.calls.push({ msgID: opts?.msgID, expected: opts?.expect?.lastSubjectSequence });
    if (state.failing) throw new Error("TIMEOUT (test: the publish did not reach the server)");
    if (state.hold) await new Promise<void>((r) => state.held.push(r));
    const ack = await js.publish(subject, data, opts).finally(() => state.settled++);
    if (state.loseNextAck) {
      state.loseNextAck = false;
      throw new Error("TIMEOUT (test: the ack was lost)");
    }
    return ack;
  };
  const client = new Proxy(js, {
    get: (target, p) => {
      if (p === "publish") return publish;
      const v: unknown = Reflect.get(target, p, target);
      return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return { js: client, gate: state };
}

function engine(nc: NatsConnection, topology: Topology, asset: CatalogAsset, clock: SimulatedClock, retryBaseMs = 20) {
  const host = new ActorHost({ assets: [asset], clock, gitSha: "" });
  const { js, gate } = gatedJs(jetstream(nc));
  const logs: Log[] = [];
  const log = (level: string, msg: string, fields?: Record<string, unknown>) => logs.push({ level, msg, fields });
  const link = new EngineLink(host, nc, js, topology, { snapshotEveryMs: 20, retryBaseMs, log });
  const acked: AckedTransition[] = [];
  link.acked$.subscribe((a) => acked.push(a));
  const decided: Receipt[] = [];
  host.events$.subscribe((e) => {
    if (e.kind === "transition") decided.push(e.receipt);
  });
  link.start();
  let t = clock.now();
  /** One sample every `stepMs` (a second) at `market`, `n` times, on this engine's clock. */
  const feed = (market: string, n: number, stepMs = 1000) => {
    for (let i = 0; i < n; i++) {
      t += stepMs;
      clock.set(t);
      host.ingest(sample(asset, t, market), t);
    }
  };
  /** Samples at `market` until the actor decides a new transition (at most 10 minutes). */
  const until = (market: string): Receipt => {
    const before = decided.length;
    for (let i = 0; i < 600 && decided.length === before; i++) feed(market, 1);
    expect(decided.length, `a transition at ${market}`).toBe(before + 1);
    return decided[decided.length - 1]!;
  };
  return {
    host,
    clock,
    link,
    gate,
    logs,
    acked,
    decided,
    feed,
    until,
    at: (ms: number) => {
      t = ms;
      clock.set(ms);
    },
    stop: async () => {
      await link.close();
      host.stop();
    },
  };
}

function sample(asset: CatalogAsset, ts: number, market: string): Sample {
  return { asset: asset.symbol, ts, intrinsic_usd: new D(1), market_usd: new D(market), intrinsic_sol: null, market_sol: null, cr: null, oracle: {}, intrinsic_stale: false };
}

/** The asset's transitions in the stream, in order. */
async function storedTransitions(nc: NatsConnection, mint: string): Promise<{ seq: number; receipt: Receipt }[]> {
  const jsm = (await ensureTopology(nc)).jsm;
  const info = await jsm.streams.info(TOPOLOGY.transitions.stream);
  const out: { seq: number; receipt: Receipt }[] = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
    const m = await jsm.streams.getMessage(TOPOLOGY.transitions.stream, { seq }).catch(() => null);
    if (m !== null && m.subject === subjects.transition(mint)) out.push({ seq: m.seq, receipt: m.json<Receipt>() });
  }
  return out;
}

/** Each stored transition starts where the previous one ended: one chain per asset, nothing twice. */
function expectOneChain(stored: readonly { receipt: Receipt }[]): void {
  const ids = stored.map((s) => s.receipt.alert_id);
  expect(new Set(ids).size, "no alert id stored twice").toBe(ids.length);
  for (let i = 1; i < stored.length; i++) {
    expect(stored[i]!.receipt.from_state, `transition ${i} starts where ${i - 1} ended`).toBe(stored[i - 1]!.receipt.to_state);
  }
}

/** A take-over as the partition does it: state and token read together, the token set before the actor resumes. */
async function fenceFromStream(e: ReturnType<typeof engine>, topology: Topology, asset: CatalogAsset): Promise<number> {
  const read = await readRecovery([asset], topology);
  const seq = read.transitionSeqs.get(asset.mint)!;
  e.link.fence(asset.mint, seq);
  const r = read.states.get(asset.mint);
  if (r !== undefined) e.host.restoreAsset(asset.mint, r.state);
  return seq;
}

/**
 * Puts a new owner's clock right after the previous owner's last snapshot, before the dwell deadline at which the
 * previous owner decided its held-back transition: the new owner does not re-decide that same transition (same alert
 * id, a duplicate) but decides differently from the samples it gets, as with a live feed.
 */
async function resumeBeforeDeadline(e: ReturnType<typeof engine>, topology: Topology, asset: CatalogAsset, deadline: string): Promise<void> {
  const snapshot = assetStateFromJSON(JSON.parse((await topology.actors.get(asset.mint))!.string()));
  const at = snapshot.evaluatedAt! + 100;
  expect(at + 200).toBeLessThan(Date.parse(deadline));
  e.at(at);
}

describe("on one nats-server", () => {
  let nats: TestNats;
  let ncA: NatsConnection;
  let ncB: NatsConnection;
  let topoA: Topology;
  let topoB: Topology;

  beforeAll(async () => {
    nats = await startNats();
    ncA = await connect({ servers: nats.url });
    ncB = await connect({ servers: nats.url });
    topoA = await ensureTopology(ncA);
    topoB = await ensureTopology(ncB);
  }, 30_000);

  afterAll(async () => {
    await ncA?.close();
    await ncB?.close();
    await nats?.dispose();
  });

  it("server semantics: expected last subject sequence 0 means none; a wrong one is 10071; a stored msgID is a duplicate first", async () => {
    const js = jetstream(ncA);
    const subject = subjects.transition("fencingProbe");
    const first = await js.publish(subject, "1", { msgID: "probe-1", expect: { lastSubjectSequence: 0 } });
    expect(first.duplicate).toBe(false);
    const wrong = await js.publish(subject, "2", { msgID: "probe-2", expect: { lastSubjectSequence: 0 } }).catch((e: unknown) => e);
    expect(wrong).toBeInstanceOf(JetStreamApiError);
    expect((wrong as JetStreamApiError).code).toBe(10071);
    const second = await js.publish(subject, "2", { msgID: "probe-2", expect: { lastSubjectSequence: first.seq } });
    // The first publish again, with its old (now wrong) expectation: one server answers with the duplicate.
    const again = await js.publish(subject, "1", { msgID: "probe-1", expect: { lastSubjectSequence: 0 } });
    expect(again).toMatchObject({ duplicate: true, seq: first.seq });
    const stale = await js.publish(subject, "3", { msgID: "probe-3", expect: { lastSubjectSequence: first.seq } }).catch((e: unknown) => e);
    expect((stale as JetStreamApiError).code).toBe(10071);
    expect((await topoA.jsm.streams.getMessage(TOPOLOGY.transitions.stream, { last_by_subj: subject }))?.seq).toBe(second.seq);
  });

  it("a stale owner's publish that arrives after the new owner published is rejected and dropped: no retry, no snapshot", async () => {
    const asset = catalog.bySymbol("USDT")!;
    const a = engine(ncA, topoA, asset, new SimulatedClock(T0));
    expect(await fenceFromStream(a, topoA, asset)).toBe(0);
    a.feed("1", 2);
    const t1 = a.until("0.99");
    await waitFor(() => a.acked.length === 1, 5_000, "A's first transition acked");
    expect(a.link.fencingToken(asset.mint)).toBe(a.acked[0]!.seq);

    // A decides its next transition; the publish is sent, then held back in flight while A fences itself.
    a.gate.hold = true;
    const late = a.until("1");
    await waitFor(() => a.gate.held.length === 1, 5_000, "A's publish in flight");
    a.host.release(asset.mint);
    a.link.revoke(asset.mint);
    await sleep(100); // A's last snapshot flushes (its state before the held-back transition)
    const snapshotBefore = (await topoA.actors.get(asset.mint))!.string();

    // B takes the asset over: restored from the stream and KV, with the token of T1; it decides and publishes.
    const b = engine(ncB, topoB, asset, new SimulatedClock(T0));
    await resumeBeforeDeadline(b, topoB, asset, late.detected_at);
    expect(await fenceFromStream(b, topoB, asset)).toBe(a.acked[0]!.seq);
    expect(b.host.machineState(asset.symbol)).toBe(t1.to_state);
    b.feed("0.95", 1, 100); // before A's deadline: B's actor drops the candidate A committed
    const bNext = b.until("0.95");
    expect(bNext.alert_id).not.toBe(late.alert_id);
    await waitFor(() => b.acked.length === 1, 5_000, "B's transition acked");

    // A's held-back publish reaches JetStream now: rejected, dropped, never retried.
    const settled = a.gate.settled;
    a.gate.release();
    await waitFor(() => a.gate.settled > settled, 5_000, "the server's answer to A's late publish");
    await sleep(300); // a retry would have happened by now (retryBaseMs 20)
    const stored = await storedTransitions(ncA, asset.mint);
    expect(stored.map((s) => s.receipt.alert_id), "A's late transition is not stored after B's").toEqual([t1.alert_id, bNext.alert_id]);
    expectOneChain(stored);
    expect(a.gate.calls.filter((c) => c.msgID === late.alert_id)).toEqual([{ msgID: late.alert_id, expected: a.acked[0]!.seq }]);
    expect(a.acked.map((x) => x.receipt.alert_id)).toEqual([t1.alert_id]);
    expect(a.logs.find((l) => l.msg.includes("fencing token"))).toMatchObject({ level: "warn", fields: { alert_id: late.alert_id } });
    await b.stop();
    await a.stop();
    // A wrote nothing after fencing: the snapshot is B's (written at B's close), never A's discarded state.
    const snapshotAfter = (await topoA.actors.get(asset.mint))!.string();
    expect(snapshotAfter).not.toBe(snapshotBefore);
    expect(assetStateFromJSON(JSON.parse(snapshotAfter)).published).toBe(bNext.to_state);
  }, 30_000);

  it("a publish that failed is not tried again once the lease was lost while it waited to retry", async () => {
    const asset = catalog.bySymbol("USDC")!;
    const a = engine(ncA, topoA, asset, new SimulatedClock(T0), 1_000);
    await fenceFromStream(a, topoA, asset);
    a.feed("1", 2);
    // The publish fails (every send within its 5 s); the engine waits 1 s before trying again, and loses the lease
    // meanwhile; then NATS answers again.
    a.gate.failing = true;
    const decided = a.until("0.97");
    await waitFor(() => a.logs.some((l) => l.msg === "transition publish failed; retrying"), 15_000, "the first attempt to fail");
    a.host.release(asset.mint);
    a.link.revoke(asset.mint);
    const sends = a.gate.calls.filter((c) => c.msgID === decided.alert_id).length;
    a.gate.failing = false;
    await sleep(1_500); // past the retry
    expect(a.gate.calls.filter((c) => c.msgID === decided.alert_id)).toHaveLength(sends);
    expect((await storedTransitions(ncA, asset.mint)).map((s) => s.receipt.alert_id)).not.toContain(decided.alert_id);
    expect(a.acked).toEqual([]);
    await a.stop();
  }, 30_000);

  it("a new owner whose token predates the old owner's late publish restores from it through the partition and continues", async () => {
    const asset = catalog.bySymbol("PYUSD")!;
    const a = engine(ncA, topoA, asset, new SimulatedClock(T0));
    expect(await fenceFromStream(a, topoA, asset)).toBe(0);
    a.feed("1", 2);
    const t1 = a.until("0.99");
    await waitFor(() => a.acked.length === 1, 5_000, "A's first transition acked");

    a.gate.hold = true;
    const late = a.until("1");
    await waitFor(() => a.gate.held.length === 1, 5_000, "A's publish in flight");
    a.host.release(asset.mint);
    a.link.revoke(asset.mint);
    await sleep(100); // A's last snapshot flushes (its state before the held-back transition)

    // B is an engine with a partition: its first lease round acquires the asset and reads the token of T1.
    const b = engine(ncB, topoB, asset, new SimulatedClock(T0));
    await resumeBeforeDeadline(b, topoB, asset, late.detected_at);
    const leaseStore = await natsLeaseStore(ncB, 1);
    const partition = startPartition({
      store: leaseStore,
      host: b.host,
      link: b.link,
      topology: topoB,
      assets: [asset],
      clock: systemClock,
      engineClock: b.clock,
      log: (level, msg, fields) => b.logs.push({ level, msg, fields }),
    });
    try {
      await partition.leases.start();
      await waitFor(() => b.host.runs(asset.mint), 5_000, "B to acquire the asset");
      expect(b.link.fencingToken(asset.mint)).toBe(a.acked[0]!.seq);
      expect(b.host.machineState(asset.symbol)).toBe(t1.to_state);

      // A's late publish lands now, before B publishes anything: it is stored (A's token was still right).
      a.gate.release();
      await waitFor(() => a.acked.length === 2, 5_000, "A's late transition acked");
      const lateSeq = a.acked[1]!.seq;

      // B decides from T1's state: rejected (the stream moved); B restores from the late transition instead.
      b.feed("0.95", 1, 100);
      const settled = b.gate.settled;
      const discarded = b.until("0.95");
      expect(discarded.from_state).toBe(t1.to_state);
      await waitFor(() => b.gate.settled > settled, 5_000, "the server's answer to B's publish");
      const before = await storedTransitions(ncA, asset.mint);
      expect(before.map((s) => s.receipt.alert_id), "B's decision from a stale state is not stored").toEqual([t1.alert_id, late.alert_id]);
      await waitFor(() => b.logs.some((l) => l.msg === "restored asset from the stream after a rejected transition"), 5_000, "B's restore from the stream");
      expect(b.logs.find((l) => l.msg.includes("fencing token"))).toMatchObject({ level: "warn", fields: { alert_id: discarded.alert_id, stream_last_seq: lateSeq } });
      expect(b.acked).toHaveLength(0);
      expect(b.link.fencingToken(asset.mint)).toBe(lateSeq);
      expect(b.host.runs(asset.mint)).toBe(true);
      expect(b.host.machineState(asset.symbol)).toBe(late.to_state);
      await waitFor(async () => assetStateFromJSON(JSON.parse((await topoB.actors.get(asset.mint))!.string())).published === late.to_state, 5_000, "the restored snapshot");

      // B carries on from the late transition's state.
      b.at(Date.parse(late.detected_at) + 60_000);
      const next = b.until("0.95");
      expect(next.from_state).toBe(late.to_state);
      await waitFor(() => b.acked.length === 1, 5_000, "B's transition acked");
      expect(b.acked[0]!.receipt.alert_id).toBe(next.alert_id);

      const stored = await storedTransitions(ncA, asset.mint);
      expect(stored.map((s) => s.receipt.alert_id)).toEqual([t1.alert_id, late.alert_id, next.alert_id]);
      expect(stored.some((s) => s.receipt.alert_id === discarded.alert_id)).toBe(false);
      expectOneChain(stored);
      expect(assetStateToJSON(b.host.engineState(asset.symbol)!).published).toBe(next.to_state);
    } finally {
      await partition.stop();
      await b.stop();
      await a.stop();
    }
  }, 30_000);

  it("a publish whose ack was lost is retried with the same token and acknowledged once (duplicate)", async () => {
    const asset = catalog.bySymbol("USDG")!;
    await lostAckRetry(ncA, topoA, asset, "duplicate");
  }, 30_000);
});

describe("on a three-node cluster (replicas 3)", () => {
  let cluster: TestNatsCluster;
  let nc: NatsConnection;
  let topology: Topology;

  beforeAll(async () => {
    cluster = await startNatsCluster(3);
    nc = await connect({ servers: cluster.urls.split(",") });
    topology = await ensureTopology(nc, 3);
  }, 60_000);

  afterAll(async () => {
    await nc?.close();
    await cluster?.dispose();
  });

  it("a re-publish of a stored msgID with its old expectation is a wrong last sequence here, not a duplicate", async () => {
    const js = jetstream(nc);
    const subject = subjects.transition("fencingClusterProbe");
    const first = await js.publish(subject, "1", { msgID: "cprobe-1", expect: { lastSubjectSequence: 0 } });
    const second = await js.publish(subject, "2", { msgID: "cprobe-2", expect: { lastSubjectSequence: first.seq } });
    const again = await js.publish(subject, "2", { msgID: "cprobe-2", expect: { lastSubjectSequence: first.seq } }).catch((e: unknown) => e);
    // nats-server 2.9 clustered: the expected sequence (when > 0) is checked before the duplicate window.
    expect(again).toBeInstanceOf(JetStreamApiError);
    expect((again as JetStreamApiError).code).toBe(10071);
    expect(second.duplicate).toBe(false);
  });

  it("a publish whose ack was lost is retried with the same token and acknowledged once", async () => {
    await lostAckRetry(nc, topology, catalog.bySymbol("USDC")!, "wrong last sequence");
  }, 30_000);
});

/** `answer`: what the server answers the retry (one server: the duplicate; a 2.9 cluster: wrong last sequence). */
async function lostAckRetry(nc: NatsConnection, topology: Topology, asset: CatalogAsset, answer: "duplicate" | "wrong last sequence"): Promise<void> {
  const e = engine(nc, topology, asset, new SimulatedClock(T0));
  try {
    await fenceFromStream(e, topology, asset);
    e.feed("1", 2);
    const t1 = e.until("0.99");
    await waitFor(() => e.acked.length === 1, 5_000, "the first transition acked");
    const s1 = e.acked[0]!.seq;
    expect(e.link.fencingToken(asset.mint)).toBe(s1);

    e.gate.loseNextAck = true;
    const t2 = e.until("1");
    await waitFor(() => e.acked.length === 2, 10_000, "the retried transition acked");
    const calls = e.gate.calls.filter((c) => c.msgID === t2.alert_id);
    expect(calls.length).toBeGreaterThanOrEqual(2);
    expect(calls.every((c) => c.expected === s1)).toBe(true);
    expect(e.acked[1]).toMatchObject({ duplicate: true });
    const stored = await storedTransitions(nc, asset.mint);
    expect(stored.map((s) => s.receipt.alert_id)).toEqual([t1.alert_id, t2.alert_id]);
    expect(e.acked[1]!.seq).toBe(stored[1]!.seq);
    expect(e.link.fencingToken(asset.mint)).toBe(stored[1]!.seq);
    expect(e.logs.some((l) => l.msg.includes("fencing token"))).toBe(false);
    // A wrong last sequence is resolved by reading the subject's last message: it is this very publish.
    expect(e.logs.some((l) => l.msg.includes("ack was lost"))).toBe(answer === "wrong last sequence");

    // The next transition goes through with the advanced token.
    const t3 = e.until("0.95");
    await waitFor(() => e.acked.length === 3, 5_000, "the next transition acked");
    expect(e.acked[2]).toMatchObject({ duplicate: false });
    const after = await storedTransitions(nc, asset.mint);
    expect(after.map((s) => s.receipt.alert_id)).toEqual([t1.alert_id, t2.alert_id, t3.alert_id]);
    expectOneChain(after);
    expect(e.host.runs(asset.mint)).toBe(true);
  } finally {
    await e.stop();
  }
}
