/**
 * A renewal that goes unanswered is tried again before the fencing deadline (issue 26): after a nats-server dies, a
 * renewal sent on the connection to it is lost, and the engine reconnects to another node within milliseconds. With a
 * single try per period (1 s timeout, the next period 0.5 s later) that one lost request stopped the partition. On a
 * simulated clock with the default timings (TTL 1.5 s, renewals every 0.3 s, fence at 1 s). And a unit past its fencing
 * deadline is not `live`, whenever its fence's timer runs.
 */
import { describe, expect, it } from "vitest";
import { SimulatedClock, type Clock } from "../../src/clock.ts";
import { LEASE_MARGIN_MS, LEASE_TTL_MS, LeaseManager, type LeaseStore } from "../../src/streams/jetstream/leases.ts";
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
    // It waited half of what its deadline left (at most 500 ms), not the 1 s that left no time for a second try.
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
    // Stopped the margin before anyone may take the lease (its expiry as last written).
    expect(lost[0]!.at).toBeLessThanOrEqual(bucket.get("asset.a")!.value.expires_at - LEASE_MARGIN_MS);
    expect(bucket.get("asset.a")!.value.expires_at).toBeGreaterThanOrEqual(expires);
    m.abandon();
  });

  it("renews from the start while the first round's acquisitions are still restoring (a cold start of thousands of assets)", async () => {
    const clock = new SimulatedClock(1_000_000);
    const bucket = new FakeLeaseBucket();
    const s = store(clock, bucket, () => false);
    const lost: string[] = [];
    let restored = false;
    // Restoring the acquired assets takes 5 s, 3 fencing periods.
    const acquired = () => new Promise<void>((resolve) => clock.setTimeout(() => resolve(void (restored = true)), 5_000));
    const m = new LeaseManager({ store: s, self: "e1", assets: ["a", "b"], clock, handlers: { acquired, lost: (mint) => void lost.push(mint), release: async () => {} } });
    const first = m.start();
    await advance(clock, 6_000);
    expect(restored).toBe(true);
    await first;
    expect(lost).toEqual([]);
    expect([...m.held].sort()).toEqual(["a", "b"]);
    // Renewed all along: the lease as last written expires 2 s after a renewal sent in the last period.
    expect(bucket.get("asset.a")!.value.expires_at).toBeGreaterThan(clock.now() + LEASE_TTL_MS - 600);
    m.abandon();
  });

  it("is not live past its fencing deadline while the fence's timer has not run yet (a busy event loop)", async () => {
    const sim = new SimulatedClock(1_000_000);
    // The wall clock, which jumps ahead of the timers when the event loop stalls (`stall`).
    let stalled = 0;
    const clock: Clock = { now: () => sim.now() + stalled, setTimeout: (fn, ms) => sim.setTimeout(fn, ms), clearTimeout: (id) => sim.clearTimeout(id) };
    const bucket = new FakeLeaseBucket();
    const s = store(sim, bucket, (key, at) => key === "asset.a" && at >= 1_002_000);
    const lost: string[] = [];
    const m = new LeaseManager({ store: s, self: "e1", assets: ["a"], clock, handlers: { acquired: async () => {}, lost: (mint) => void lost.push(mint), release: async () => {} } });
    void m.start();
    await advance(sim, 100);
    expect(m.live("a")).toBe(true);
    expect(m.fenceIfDue("a")).toBe(true);
    // Renewals go unanswered from t0 + 2 s: up to 400 ms before the fencing deadline, the unit is live.
    const deadline = () => bucket.get("asset.a")!.value.expires_at - LEASE_MARGIN_MS;
    while (clock.now() < deadline() - 400) {
      expect(m.live("a")).toBe(true);
      await advance(sim, 10);
    }
    expect(m.held.has("a")).toBe(true);
    // The event loop stalls 500 ms: the deadline passed, no timer has run.
    stalled = 500;
    expect(m.held.has("a")).toBe(true);
    expect(m.live("a")).toBe(false);
    // What decides for it asks first: fenced now, before its timer has run.
    expect(m.fenceIfDue("a")).toBe(false);
    expect(m.held.has("a")).toBe(false);
    expect(lost).toEqual(["a"]);
    // Its timer, late, finds nothing left to fence.
    await advance(sim, 400);
    expect(lost).toEqual(["a"]);
    m.abandon();
  });
});

describe("lease renewal of several units", () => {
  it("renews each unit a period after its own last renewal: one unanswered unit holds back no other", async () => {
    const clock = new SimulatedClock(1_000_000);
    const bucket = new FakeLeaseBucket();
    // From t0 + 2 s no renewal of unit a is answered (its partition is fenced, as it must be); b's all are.
    const s = store(clock, bucket, (key, at) => key === "asset.a" && at >= 1_002_000);
    const lost: string[] = [];
    const sent: number[] = [];
    const update = s.update.bind(s);
    s.update = (key, value, revision, timeoutMs) => {
      if (key === "asset.b") sent.push(clock.now());
      return update(key, value, revision, timeoutMs);
    };
    const m = new LeaseManager({ store: s, self: "e1", assets: ["a", "b"], clock, handlers: { acquired: async () => {}, lost: (mint) => void lost.push(mint), release: async () => {} } });
    void m.start();
    await advance(clock, 6_000);
    expect(lost).toEqual(["a"]);
    expect([...m.held]).toEqual(["b"]);
    // b was renewed about every period throughout, also while a's renewals waited for their timeouts and retried (a
    // round that waited for them sent b's next renewal after b's fencing deadline).
    const gaps = sent.slice(1).map((t, i) => t - sent[i]!);
    expect(sent.length).toBeGreaterThanOrEqual(10);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(600);
    m.abandon();
  });
});
