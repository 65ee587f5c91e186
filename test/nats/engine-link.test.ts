import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ActorHost, assetStateToJSON } from "../../src/actors/index.ts";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import { SimulatedClock } from "../../src/clock.ts";
import { readinessBody } from "../../src/http/routes/health.ts";
import { D, type Sample } from "../../src/methodology/index.ts";
import {
  BULK_FROM,
  EngineLink,
  ensureTopology,
  PipelinedPublisher,
  readRecovery,
  recoverActors,
  subjects,
  TOPOLOGY,
  type AckedTransition,
  type SamplePublisher,
  type Topology,
} from "../../src/streams/jetstream/index.ts";
import { startNats, type TestNats } from "../support/nats.ts";
import { waitFor } from "../support/ports.ts";
import { storedSamples } from "./stored-samples.ts";

const catalog = loadShippedCatalog();
const USDC = catalog.bySymbol("USDC")!;
const USDT = catalog.bySymbol("USDT")!;
const T0 = Date.UTC(2026, 5, 12, 10, 0, 0);

function sample(asset: string, ts: number, market: string): Sample {
  return { asset, ts, intrinsic_usd: new D(1), market_usd: new D(market), intrinsic_sol: null, market_sol: null, cr: null, oracle: {}, intrinsic_stale: false };
}

let nats: TestNats;
let nc: NatsConnection;
let topology: Topology;

beforeAll(async () => {
  nats = await startNats();
  nc = await connect({ servers: nats.url });
  topology = await ensureTopology(nc);
});

afterAll(async () => {
  await nc?.close();
  await nats?.dispose();
});

function engine(clock: SimulatedClock) {
  const host = new ActorHost({ assets: [USDC, USDT], clock, gitSha: "" });
  const link = new EngineLink(host, nc, jetstream(nc), topology, { snapshotEveryMs: 50 });
  const acked: AckedTransition[] = [];
  link.acked$.subscribe((a) => acked.push(a));
  link.start();
  return { host, link, acked };
}

describe("JetStream topology", () => {
  it("is created idempotently with the documented streams, subjects and bucket", async () => {
    await ensureTopology(nc);
    await ensureTopology(nc);
    const names: string[] = [];
    for await (const s of topology.jsm.streams.list()) names.push(s.config.name);
    expect(names.sort()).toEqual(["KV_peg_actors", "PEG_DELIVERIES", "PEG_SAMPLES", "PEG_TRANSITIONS"]);
    const t = await topology.jsm.streams.info(TOPOLOGY.transitions.stream);
    expect(t.config.subjects).toEqual(["peg.transition.>"]);
    expect(t.config.max_age).toBeGreaterThanOrEqual(90 * 24 * 3600 * 1e9);
  });
});

describe("EngineLink", () => {
  it("publishes transitions with Nats-Msg-Id = alert id, acks them in order, and writes snapshots after the ack", async () => {
    const clock = new SimulatedClock(T0);
    const { host, link, acked } = engine(clock);
    host.ingest(sample("USDC", clock.now(), "1"));
    clock.set(T0 + 1000);
    host.ingest(sample("USDC", clock.now(), "0.99"));
    clock.set(T0 + 31_000); // DRIFT commits by the dwell timer
    await waitFor(() => acked.length === 1, 5_000, "the transition ack");
    const [a] = acked;
    expect(a!.receipt.to_state).toBe("DRIFT");
    expect(a!.duplicate).toBe(false);
    const stored = await topology.jsm.streams.getMessage(TOPOLOGY.transitions.stream, { seq: a!.seq });
    expect(stored?.subject).toBe(subjects.transition(USDC.mint));
    expect(stored?.header.get("Nats-Msg-Id")).toBe(a!.receipt.alert_id);
    expect(stored?.json<{ receipt_sha256: string }>().receipt_sha256).toBe(a!.receipt.receipt_sha256);

    // A re-publish of the same decision is a server-side duplicate.
    const again = await jetstream(nc).publish(subjects.transition(USDC.mint), JSON.stringify(a!.receipt), { msgID: a!.receipt.alert_id });
    expect(again.duplicate).toBe(true);

    await link.close();
    const kv = await topology.actors.get(USDC.mint);
    expect(JSON.parse(kv!.string())).toEqual(assetStateToJSON(host.engineState("USDC")!));
    // Every evaluation recorded (batches of samples, published by close at the latest).
    expect((await storedSamples(topology.jsm)).filter((s) => s.mint === USDC.mint).length).toBeGreaterThanOrEqual(3);
    host.stop();
  });

  it("retries a transition through a NATS outage and never writes a snapshot ahead of it", async () => {
    const clock = new SimulatedClock(T0 + 10 * 60_000);
    const { host, link, acked } = engine(clock);
    host.ingest(sample("USDT", clock.now(), "1"));
    await waitFor(async () => (await topology.actors.get(USDT.mint)) !== null, 5_000, "the first snapshot");
    const before = (await topology.actors.get(USDT.mint))!.string();

    await nats.kill();
    clock.increment(1000);
    host.ingest(sample("USDT", clock.now(), "0.99"));
    clock.increment(30_000); // DRIFT decided while JetStream is down
    expect(host.machineState("USDT")).toBe("DRIFT");
    await new Promise((r) => setTimeout(r, 300));
    expect(acked.filter((x) => x.receipt.asset === "USDT")).toHaveLength(0);

    await nats.start();
    await waitFor(() => acked.some((x) => x.receipt.asset === "USDT"), 20_000, "the transition after the outage");
    await link.close();
    const after = JSON.parse((await topology.actors.get(USDT.mint))!.string());
    expect(after.published).toBe("DRIFT");
    expect(after).not.toEqual(JSON.parse(before));
    host.stop();
  }, 60_000);
});

describe("recovery", () => {
  it("restores from the snapshot, or from a newer acknowledged transition, and commits an overdue dwell at its deadline", async () => {
    const clock = new SimulatedClock(T0 + 60 * 60_000);
    const first = engine(clock);
    first.host.ingest(sample("USDC", clock.now(), "1"));
    clock.increment(1000);
    first.host.ingest(sample("USDC", clock.now(), "0.95")); // DEPEG candidate (d 0.015 -> 150 bps)
    const deadline = first.host.deadline("USDC")!;
    await first.link.close();
    first.host.stop();

    // Restart 5 minutes later: the pending escalation commits at its own deadline.
    const clock2 = new SimulatedClock(deadline + 300_000);
    const second = engine(clock2);
    const summary = await recoverActors(second.host, [USDC, USDT], topology);
    expect(summary.fromSnapshot + summary.fromTransition).toBe(2);
    await waitFor(() => second.acked.length === 1, 5_000, "the resumed commit");
    expect(second.acked[0]!.receipt.detected_at).toBe(new Date(deadline).toISOString());
    expect(second.acked[0]!.receipt.inputs_frozen.trigger).toBe("dwell_timer");
    const committed = assetStateToJSON(second.host.engineState("USDC")!);

    // Lose the snapshot write: recovery rebuilds the same state from the acknowledged transition.
    await second.link.close();
    second.host.stop();
    await topology.actors.delete(USDC.mint);
    const third = engine(new SimulatedClock(deadline + 400_000));
    const s3 = await recoverActors(third.host, [USDC], topology);
    expect(s3.fromTransition).toBe(1);
    const rebuilt = assetStateToJSON(third.host.engineState("USDC")!);
    for (const k of ["committed", "candidate", "candidate_since", "ewma", "ewma_prev", "published", "gate", "discount_raw", "confidence"] as const) {
      expect(rebuilt[k], k).toEqual(committed[k]);
    }
    expect(third.acked).toHaveLength(0); // no spurious transition
    await third.link.close();
    third.host.stop();
  }, 60_000);
});

describe("bulk recovery", () => {
  it("reads every asset's snapshot and last transition in one pass each, exactly as the per-asset reads do", async () => {
    const assets = catalog.active;
    expect(assets.length).toBeGreaterThanOrEqual(BULK_FROM);
    const clock = new SimulatedClock(T0 + 5 * 3_600_000);
    const host = new ActorHost({ assets, clock, gitSha: "" });
    const link = new EngineLink(host, nc, jetstream(nc), topology, { snapshotEveryMs: 50 });
    const acked: AckedTransition[] = [];
    link.acked$.subscribe((a) => acked.push(a));
    link.start();
    // Every asset a snapshot; two of them a transition after it (DRIFT, decided by the dwell timer).
    const par = (symbol: string, market: string): Sample => ({ ...sample(symbol, clock.now(), market), intrinsic_usd: new D(1) });
    for (const a of assets.slice(0, 40)) host.ingest(par(a.symbol, "1"));
    clock.increment(1_000);
    for (const s of ["USDC", "USDT"]) host.ingest(par(s, "0.99"));
    clock.increment(31_000);
    await waitFor(() => acked.filter((x) => x.receipt.to_state === "DRIFT").length >= 2, 10_000, "two transitions");
    await link.close();
    host.stop();
    // One snapshot deleted (a purged key reads as none), the rest as written.
    await topology.actors.delete(assets[5]!.mint);

    const asked: string[] = [];
    const options = {
      fromStore: async (mint: string) => (asked.push(mint), null),
      storeHas: async (mints: readonly string[]) => new Set(mints.filter((m) => m === assets[60]!.mint)),
    };
    const bulk = await readRecovery(assets, topology, options);
    // The store is asked only about the one asset it holds alerts for, among those with neither a snapshot nor a transition.
    expect(asked).toEqual([assets[60]!.mint]);
    let restorable = 0;
    for (const a of assets) {
      const one = await readRecovery([a], topology);
      if (one.states.has(a.mint)) restorable++;
      expect(bulk.transitionSeqs.get(a.mint), a.symbol).toBe(one.transitionSeqs.get(a.mint));
      expect(bulk.states.get(a.mint), a.symbol).toEqual(one.states.get(a.mint));
    }
    for (const s of ["USDC", "USDT"]) expect(bulk.transitionSeqs.get(catalog.bySymbol(s)!.mint)).toBeGreaterThan(0);
    // Restoring from the transitions (as after a rejected fencing token) reads the same receipts in bulk.
    const preferred = await readRecovery(assets, topology, { preferTransition: true });
    for (const s of ["USDC", "USDT"]) {
      const mint = catalog.bySymbol(s)!.mint;
      expect(preferred.states.get(mint)?.source).toBe("transition");
      expect(preferred.states.get(mint)).toEqual((await readRecovery([catalog.bySymbol(s)!], topology, { preferTransition: true })).states.get(mint));
    }
    expect(bulk.states.has(assets[5]!.mint)).toBe(false);
    expect(bulk.states.size).toBe(restorable);
    expect(restorable).toBeGreaterThan(30);
  }, 60_000);
});

/*
 * Overload (issue 15): when JetStream cannot take the evaluated samples as fast as they come, the link's queue fills
 * and further samples are dropped. Never silently: each drop is counted (`/metrics` peg_oracle_samples_dropped_total),
 * the link logs a warning (at most every 10 s) and `overload()` gives `/readyz` its reason for 30 s after the last drop.
 */
/** A sample publisher whose publishes never get an ack (a stalled or saturated server). */
const stalled: SamplePublisher = {
  publish: () => new Promise(() => {}),
  stats: { published: 0, failed: 0, inFlight: 0 },
  drain: async () => {},
  close: () => {},
};

describe("EngineLink under overload", () => {
  it("counts, logs and reports dropped samples instead of dropping them silently", async () => {
    const clock = new SimulatedClock(T0);
    const host = new ActorHost({ assets: [USDC], clock, gitSha: "" });
    const warnings: { msg: string; fields?: Record<string, unknown> }[] = [];
    const wall = new SimulatedClock(T0);
    const link = new EngineLink(host, nc, jetstream(nc), topology, {
      samplePublisher: stalled,
      clock: wall,
      maxQueuedSamples: 3,
      snapshotEveryMs: 60_000,
      log: (level, msg, fields) => {
        if (level === "warn") warnings.push({ msg, ...(fields === undefined ? {} : { fields }) });
      },
    });
    link.start();
    expect(link.overload()).toBeNull();
    for (let i = 0; i < 10; i++) {
      clock.set(T0 + i * 1_000);
      host.ingest({ asset: "USDC", ts: clock.now(), intrinsic_usd: new D(1), market_usd: new D("1"), intrinsic_sol: null, market_sol: null, cr: null, oracle: {}, intrinsic_stale: false });
    }
    expect(link.stats).toMatchObject({ queuedSamples: 3, droppedSamples: 7 });
    // One warning for the burst, with the figures.
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ msg: expect.stringMatching(/^overloaded/), fields: { dropped_total: 1, max_queued: 3 } });
    wall.increment(29_000);
    const why = link.overload();
    expect(why).toMatch(/^overloaded: 7 evaluated samples dropped since start, the last 29 s ago/);
    // /readyz: not ready, with the reason.
    const body = readinessBody({ database: true, nats: true, engine: true, snapshot_age_secs: 0, overloaded: why! });
    expect(body).toMatchObject({ ok: false, error: "not_ready", message: why });
    // It clears 30 s after the last drop.
    expect(link.overload(wall.now() + 31_000)).toBeNull();
    host.stop?.();
  });
});

/** A sample publisher whose first publish of each sample message is stored but its ack lost (a timeout). */
function ackLostOnce(inner: SamplePublisher): SamplePublisher {
  const seen = new Set<string>();
  return {
    async publish(subject, data, msgID) {
      const ack = await inner.publish(subject, data, msgID);
      if (msgID !== undefined && !seen.has(msgID)) {
        seen.add(msgID);
        throw new Error("TimeoutError: no ack");
      }
      return ack;
    },
    get stats() {
      return inner.stats;
    },
    drain: () => inner.drain(),
    close: () => inner.close(),
  };
}

describe("EngineLink sample publishes", () => {
  it("retries a sample batch whose ack was lost with the same Nats-Msg-Id: stored once, not counted as dropped", async () => {
    const clock = new SimulatedClock(T0 + 7 * 86_400_000);
    const host = new ActorHost({ assets: [USDT], clock, gitSha: "" });
    const link = new EngineLink(host, nc, jetstream(nc), topology, { samplePublisher: ackLostOnce(new PipelinedPublisher(nc)), retryBaseMs: 5, snapshotEveryMs: 60_000 });
    link.start();
    const stored = async () => (await storedSamples(topology.jsm)).filter((s) => s.mint === USDT.mint).length;
    const before = await stored();
    for (let i = 0; i < 5; i++) {
      clock.increment(1_000);
      host.ingest(sample("USDT", clock.now(), "1"));
    }
    await waitFor(() => link.stats.queuedSamples === 0, 10_000, "the sample publishes to settle");
    expect(link.stats.droppedSamples).toBe(0);
    // Five samples, each stored once although each batch was published twice.
    expect((await stored()) - before).toBe(5);
    await link.close();
    host.stop?.();
  });
});
