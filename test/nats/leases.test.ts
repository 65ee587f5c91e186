/**
 * Asset leases (issue 8 scale-out): the pure plan, and the manager on a fake KV with NATS's compare-and-set semantics
 * under random kills, network cuts (lost requests and lost replies), joins and latency, on a simulated clock. The
 * property: no asset is ever run by two engines at once; and once the network heals, every asset is run by exactly
 * one live engine, each holding its fair share.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SimulatedClock } from "../../src/clock.ts";
import { FreeUnits } from "../../src/streams/jetstream/lease-plan.ts";
import { LEASE_KEYS, LEASE_MARGIN_MS, LeaseManager, planLeases, type LeaseRecord } from "../../src/streams/jetstream/leases.ts";
import { FakeLeaseBucket, FakeLink } from "./lease-fake-store.ts";
import { ASSETS, EVERY, TTL, World } from "./lease-world.ts";

function rec(owner: string, expires_at: number, revision = 1): LeaseRecord {
  return { value: { owner, expires_at }, revision };
}

describe("planLeases", () => {
  it("takes free and expired leases up to the fair share, never an unexpired one", () => {
    const leases = new Map([
      ["a", rec("other", 2_000, 7)], // unexpired
      ["b", rec("other", 1_000, 8)], // expired at now
    ]);
    const plan = planLeases({ self: "me", now: 1_000, assets: ["a", "b", "c", "d"], leases, engines: 2, held: new Set() });
    expect(plan.release).toEqual([]);
    expect(plan.acquire).toHaveLength(2);
    for (const a of plan.acquire) {
      expect(a.mint).not.toBe("a");
      if (a.mint === "b") expect(a.revision).toBe(8);
      else expect(a.revision).toBeNull();
    }
  });

  it("releases the surplus over ceil(assets / engines)", () => {
    const held = new Set(["a", "b", "c", "d", "e"]);
    const plan = planLeases({ self: "me", now: 0, assets: ["a", "b", "c", "d", "e"], leases: new Map(), engines: 2, held });
    expect(plan.acquire).toEqual([]);
    expect(plan.release).toHaveLength(2);
    for (const m of plan.release) expect(held.has(m)).toBe(true);
  });

  it("holds everything alone, and nothing more than its share", () => {
    expect(planLeases({ self: "me", now: 0, assets: ASSETS, leases: new Map(), engines: 1, held: new Set() }).acquire).toHaveLength(12);
    expect(planLeases({ self: "me", now: 0, assets: ASSETS, leases: new Map(), engines: 5, held: new Set(["mint0"]) }).acquire).toHaveLength(2);
  });

  it("engines that list the same leases split the free ones between them: disjoint, all taken, each within its share", () => {
    const units = Array.from({ length: 64 }, (_, i) => String(i));
    const owners = ["engine-a", "engine-b", "engine-c"];
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 64, maxLength: 64 }), fc.integer({ min: 1, max: 3 }), (who, alive) => {
        // Each unit's lease: held unexpired by one of the engines, or expired (its owner died), by index `who`.
        const leases = new Map(units.map((u, i) => [u, rec(owners[who[i]!] ?? "dead", who[i] === 3 ? 500 : 5_000, i + 1)]));
        const live = owners.slice(0, alive);
        // A dead engine's units are expired whoever held them.
        for (const [u, r] of leases) if (!live.includes(r.value.owner)) leases.set(u, rec(r.value.owner, 500, r.revision));
        const held = (e: string) => new Set(units.filter((u) => leases.get(u)!.value.owner === e && leases.get(u)!.value.expires_at > 1_000));
        const plans = live.map((self) => planLeases({ self, now: 1_000, assets: units, leases, engines: live.length, held: held(self), others: live.filter((e) => e !== self) }));
        const target = Math.ceil(units.length / live.length);
        const taken = plans.flatMap((p) => p.acquire.map((a) => a.mint));
        expect(new Set(taken).size).toBe(taken.length); // disjoint
        const free = units.filter((u) => leases.get(u)!.value.expires_at <= 1_000);
        const room = live.reduce((n, e) => n + Math.max(0, target - held(e).size), 0);
        expect(taken.length).toBe(Math.min(free.length, room)); // nothing left that someone had room for
        live.forEach((e, i) => expect(held(e).size + plans[i]!.acquire.length).toBeLessThanOrEqual(Math.max(target, held(e).size)));
      }),
    );
  });

  it("counts a unit overdue once it has been free in every listing for the period, and afresh after it was taken", () => {
    const free = new FreeUnits(1_000);
    expect([...free.overdue(["a", "b"], 0)]).toEqual([]);
    expect([...free.overdue(["a", "b"], 999)]).toEqual([]);
    expect([...free.overdue(["a"], 1_000)]).toEqual(["a"]); // b was taken
    expect([...free.overdue(["a", "b"], 1_500)]).toEqual(["a"]); // b free again: counted from 1,500
    expect([...free.overdue(["a", "b"], 2_500)]).toEqual(["a", "b"]);
  });

  it("takes a free unit split to another engine once it is overdue (that engine is not taking it)", () => {
    const assets = ["a", "b", "c", "d"];
    const view = { self: "me", now: 1_000, assets, leases: new Map(), engines: 2, held: new Set(["a"]), others: ["other"] };
    const split = planLeases(view).acquire.map((a) => a.mint);
    expect(split.length).toBeLessThanOrEqual(1);
    const notMine = assets.filter((u) => u !== "a" && !split.includes(u));
    const overdue = planLeases({ ...view, overdue: () => new Set(notMine) }).acquire.map((a) => a.mint);
    expect(overdue).toHaveLength(1);
    expect(notMine).toContain(overdue[0]);
  });
});

type Op =
  | { kind: "advance"; ms: number }
  | { kind: "kill"; pick: number }
  | { kind: "spawn" }
  | { kind: "cut"; pick: number; ms: number; lostReplies: boolean };

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("advance" as const), ms: fc.integer({ min: 100, max: 8_000 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("kill" as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("spawn" as const) }) },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant("cut" as const), pick: fc.nat(), ms: fc.integer({ min: 500, max: 15_000 }), lostReplies: fc.boolean() }),
  },
);

describe("LeaseManager on a CAS store", () => {
  it("never lets two engines run an asset at once, under kills, cuts and joins; converges once healed", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 5, maxLength: 25 }), fc.integer(), async (ops, seed) => {
        let x = seed >>> 0 || 1;
        const rand = () => ((x = (Math.imul(x, 1103515245) + 12345) >>> 0) / 2 ** 32);
        const w = new World(rand);
        w.spawn();
        w.spawn();
        for (const o of ops) {
          const live = w.live();
          if (o.kind === "advance") await w.advance(o.ms);
          else if (o.kind === "spawn" && live.length < 4) w.spawn();
          else if (o.kind === "kill" && live.length > 0) w.kill(live[o.pick % live.length]!);
          else if (o.kind === "cut" && live.length > 0) {
            const e = live[o.pick % live.length]!;
            e.link.cut = true;
            e.link.lostReplies = o.lostReplies;
            w.clock.setTimeout(() => (e.link.cut = false), o.ms);
          }
          expect(w.violations).toEqual([]);
        }
        // Heal and let it settle: every asset run by exactly one live engine, fair shares.
        for (const e of w.engines) e.link.cut = false;
        if (w.live().length === 0) w.spawn();
        await w.advance(3 * TTL);
        expect(w.violations).toEqual([]);
        const live = w.live();
        const share = Math.ceil(ASSETS.length / live.length);
        for (const mint of ASSETS) {
          const runners = [...(w.running.get(mint) ?? [])];
          expect(runners, `${mint} runners`).toHaveLength(1);
          const holders = live.filter((e) => e.manager.held.has(mint)).map((e) => e.id);
          expect(holders).toEqual(runners);
          const lease = w.bucket.snapshot().get(LEASE_KEYS.asset(mint));
          expect(lease?.value.owner).toBe(runners[0]);
          expect(lease!.value.expires_at).toBeGreaterThan(w.clock.now());
        }
        for (const e of live) expect(e.manager.held.size).toBeLessThanOrEqual(share);
        for (const e of w.engines) e.manager.abandon();
      }),
      { numRuns: 40 },
    );
  }, 120_000);

  it("moves a killed engine's assets to the survivor within 10 s", async () => {
    const w = new World(() => 0.5);
    const a = w.spawn();
    await w.advance(3_000);
    const b = w.spawn();
    await w.advance(10_000);
    expect(a.manager.held.size).toBe(6);
    expect(b.manager.held.size).toBe(6);
    const moved = [...a.manager.held];
    const killedAt = w.clock.now();
    w.kill(a);
    let allAt: number | null = null;
    while (w.clock.now() - killedAt < 15_000 && allAt === null) {
      await w.advance(100);
      if (moved.every((m) => b.manager.held.has(m) && w.running.get(m)?.has(b.id))) allAt = w.clock.now();
    }
    expect(allAt).not.toBeNull();
    expect(allAt! - killedAt).toBeLessThanOrEqual(10_000);
    expect(w.violations).toEqual([]);
    b.manager.abandon();
  });

  it("a killed engine's assets are taken right after its leases expire, not up to a planning period later", async () => {
    // Killed at five phases of the survivor's 2 s planning period: each time within the slack of the expiry.
    for (const phase of [0, 400, 800, 1_200, 1_600]) {
      const w = new World(() => 0); // 5 ms per request
      const a = w.spawn();
      await w.advance(1_000);
      const b = w.spawn();
      await w.advance(8_000 + phase);
      const moved = [...a.manager.held];
      expect(moved.length).toBe(6);
      const expiresAt = Math.max(...moved.map((m) => w.bucket.snapshot("asset.").get(LEASE_KEYS.asset(m))!.value.expires_at));
      const killedAt = w.clock.now();
      w.kill(a);
      let allAt: number | null = null;
      while (w.clock.now() - killedAt < 15_000 && allAt === null) {
        await w.advance(20);
        if (moved.every((m) => b.manager.held.has(m))) allAt = w.clock.now();
      }
      expect(allAt, `phase ${phase}`).not.toBeNull();
      expect(allAt! - expiresAt, `phase ${phase}`).toBeGreaterThanOrEqual(0);
      expect(allAt! - expiresAt, `phase ${phase}`).toBeLessThan(200);
      expect(w.violations).toEqual([]);
      b.manager.abandon();
    }
  });

  it("the default timings move a killed engine's assets within 3 s", async () => {
    const w = new World(() => 0, {});
    const a = w.spawn();
    await w.advance(1_000);
    const b = w.spawn();
    await w.advance(3_000);
    const moved = [...a.manager.held];
    expect(moved.length).toBe(6);
    const killedAt = w.clock.now();
    w.kill(a);
    let allAt: number | null = null;
    while (w.clock.now() - killedAt < 10_000 && allAt === null) {
      await w.advance(20);
      if (moved.every((m) => b.manager.held.has(m))) allAt = w.clock.now();
    }
    expect(allAt! - killedAt).toBeLessThanOrEqual(2_700);
    expect(w.violations).toEqual([]);
    b.manager.abandon();
  });

  it("stops an asset before its lease can expire when renewals fail, and another engine takes it only after", async () => {
    const w = new World(() => 0.5);
    const a = w.spawn();
    await w.advance(3_000);
    expect(a.manager.held.size).toBe(12);
    const b = w.spawn();
    a.link.cut = true; // a keeps running but cannot reach the bucket
    const cutAt = w.clock.now();
    // Its last renewal was sent at most a period (plus a reply's latency) before the cut: nothing expired yet.
    await w.advance(TTL - LEASE_MARGIN_MS - EVERY - 300);
    expect(b.manager.held.size).toBe(0);
    await w.advance(EVERY + 300);
    // Fenced: a stopped everything before any lease it wrote could expire (b starting an asset a still ran is a
    // violation).
    expect(a.manager.held.size).toBe(0);
    expect(a.manager.stats.fenced).toBe(12);
    for (const s of w.running.values()) expect(s.has(a.id)).toBe(false);
    await w.advance(6_000);
    expect(b.manager.held.size).toBe(12);
    expect(w.clock.now() - cutAt).toBeLessThan(12_000);
    expect(w.violations).toEqual([]);
    a.manager.abandon();
    b.manager.abandon();
  });

  it("survivors take a dead engine's expired leases right after the expiry, split between them, however long the restores take", async () => {
    // Both survivors list the same expired leases at the same instant and split them the same way (`planLeases`): each
    // reaches for its part. A write lost to the other's would be made up for a tick later, not after the restores.
    const w = new World(() => 0, {}, 3_000);
    const a = w.spawn();
    await w.advance(1_000);
    const [b, c] = [w.spawn(), w.spawn()];
    await w.advance(12_000);
    const moved = [...a.manager.held];
    expect(moved.length).toBe(4);
    const expiresAt = Math.max(...moved.map((m) => w.bucket.snapshot("asset.").get(LEASE_KEYS.asset(m))!.value.expires_at));
    const conflicts = () => b.manager.stats.conflicts + c.manager.stats.conflicts;
    const conflictsBefore = conflicts();
    w.kill(a);
    let allAt: number | null = null;
    while (allAt === null && w.clock.now() < expiresAt + 10_000) {
      await w.advance(20);
      if (moved.every((m) => b.manager.held.has(m) || c.manager.held.has(m))) allAt = w.clock.now();
    }
    expect(b.manager.held.size + c.manager.held.size).toBe(12);
    expect(allAt! - expiresAt).toBeLessThan(400);
    // They split the dead engine's leases the same way: no write lost to the other's, no round to make it up.
    expect(conflicts() - conflictsBefore).toBe(0);
    expect(w.violations).toEqual([]);
    b.manager.abandon();
    c.manager.abandon();
  });

  it("a lease's term ends when it lapses and stays ended when the unit is taken again", async () => {
    const w = new World(() => 0, {});
    const a = w.spawn();
    await w.advance(1_000);
    const term = a.manager.term("mint0");
    expect(term()).toBe(true);
    a.link.cut = true;
    await w.advance(2_000); // fenced 1 s after the last renewal
    expect(a.manager.held.has("mint0")).toBe(false);
    expect(term()).toBe(false);
    a.link.cut = false;
    await w.advance(3_000); // expired meanwhile: taken again
    expect(a.manager.held.has("mint0")).toBe(true);
    expect(term()).toBe(false);
    expect(a.manager.term("mint0")()).toBe(true);
    a.manager.abandon();
  });

  it("a unit taken again while its lapsed term's restore still runs starts after that restore, never beside it", async () => {
    const clock = new SimulatedClock(1_000_000);
    const link = new FakeLink(new FakeLeaseBucket(), clock, () => 5);
    const log: string[] = [];
    let running = 0;
    const manager = new LeaseManager({
      store: link,
      self: "e",
      assets: ["u"],
      clock,
      handlers: {
        acquired: async () => {
          log.push(running === 0 ? "start" : "start beside another");
          running++;
          await new Promise<void>((r) => clock.setTimeout(() => r(), 6_000)); // a restore reading for 6 s
          running--;
          log.push("end");
        },
        lost: () => log.push("lost"),
        release: async () => {},
      },
    });
    void manager.start();
    const advance = async (ms: number) => {
      for (const end = clock.now() + ms; clock.now() < end; ) {
        clock.set(Math.min(end, clock.now() + 20));
        await new Promise((r) => setImmediate(r));
      }
    };
    await advance(100);
    link.cut = true; // fenced 1 s in, while its restore reads
    await advance(2_500);
    link.cut = false; // expired: taken again, its first restore still running
    await advance(12_000);
    expect(log).toEqual(["start", "lost", "end", "start", "end"]);
    manager.abandon();
  });

  it("a graceful stop hands every lease back at once", async () => {
    const w = new World(() => 0.5);
    const a = w.spawn();
    const b = w.spawn();
    await w.advance(8_000);
    expect(a.manager.held.size + b.manager.held.size).toBe(12);
    const stopping = a.manager.stop();
    await w.advance(1_000);
    await stopping;
    expect(w.bucket.snapshot("engine.").has(LEASE_KEYS.engine(a.id))).toBe(false);
    await w.advance(EVERY + 500);
    expect(b.manager.held.size).toBe(12);
    expect(w.violations).toEqual([]);
    b.manager.abandon();
  });
});
