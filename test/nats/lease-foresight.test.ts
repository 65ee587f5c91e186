/**
 * Reading ahead a take-over (issue 26 item 3, kill -> restored): an engine silent past its fencing deadline has
 * stopped its units, and they expire a margin later; the survivors foresee which of them each will take
 * (`foreseeTakeover`, the split `planLeases` will make at the expiry), so their states are read meanwhile; a unit is
 * taken "as foreseen" only at the revision it was foreseen at. The pure functions, then the lease manager on the fake
 * CAS store (test/nats/lease-world.ts).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Foresight, foreseeTakeover } from "../../src/streams/jetstream/lease-plan.ts";
import { LEASE_KEYS, LEASE_MARGIN_MS, LEASE_TTL_MS, planLeases, type LeaseRecord } from "../../src/streams/jetstream/leases.ts";
import { World } from "./lease-world.ts";

const rec = (owner: string, expires_at: number, revision: number): LeaseRecord => ({ value: { owner, expires_at }, revision });
const units = Array.from({ length: 64 }, (_, i) => String(i));

describe("foreseeTakeover", () => {
  it("is what planLeases decides once the silent engine's leases have expired and its heartbeat is gone, split disjointly", () => {
    const engines = ["engine-a", "engine-b", "engine-c"];
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 64, maxLength: 64 }), fc.integer({ min: 0, max: 2 }), (who, silentIndex) => {
        // Each unit held unexpired by one engine (expiring at 3,000), or free (index 3: expired at 500).
        const leases = new Map(units.map((u, i) => [u, rec(engines[who[i]!] ?? "gone", who[i] === 3 ? 500 : 3_000, i + 1)]));
        const silent = engines[silentIndex]!;
        const live = engines.filter((e) => e !== silent);
        const held = (e: string, now: number) => new Set(units.filter((u) => leases.get(u)!.value.owner === e && leases.get(u)!.value.expires_at > now));
        const theirs = held(silent, 1_000);
        const foreseen = live.map((self) => foreseeTakeover({ self, now: 1_000, assets: units, leases, engines: 3, held: held(self, 1_000), others: engines.filter((e) => e !== self) }, new Set([silent])));
        // At the expiry (3,000) the silent engine is gone, its leases expired; the live ones have renewed theirs.
        const atExpiry = new Map(leases);
        for (const [u, r] of leases) if (live.includes(r.value.owner)) atExpiry.set(u, rec(r.value.owner, 5_000, r.revision + 100));
        live.forEach((self, i) => {
          const plan = planLeases({ self, now: 3_000, assets: units, leases: atExpiry, engines: 2, held: held(self, 1_000), others: live.filter((e) => e !== self) });
          expect(foreseen[i]!.sort()).toEqual(plan.acquire.map((a) => a.mint).filter((u) => theirs.has(u)).sort());
          for (const u of foreseen[i]!) expect(theirs.has(u)).toBe(true);
        });
        const all = foreseen.flat();
        expect(new Set(all).size).toBe(all.length); // disjoint
      }),
    );
  });

  it("foresees nothing without a silent engine, and never its own units", () => {
    const leases = new Map(units.map((u, i) => [u, rec(i % 2 === 0 ? "me" : "other", 3_000, i + 1)]));
    const view = { self: "me", now: 1_000, assets: units, leases, engines: 2, held: new Set(units.filter((_, i) => i % 2 === 0)), others: ["other"] };
    expect(foreseeTakeover(view, new Set())).toEqual([]);
    expect(foreseeTakeover(view, new Set(["me"]))).toEqual([]);
    expect(foreseeTakeover(view, new Set(["other"])).sort()).toEqual(units.filter((_, i) => i % 2 === 1).sort());
  });
});

describe("Foresight", () => {
  const TTL = 2_000;
  const QUIET = 1_500;
  const leases = new Map([
    ["0", rec("me", 2_100, 1)],
    ["1", rec("b", 2_000, 2)],
    ["2", rec("b", 2_000, 3)],
  ]);
  const view = (now: number, l = leases) => ({ self: "me", now, assets: ["0", "1", "2"], leases: l, engines: 2, held: new Set(["0"]), others: ["b"] });
  const beats = (bBeat: number) => [
    { owner: "me", expires_at: 100 + TTL },
    { owner: "b", expires_at: bBeat + TTL },
  ];

  it("tells each unit once, from the instant its engine's heartbeat is a fencing period old; taken as foreseen only at that revision", () => {
    const f = new Foresight(QUIET, TTL);
    expect(f.round(view(1_499), beats(0))).toEqual([]);
    expect(f.nextSilence).toBe(1_500);
    expect(f.round(view(1_500), beats(0)).sort()).toEqual(["1", "2"]);
    expect(f.nextSilence).toBe(Infinity);
    expect(f.round(view(1_700), beats(0))).toEqual([]); // told already
    expect(f.taken("1", 2)).toBe(true);
    expect(f.taken("1", 2)).toBe(false); // forgotten once taken
    expect(f.taken("2", 99)).toBe(false); // another revision: written since
  });

  it("forgets a unit whose lease was written since it was foreseen (a renewal that landed late)", () => {
    const f = new Foresight(QUIET, TTL);
    expect(f.round(view(1_600), beats(0)).sort()).toEqual(["1", "2"]);
    // b's renewal of unit 1 and its heartbeat landed after all: b is not silent, unit 1 is at a new revision.
    const renewed = new Map(leases).set("1", rec("b", 3_600, 9));
    expect(f.round(view(1_700, renewed), beats(1_600))).toEqual([]);
    expect(f.nextSilence).toBe(1_600 + QUIET);
    expect(f.taken("1", 9)).toBe(false);
    expect(f.taken("2", 3)).toBe(true); // unit 2 was not written: still as foreseen
  });
});

describe("LeaseManager: reading ahead a take-over (fake CAS store)", () => {
  it("each survivor foresees, between the dead engine's fencing deadline and its expiry, exactly what it then takes", async () => {
    const w = new World(() => 0, {}); // the default timings: a 2 s lease, renewed every 0.5 s, fenced after 1.5 s
    const a = w.spawn();
    await w.advance(1_000);
    const [b, c] = [w.spawn(), w.spawn()];
    await w.advance(12_000);
    const moved = [...a.manager.held];
    expect(moved.length).toBe(4);
    const expiry = new Map(moved.map((u) => [u, w.bucket.snapshot("asset.").get(LEASE_KEYS.asset(u))!.value.expires_at]));
    const killedAt = w.clock.now();
    w.kill(a);
    while (!moved.every((u) => b.manager.held.has(u) || c.manager.held.has(u)) && w.clock.now() < killedAt + 10_000) await w.advance(20);
    for (const s of [b, c]) {
      const foreseen = w.foresights.filter((f) => f.id === s.id && f.at >= killedAt);
      const taken = w.acquisitions.filter((x) => x.id === s.id && x.at >= killedAt);
      expect(foreseen.map((f) => f.unit).sort()).toEqual(taken.map((x) => x.unit).sort());
      for (const x of taken) expect(x.foreseen, x.unit).toBe(true);
      for (const f of foreseen) {
        // Not before the dead engine's fencing deadline (it could still decide until then), before the expiry.
        expect(f.at).toBeGreaterThanOrEqual(expiry.get(f.unit)! - LEASE_MARGIN_MS);
        expect(f.at).toBeLessThan(expiry.get(f.unit)!);
      }
    }
    expect(w.foresights.filter((f) => f.at >= killedAt).length).toBe(moved.length);
    expect(w.violations).toEqual([]);
    expect(LEASE_TTL_MS - LEASE_MARGIN_MS).toBe(1_500);
    b.manager.abandon();
    c.manager.abandon();
  });

  it("foresees nothing when an engine hands its units back, and they are not taken as foreseen", async () => {
    const w = new World(() => 0, {});
    const a = w.spawn();
    await w.advance(1_000);
    const b = w.spawn();
    await w.advance(6_000);
    const before = w.acquisitions.length;
    const stopping = a.manager.stop();
    await w.advance(1_000);
    await stopping;
    await w.advance(3_000);
    expect(b.manager.held.size).toBe(12);
    expect(w.foresights).toEqual([]);
    expect(w.acquisitions.slice(before).every((x) => !x.foreseen)).toBe(true);
    b.manager.abandon();
  });
});
