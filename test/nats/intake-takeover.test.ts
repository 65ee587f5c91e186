/**
 * A take-over with the shared intake resumes after the last sample its state reflects, by that sample's own stamp
 * (issue 26, the intake-failover loss). A live feed's sample is evaluated when the intake received it, later than
 * its stamp; under load later than the next samples' stamps. Resuming after the state's evaluation instant dropped
 * those next samples as already applied: 5,142 samples of a 10,000-asset failover were never evaluated.
 *
 * Two engines over a real nats-server, one partition, the intake's history given directly (`PartitionIntake`): A
 * evaluates samples stamped every 2 s that arrived 5 s late, then hands over, gracefully (its snapshot) or killed
 * right after a transition (no snapshot of it: the state comes from the transition message), or B's own evaluation
 * lags behind A's (its clock before the state's instant, as under load, when it skipped the catch-up). B must evaluate
 * each later sample exactly once, in order, and none of A's again.
 */
import { jetstream } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { ActorHost } from "../../src/actors/index.ts";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import { SimulatedClock, systemClock } from "../../src/clock.ts";
import { D, type Sample } from "../../src/methodology/index.ts";
import { EngineLink, ensureTopology, lastTransition, natsLeaseStore, startPartition, type Partition, type PartitionIntake } from "../../src/streams/jetstream/index.ts";
import type { ReceivedSample } from "../../src/streams/jetstream/recent-samples.ts";
import { startNats, type TestNats } from "../support/nats.ts";
import { waitFor } from "../support/ports.ts";

const asset = loadShippedCatalog().active[0]!;
const T0 = Date.parse("2026-06-01T00:00:00Z");
/** Sample k is stamped T0 + 2 s·k and reaches the engines 5 s later: past the stamps of samples k+1 and k+2. */
const LATE_MS = 5_000;
const received = (k: number, gated = false): ReceivedSample => {
  const ts = T0 + 2_000 * k;
  const oracle = gated ? { pyth: { price: new D(1), conf: new D("0.2"), publish_time: ts } } : {};
  const sample: Sample = { asset: asset.symbol, ts, intrinsic_usd: new D(1), market_usd: new D("0.999"), intrinsic_sol: null, market_sol: null, cr: null, oracle, intrinsic_stale: false };
  return { sample, at: ts + LATE_MS };
};
const ALL = Array.from({ length: 10 }, (_, i) => received(i + 1, i + 1 === 5));

interface Engine {
  readonly nc: NatsConnection;
  readonly clock: SimulatedClock;
  readonly host: ActorHost;
  readonly link: EngineLink;
  readonly partition: Partition;
  /** The stamps of the samples this engine evaluated, in order. */
  readonly evaluated: number[];
}

describe("a shared-intake take-over resumes after its state's last sample, by stamp", () => {
  // A server per case: the asset's snapshot and transitions of one case must not be the next one's start.
  let nats: TestNats | undefined;
  const servers: TestNats[] = [];
  const engines: Engine[] = [];
  beforeEach(async () => {
    nats = await startNats();
    servers.push(nats);
  }, 60_000);
  afterAll(async () => {
    for (const e of engines) {
      e.host.stop();
      if (!e.nc.isClosed()) await e.nc.close();
    }
    for (const s of servers) await s.dispose();
  });

  /** An engine whose intake history is `history` (the real one returns a partition's samples from about `after`). */
  async function engine(id: string, now: number, history: readonly ReceivedSample[]): Promise<Engine> {
    const nc = await connect({ servers: nats!.url });
    const topology = await ensureTopology(nc);
    const clock = new SimulatedClock(now);
    const host = new ActorHost({ assets: [asset], clock, gitSha: "" });
    // Snapshots only on hand-over: a killed engine leaves none of its last states.
    const link = new EngineLink(host, nc, jetstream(nc), topology, { snapshotEveryMs: 600_000, retryBaseMs: 20 });
    link.start();
    const intake: PartitionIntake = { hold: () => ({ history: () => Promise.resolve(history), release: () => [], cancel: () => {} }), drop: () => {} };
    const store = await natsLeaseStore(nc, 1);
    const partition = startPartition({ store, host, link, topology, assets: [asset], clock: systemClock, engineClock: clock, log: () => {}, partitions: 1, self: id, intake, lease: { ttlMs: 1_500, renewEveryMs: 300 } });
    const evaluated: number[] = [];
    host.events$.subscribe((e) => {
      if (e.kind === "state" && e.trigger === "sample") evaluated.push(e.sample.ts);
    });
    const e = { nc, clock, host, link, partition, evaluated };
    engines.push(e);
    await partition.leases.start();
    return e;
  }

  /** Engine A runs the asset cold and evaluates samples 1..5 live, each at its arrival. */
  async function firstOwner(id: string): Promise<Engine> {
    const a = await engine(id, T0, []);
    await waitFor(() => a.host.runs(asset.mint), 20_000, "A to run the asset");
    for (const x of ALL.slice(0, 5)) {
      a.clock.set(x.at);
      expect(a.partition.ingest(x.sample, x.at)).toEqual({ status: "accepted" });
    }
    expect(a.evaluated).toEqual(ALL.slice(0, 5).map((x) => x.sample.ts));
    return a;
  }

  /**
   * Engine B takes the asset over at the arrival of sample 10 (or, `lagging`, with its evaluation still at sample 3's
   * arrival, behind the state it restores) and must evaluate 6..10 from the history, which holds them all (a superset
   * of what the real one returns from about `after`).
   */
  async function takeOver(id: string, lagging = false): Promise<Engine> {
    const b = await engine(id, lagging ? ALL[2]!.at : ALL[9]!.at, ALL);
    await waitFor(() => b.host.runs(asset.mint), 20_000, "B to run the asset");
    expect(b.evaluated).toEqual(ALL.slice(5).map((x) => x.sample.ts));
    // Live from here: a sample evaluated already is not evaluated again, the next one is.
    expect(b.partition.ingest(ALL[9]!.sample, ALL[9]!.at + 1)).toEqual({ status: "released" });
    const next = received(11);
    b.clock.set(next.at);
    expect(b.partition.ingest(next.sample, next.at)).toEqual({ status: "accepted" });
    expect(b.evaluated).toEqual([...ALL.slice(5), next].map((x) => x.sample.ts));
    return b;
  }

  it("from the snapshot a graceful hand-over flushed", async () => {
    const a = await firstOwner("a-graceful");
    await a.partition.stop();
    const b = await takeOver("b-graceful");
    await b.partition.stop();
    await b.link.close();
    await a.link.close();
  }, 60_000);

  it("when this engine's evaluation is behind the restored state (a backlog under load)", async () => {
    const a = await firstOwner("a-ahead");
    await a.partition.stop();
    const b = await takeOver("b-lagging", true);
    await b.partition.stop();
    await b.link.close();
    await a.link.close();
  }, 60_000);

  it("from the transition message of an engine killed before its snapshot", async () => {
    const a = await firstOwner("a-killed");
    // Sample 5 failed the oracle-confidence gate: PEGGED -> UNKNOWN, published and acknowledged.
    const topology = await ensureTopology(a.nc);
    await waitFor(async () => (await lastTransition(topology, asset.mint)) !== null, 10_000, "A's transition to be stored");
    const stored = await lastTransition(topology, asset.mint);
    expect(stored!.sampleTs).toBe(ALL[4]!.sample.ts);
    // Killed: no release, no snapshot; B acquires once the lease has expired.
    await a.nc.close();
    a.host.stop();
    await takeOver("b-after-kill");
  }, 60_000);
});
