/**
 * Ownership by partition (issue 26, item 1; LEASE_PARTITIONS): the stable hash, the lease manager leasing partitions
 * on the fake CAS store (one owner per partition under kills, fair shares within one partition, lease writes that do
 * not grow with the asset count), and two engines over a real nats-server through `startPartition`: every asset run
 * by exactly one engine, only `partition.*` leases in the bucket, and a hand-over that flushes every asset's snapshot
 * before the partition's lease is deleted.
 */
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ActorHost, assetStateFromJSON } from "../../src/actors/index.ts";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import { SimulatedClock, systemClock, type Clock } from "../../src/clock.ts";
import { D, type Sample } from "../../src/methodology/index.ts";
import { EngineLink, ensureTopology, natsLeaseStore, subjects, TOPOLOGY, startPartition, type Partition, type Topology } from "../../src/streams/jetstream/index.ts";
import { fnv1a32, leaseUnits, partitionOf } from "../../src/streams/jetstream/lease-partitions.ts";
import { LeaseManager, type LeaseStore } from "../../src/streams/jetstream/leases.ts";
import { startNats, type TestNats } from "../support/nats.ts";
import { waitFor } from "../support/ports.ts";
import { FakeLeaseBucket, FakeLink } from "./lease-fake-store.ts";

const catalog = loadShippedCatalog();

describe("the partition of an asset", () => {
  it("is FNV-1a 32 of the mint's UTF-8 modulo the count: the reference vectors, the same on every call", () => {
    // FNV-1a 32-bit reference values (the FNV specification's test vectors).
    expect(fnv1a32("")).toBe(0x811c9dc5);
    expect(fnv1a32("a")).toBe(0xe40c292c);
    expect(fnv1a32("foobar")).toBe(0xbf9cf968);
    const usdc = catalog.bySymbol("USDC")!.mint;
    expect(partitionOf(usdc, 64)).toBe(fnv1a32(usdc) % 64);
    expect(partitionOf(usdc, 1)).toBe(0);
    expect(() => partitionOf(usdc, 0)).toThrow(RangeError);
  });

  it("lease units: each asset alone at 0, else the partitions that have assets, every asset in exactly one", () => {
    const mints = catalog.active.map((a) => a.mint);
    const single = leaseUnits(mints, 0);
    expect(single.keyPrefix).toBe("asset.");
    expect(single.units).toEqual(mints);
    const split = leaseUnits(mints, 16);
    expect(split.keyPrefix).toBe("partition.");
    expect(split.units.every((u) => Number(u) >= 0 && Number(u) < 16)).toBe(true);
    expect(split.units.flatMap((u) => split.assetsOf(u)).sort()).toEqual([...mints].sort());
    for (const m of mints) expect(split.assetsOf(split.unitOf(m))).toContain(m);
  });
});

/** Engines leasing `partitions` partitions of `assets` synthetic mints on one fake bucket; counts the lease writes. */
function world(assets: number, partitions: number) {
  const clock = new SimulatedClock(1_000_000);
  const bucket = new FakeLeaseBucket();
  const units = leaseUnits(
    Array.from({ length: assets }, (_, i) => `mint${i}`),
    partitions,
  );
  const running = new Map<string, Set<string>>();
  const violations: string[] = [];
  let writes = 0;
  const engines: { id: string; manager: LeaseManager; alive: boolean }[] = [];
  const spawn = () => {
    const id = `e${engines.length}`;
    const link = new FakeLink(bucket, clock, () => 10);
    const counted: LeaseStore = {
      list: (p) => link.list(p),
      get: (k) => link.get(k),
      create: (k, v) => (writes++, link.create(k, v)),
      update: (k, v, r) => (writes++, link.update(k, v, r)),
      remove: (k, r) => (writes++, link.remove(k, r)),
      put: (k, v) => (writes++, link.put(k, v)),
      purge: (k) => (writes++, link.purge(k)),
    };
    const manager = new LeaseManager({
      store: counted,
      self: id,
      assets: units.units,
      keyPrefix: units.keyPrefix,
      clock,
      ttlMs: 6_000,
      renewEveryMs: 2_000,
      handlers: {
        acquired: async (unit) => {
          for (const mint of units.assetsOf(unit)) {
            const s = running.get(mint) ?? new Set();
            running.set(mint, s);
            if ([...s].some((o) => o !== id)) violations.push(`${mint} started by ${id} while run elsewhere`);
            s.add(id);
          }
        },
        lost: (unit) => {
          for (const mint of units.assetsOf(unit)) running.get(mint)?.delete(id);
        },
        release: async (unit) => {
          for (const mint of units.assetsOf(unit)) running.get(mint)?.delete(id);
        },
      },
    });
    const e = { id, manager, alive: true };
    engines.push(e);
    void manager.start();
    return e;
  };
  const advance = async (ms: number) => {
    const end = clock.now() + ms;
    while (clock.now() < end) {
      clock.set(Math.min(end, clock.now() + 20));
      await new Promise((r) => setImmediate(r));
    }
  };
  return { bucket, units, running, violations, engines, spawn, advance, writes: () => writes };
}

describe("leasing partitions (fake CAS store)", () => {
  it("every partition one owner, each engine within one partition of its share, through a kill", async () => {
    const w = world(1_000, 16);
    w.spawn();
    w.spawn();
    w.spawn();
    await w.advance(30_000);
    const held = w.engines.map((e) => e.manager.held.size);
    expect(held.reduce((a, b) => a + b, 0)).toBe(w.units.units.length);
    for (const n of held) expect(n).toBeLessThanOrEqual(Math.ceil(w.units.units.length / 3));
    expect([...w.bucket.snapshot().keys()].every((k) => k.startsWith("partition.") || k.startsWith("engine."))).toBe(true);
    for (const [, s] of w.running) expect(s.size).toBe(1);
    expect(w.running.size).toBe(1_000);

    const dead = w.engines[0]!;
    dead.manager.abandon();
    dead.alive = false;
    for (const s of w.running.values()) s.delete(dead.id);
    await w.advance(20_000);
    const live = w.engines.filter((e) => e.alive);
    expect(live.reduce((n, e) => n + e.manager.held.size, 0)).toBe(w.units.units.length);
    for (const e of live) expect(e.manager.held.size).toBeLessThanOrEqual(Math.ceil(w.units.units.length / 2));
    for (const [, s] of w.running) expect(s.size).toBe(1);
    expect(w.violations).toEqual([]);
    for (const e of live) e.manager.abandon();
  });

  it("lease writes per second follow the partitions, not the assets", async () => {
    const steady = async (assets: number) => {
      const w = world(assets, 8);
      w.spawn();
      w.spawn();
      await w.advance(30_000);
      const before = w.writes();
      await w.advance(60_000);
      for (const e of w.engines) e.manager.abandon();
      return w.writes() - before;
    };
    const few = await steady(100);
    const many = await steady(10_000);
    // Each renewal period: a heartbeat per engine and a renewal per partition, whatever the asset count.
    expect(many).toBe(few);
    expect(few).toBe((60_000 / 2_000) * (8 + 2));
  });
});

describe("two engines leasing partitions on a nats-server (startPartition)", () => {
  let nats: TestNats;
  const conns: NatsConnection[] = [];
  beforeAll(async () => {
    nats = await startNats();
  }, 60_000);
  afterAll(async () => {
    for (const c of conns) await c.close();
    await nats?.dispose();
  });

  const assets = catalog.active.slice(0, 12);
  const T0 = Date.parse("2026-06-01T00:00:00Z");

  async function engine(id: string, wall: Clock = systemClock): Promise<{
    partition: Partition;
    host: ActorHost;
    link: EngineLink;
    topology: Topology;
    clock: SimulatedClock;
    /** `n` seconds of samples of every asset, at $1 unless `market` says otherwise. */
    feed: (n: number, market?: Readonly<Record<string, string>>) => void;
  }> {
    const nc = await connect({ servers: nats.url });
    conns.push(nc);
    const topology = await ensureTopology(nc);
    const clock = new SimulatedClock(T0);
    const host = new ActorHost({ assets, clock, gitSha: "" });
    const link = new EngineLink(host, nc, (await import("@nats-io/jetstream")).jetstream(nc), topology, { snapshotEveryMs: 60_000, retryBaseMs: 20 });
    link.start();
    const store = await natsLeaseStore(nc, 1);
    const partition = startPartition({ store, host, link, topology, assets, clock: wall, engineClock: clock, log: () => {}, partitions: 4, self: id, lease: { ttlMs: 2_500, renewEveryMs: 500 } });
    let t = T0;
    const feed = (n: number, market: Readonly<Record<string, string>> = {}) => {
      for (let i = 0; i < n; i++) {
        t += 1_000;
        clock.set(t);
        for (const a of assets) {
          const s: Sample = { asset: a.symbol, ts: t, intrinsic_usd: new D(1), market_usd: new D(market[a.symbol] ?? "1"), intrinsic_sol: null, market_sol: null, cr: null, oracle: {}, intrinsic_stale: false };
          partition.ingest(s, t);
        }
      }
    };
    return { partition, host, link, topology, clock, feed };
  }

  it("runs every asset on exactly one engine and hands a partition over with every asset's snapshot flushed first", async () => {
    const a = await engine("engine-a");
    await a.partition.leases.start();
    const b = await engine("engine-b");
    await b.partition.leases.start();
    // Held, then running: an acquired partition's assets start once their states are read.
    await waitFor(
      () => a.partition.heldAssets() + b.partition.heldAssets() === assets.length && a.partition.leases.held.size > 0 && b.partition.leases.held.size > 0 && assets.every((x) => a.host.runs(x.mint) || b.host.runs(x.mint)),
      20_000,
      "both engines to hold partitions and run their assets",
    );
    for (const asset of assets) expect([a, b].filter((e) => e.host.runs(asset.mint))).toHaveLength(1);
    // The cluster's chores (the stream leaders' placement) run on exactly one of them: the holder of the first partition.
    expect([a, b].filter((e) => e.partition.leadsChores())).toHaveLength(1);
    const keys = [...(await a.partition.store.list("partition.")).keys()];
    expect(keys.length).toBe(leaseUnits(assets.map((x) => x.mint), 4).units.length);
    expect(await a.partition.store.list("asset.")).toEqual(new Map());

    // A's assets advance (their snapshots are written only every minute, or when handed over).
    a.feed(5);
    const movedMints = assets.filter((x) => a.partition.holds(x.mint)).map((x) => x.mint);
    expect(movedMints.length).toBeGreaterThan(0);
    const evaluated = new Map(movedMints.map((m) => [m, a.host.engineState(m)!.evaluatedAt]));
    await a.partition.stop();
    // Every asset of A's partitions has its latest state in the KV before its partition's lease went.
    for (const mint of movedMints) {
      const snap = await a.topology.actors.get(mint);
      expect(snap, mint).not.toBeNull();
      expect(assetStateFromJSON(JSON.parse(snap!.string())).evaluatedAt, mint).toBe(evaluated.get(mint));
    }
    await waitFor(() => movedMints.every((m) => b.host.runs(m)), 20_000, "B to run A's assets");
    expect(a.partition.leadsChores()).toBe(false);
    await waitFor(() => b.partition.leadsChores(), 20_000, "B to run the chores");
    for (const mint of movedMints) expect(b.host.engineState(mint)!.evaluatedAt).toBe(evaluated.get(mint));
    expect(b.partition.heldAssets()).toBe(assets.length);
    await b.partition.stop();
    await a.link.close();
    await b.link.close();
    a.host.stop();
    b.host.stop();
  }, 60_000);

  it("a dwell timer that runs past the lease's fencing deadline fences the partition instead of deciding", async () => {
    // The wall clock the leases read, which jumps ahead of the timers when the event loop stalls (`stalled`).
    let stalled = 0;
    const wall: Clock = { now: () => Date.now() + stalled, setTimeout: (fn, ms) => setTimeout(fn, ms), clearTimeout: (id) => clearTimeout(id as NodeJS.Timeout) };
    const e = await engine("engine-c", wall);
    await e.partition.leases.start();
    await waitFor(() => assets.every((x) => e.host.runs(x.mint)), 20_000, "the engine to run every asset");
    const usdc = catalog.bySymbol("USDC")!;
    const subject = subjects.transition(usdc.mint);
    const lastSeq = async () => (await e.topology.jsm.streams.getMessage(TOPOLOGY.transitions.stream, { last_by_subj: subject }).catch(() => null))?.seq ?? 0;
    // USDC becomes a DRIFT candidate: 1, then 0.99 (its dwell timer due 30 s of engine time later).
    e.feed(1);
    e.feed(1, { USDC: "0.99" });
    await e.link.settle(usdc.mint);
    const before = await lastSeq();
    expect(e.host.deadline(usdc.mint)).not.toBeNull();
    // The event loop stalls past the fencing deadline: the lease's fence timer has not run, its unit is not live.
    stalled = 10_000;
    const unit = leaseUnits(assets.map((x) => x.mint), 4).unitOf(usdc.mint);
    expect(e.partition.leases.held.has(unit)).toBe(true);
    // The dwell timer runs first: it fences the partition and decides nothing.
    e.clock.set(e.host.deadline(usdc.mint)!);
    expect(e.partition.leases.held.has(unit)).toBe(false);
    expect(e.host.runs(usdc.mint)).toBe(false);
    await e.link.settle(usdc.mint);
    expect(await lastSeq()).toBe(before);
    e.partition.leases.abandon();
    await e.link.close();
    e.host.stop();
  }, 60_000);
});
