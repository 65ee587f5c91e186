/**
 * Leases on real NATS KV: the compare-and-set semantics `natsLeaseStore` relies on (create fails on a live key,
 * update and delete on a stale revision fail, a deleted key can be created again), on a three-node cluster with
 * replicas 3; and two managers sharing the assets, one of them killed, the other taking over within 10 s.
 * Reading a write back right after it is acknowledged holds only because the store reads on the stream leader: a
 * direct get may be answered by the replica outside the quorum before it has the write, so the CAS test also checks
 * that the store sends no direct get (that decides it whatever the replicas' timing in one run).
 */
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { systemClock } from "../../src/clock.ts";
import { LEASE_KEYS, LeaseConflictError, LeaseManager, natsLeaseStore, type LeaseStore } from "../../src/streams/jetstream/leases.ts";
import { startNatsCluster, type TestNatsCluster } from "../support/nats-cluster.ts";
import { sleep, waitFor } from "../support/ports.ts";

let cluster: TestNatsCluster;
let nc: NatsConnection;
let store: LeaseStore;

beforeAll(async () => {
  cluster = await startNatsCluster(3);
  nc = await connect({ servers: cluster.urls.split(",") });
  // The meta group may have a leader before it has heard from all three servers; until then a replicas-3 bucket has
  // "no suitable peers for placement", and only that answer is retried.
  for (const deadline = Date.now() + 30_000; ; await sleep(100)) {
    try {
      store = await natsLeaseStore(nc, 3);
      break;
    } catch (e) {
      if (!(e instanceof Error && e.message.includes("no suitable peers")) || Date.now() > deadline) throw e;
    }
  }
}, 60_000);

afterAll(async () => {
  await nc?.close();
  await cluster?.dispose();
});

describe("natsLeaseStore on a three-node cluster", () => {
  it("is compare-and-set on the key's revision", async () => {
    const key = LEASE_KEYS.asset("casTest");
    const request = vi.spyOn(nc, "request");
    const r1 = await store.create(key, { owner: "a", expires_at: 1 });
    await expect(store.create(key, { owner: "b", expires_at: 1 })).rejects.toBeInstanceOf(LeaseConflictError);
    const r2 = await store.update(key, { owner: "a", expires_at: 2 }, r1);
    await expect(store.update(key, { owner: "b", expires_at: 3 }, r1)).rejects.toBeInstanceOf(LeaseConflictError);
    await expect(store.remove(key, r1)).rejects.toBeInstanceOf(LeaseConflictError);
    expect((await store.list("asset.")).get(key)).toEqual({ value: { owner: "a", expires_at: 2 }, revision: r2 });
    await store.remove(key, r2);
    expect((await store.list("asset.")).has(key)).toBe(false);
    const r3 = await store.create(key, { owner: "b", expires_at: 4 });
    expect(r3).toBeGreaterThan(r2);
    const subjects = request.mock.calls.map(([subject]) => subject);
    request.mockRestore();
    expect(subjects.some((s) => s.startsWith("$JS.API.STREAM.MSG.GET."))).toBe(true);
    expect(subjects.filter((s) => s.startsWith("$JS.API.DIRECT.GET."))).toEqual([]);
    const info = await (await import("@nats-io/jetstream")).jetstreamManager(nc).then((jsm) => jsm.streams.info("KV_PEG_LEASES"));
    expect(info.config.num_replicas).toBe(3);
  });

  it("two engines share the assets; killing one moves its assets to the other within 10 s", async () => {
    const assets = Array.from({ length: 8 }, (_, i) => `m${i}`);
    const running = new Map<string, string>();
    const overlaps: string[] = [];
    const make = async (id: string) => {
      const conn = await connect({ servers: cluster.urls.split(",") });
      const s = await natsLeaseStore(conn, 3);
      const m = new LeaseManager({
        store: s,
        self: id,
        assets,
        clock: systemClock,
        handlers: {
          acquired: async (mint) => {
            const other = running.get(mint);
            if (other !== undefined && other !== id) overlaps.push(`${mint}: ${id} while ${other}`);
            running.set(mint, id);
          },
          lost: (mint) => {
            if (running.get(mint) === id) running.delete(mint);
          },
          release: async (mint) => {
            if (running.get(mint) === id) running.delete(mint);
          },
        },
      });
      await m.start();
      return { m, conn };
    };
    const a = await make("engine-a");
    const b = await make("engine-b");
    await waitFor(() => a.m.held.size === 4 && b.m.held.size === 4, 15_000, "an even split");
    const moved = [...a.m.held];
    // A crash: no more renewals, nothing released.
    a.m.abandon();
    for (const mint of moved) running.delete(mint);
    await a.conn.close();
    const t0 = Date.now();
    await waitFor(() => b.m.held.size === 8, 12_000, "the survivor to hold every asset");
    const took = Date.now() - t0;
    expect(took).toBeLessThanOrEqual(10_000);
    process.stdout.write(`LEASES-TAKEOVER ${JSON.stringify({ assets: moved.length, ms: took })}\n`);
    for (const mint of assets) expect(running.get(mint)).toBe("engine-b");
    expect(overlaps).toEqual([]);
    await b.m.stop();
    await sleep(100);
    // A graceful stop deletes every lease it held (the CAS test's own key stays).
    expect([...(await store.list("asset.")).values()].filter((r) => r.value.owner === "engine-b")).toEqual([]);
    await b.conn.close();
  }, 60_000);
});
