/**
 * A renewal that goes unanswered is tried again before the fencing deadline (issue 26): after a nats-server dies, a
 * renewal sent on the connection to it is lost, and the engine reconnects to another node within milliseconds. With a
 * single try per period (1 s timeout, the next period 0.5 s later) that one lost request stopped the partition. On a
 * simulated clock with the default timings (TTL 2.5 s, renewals every 0.5 s, fence at 1.5 s).
 */
import { describe, expect, it } from "vitest";
import { SimulatedClock } from "../../src/clock.ts";
import { LeaseManager, type LeaseStore } from "../../src/streams/jetstream/leases.ts";
import { FakeLeaseBucket } from "./lease-fake-store.ts";

/** The bucket behind a link that answers after 5 ms, except the writes `drop` picks: unanswered until their timeout. */
function store(clock: SimulatedClock, bucket: FakeLeaseBucket, drop: (key: string, at: number) => boolean): LeaseStore & { timeouts: number[] } {
  const timeouts: number[] = [];
  const answer = <T>(op: () => T, dropped = false, timeoutMs = 1_000): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      if (dropped) {
        timeouts.push(timeoutMs);
        clock.setTimeout(() => reject(Object.assign(new Error("timeout"), { name: "TimeoutError" })), timeoutMs);
        return;
      }
      clock.setTimeout(() => {
        try {
          resolve(op());
        } catch (e) {
          reject(e);
        }
      }, 5);
    });
  return {
    timeouts,
    list: (prefix) => answer(() => bucket.list(prefix)),
    get: (key) => answer(() => bucket.get(key)),
    create: (key, value) => answer(() => bucket.create(key, value)),
    update: (key, value, revision, timeoutMs) => answer(() => bucket.update(key, value, revision), drop(key, clock.now()), timeoutMs),
    remove: (key, revision) => answer(() => bucket.remove(key, revision)),
    put: (key, value) => answer(() => bucket.put(key, value)),
    purge: (key) => answer(() => bucket.purge(key)),
  };
}

async function advance(clock: SimulatedClock, ms: number): Promise<void> {
  const end = clock.now() + ms;
  while (clock.now() < end) {
    clock.set(Math.min(end, clock.now() + 10));
    await new Promise((r) => setImmediate(r));
  }
}

describe("lease renewal", () => {
  it("keeps the lease when one renewal is lost: the next try lands before the fencing deadline", async () => {
    const clock = new SimulatedClock(1_000_000);
    const bucket = new FakeLeaseBucket();
    let lostAt: number | null = null;
    // The first renewal of asset a after t0 + 2 s is lost (its connection died).
    const s = store(clock, bucket, (key, at) => key === "asset.a" && at >= 1_002_000 && lostAt === null && (lostAt = at) !== null);
    const lost: string[] = [];
    const m = new LeaseManager({ store: s, self: "e1", assets: ["a"], clock, handlers: { acquired: async () => {}, lost: (mint) => void lost.push(mint), release: async () => {} } });
    void m.start();
    await advance(clock, 100);
    expect([...m.held]).toEqual(["a"]);
    await advance(clock, 6_000);
    expect(lostAt).not.toBeNull();
    expect(lost).toEqual([]);
    expect([...m.held]).toEqual(["a"]);
    // It waited half of what its deadline left (500 ms), not the 1 s that left no time for a second try.
    expect(Math.max(...s.timeouts)).toBeLessThanOrEqual(500);
    m.abandon();
  });

  it("still fences before the lease expires when no renewal is answered (an election of the bucket's leader)", async () => {
    const clock = new SimulatedClock(1_000_000);
    const bucket = new FakeLeaseBucket();
    const s = store(clock, bucket, (key, at) => key === "asset.a" && at >= 1_002_000);
    const lost: { mint: string; at: number }[] = [];
    const m = new LeaseManager({ store: s, self: "e1", assets: ["a"], clock, handlers: { acquired: async () => {}, lost: (mint) => void lost.push({ mint, at: clock.now() }), release: async () => {} } });
    void m.start();
    await advance(clock, 100);
    const expires = bucket.get("asset.a")!.value.expires_at;
    await advance(clock, 6_000);
    expect(lost).toHaveLength(1);
    // Stopped 1 s before anyone may take the lease (its expiry as last written).
    expect(lost[0]!.at).toBeLessThanOrEqual(bucket.get("asset.a")!.value.expires_at - 1_000);
    expect(bucket.get("asset.a")!.value.expires_at).toBeGreaterThanOrEqual(expires);
    m.abandon();
  });
});
