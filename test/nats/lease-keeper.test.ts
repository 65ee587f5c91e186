/**
 * The lease keeper's thread on a real nats-server (`lease-keeper.ts`): the engine's renewals go on while its event loop
 * is blocked (a take-over's stall), stop when it stays blocked past `maxStallMs` (a wedged engine loses its leases),
 * a lease another engine wrote is lost as taken, and a graceful stop deletes every lease on the revision the thread
 * wrote last; the intake lease, held through the same thread, stays with its engine through a stall. The stalls are
 * synchronous busy loops on the test's own thread: what is decided is what the thread did meanwhile, not how long
 * anything took.
 */
import { jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { NEVER } from "rxjs";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { systemClock } from "../../src/clock.ts";
import { IntakeLeader, INTAKE_LEASE_KEY } from "../../src/streams/jetstream/intake-leader.ts";
import { IntakePublisher } from "../../src/streams/jetstream/intake-publisher.ts";
import { LeaseKeeperThread } from "../../src/streams/jetstream/lease-keeper.ts";
import { LEASE_KEYS, LeaseManager, natsLeaseStore, type LeaseStore } from "../../src/streams/jetstream/leases.ts";
import { PipelinedPublisher } from "../../src/streams/jetstream/pipelined-publisher.ts";
import { ensureIntakeStream } from "../../src/streams/jetstream/topology.ts";
import { startNats, type TestNats } from "../support/nats.ts";
import { sleep, waitFor } from "../support/ports.ts";

const UNITS = ["0", "1", "2", "3"];

let nats: TestNats;
let nc: NatsConnection;
let store: LeaseStore;
const managers: LeaseManager[] = [];

beforeAll(async () => {
  nats = await startNats();
  nc = await connect({ servers: nats.url });
  store = await natsLeaseStore(nc, 1);
}, 60_000);

afterEach(() => {
  for (const m of managers.splice(0)) m.abandon();
});

afterAll(async () => {
  await nc?.close();
  await nats?.dispose();
});

/** Blocks this thread's event loop for `ms` (a take-over's synchronous actor starts, at worst). */
function stall(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // busy
  }
}

/** A manager of the four partitions, alone (so it takes them all), with a keeper thread unless `keeper` is false. */
async function engine(self: string, keeper: boolean | { maxStallMs: number } = true) {
  const options = { servers: [nats.url], alsoKeys: [INTAKE_LEASE_KEY], ...(keeper === true || keeper === false ? {} : keeper) };
  const lost: { unit: string; why: string }[] = [];
  const logs: string[] = [];
  const manager = new LeaseManager({
    store,
    self,
    assets: UNITS,
    keyPrefix: "partition.",
    clock: systemClock,
    log: (_level, msg) => void logs.push(msg),
    handlers: { acquired: async () => {}, lost: (unit, why) => void lost.push({ unit, why }), release: async () => {} },
    ...(keeper === false ? {} : { keeper: new LeaseKeeperThread(options) }),
  });
  managers.push(manager);
  await manager.start();
  await waitFor(() => manager.held.size === UNITS.length, 10_000, "every partition held");
  return { manager, lost, logs };
}

/** The partitions' leases as the store has them now. */
async function leases() {
  return [...(await store.list("partition."))].map(([key, r]) => ({ key, owner: r.value.owner, live: r.value.expires_at > Date.now() }));
}

describe("the lease keeper's thread", () => {
  it("keeps an engine's leases through a 3 s stall of its event loop (on the engine's thread they lapse)", async () => {
    const kept = await engine("kept");
    stall(3_000);
    await sleep(100); // the timers that were due during the stall run now
    expect(kept.lost).toEqual([]);
    expect(kept.manager.stats.fenced).toBe(0);
    for (const unit of UNITS) expect(kept.manager.live(unit)).toBe(true);
    expect(await leases()).toEqual(UNITS.map((u) => ({ key: LEASE_KEYS.partition(u), owner: "kept", live: true })));
    await kept.manager.stop();
    expect(await leases()).toEqual([]);

    // The same stall without the keeper: the renewals are on the blocked thread, and every partition is fenced.
    const alone = await engine("alone", false);
    stall(3_000);
    await sleep(100);
    expect(alone.lost.map((l) => l.why).sort()).toEqual(UNITS.map(() => "fenced"));
    await alone.manager.stop();
  }, 60_000);

  it("lets the leases lapse when the engine's loop stays blocked past maxStallMs", async () => {
    const wedged = await engine("wedged", { maxStallMs: 1_000 });
    const jsm = await jetstreamManager(nc);
    const writes = async () => (await jsm.streams.info("KV_PEG_LEASES")).state.last_seq;
    const before = await writes();
    // The thread renews for 1 s of it at most: its last renewal was sent by then, and fenced 1 s later, before the
    // stall ends (the loop's beat is written after its fences run, so the thread cannot renew first).
    stall(4_000);
    // Renewing throughout, it would have written the 4 leases and the heartbeat every 0.3 s, about 65 writes; it
    // stopped after at most 5 rounds, then wrote at most a round or two after the stall, before this is answered.
    expect((await writes()) - before).toBeLessThan(40);
    await sleep(100);
    expect(wedged.lost.map((l) => l.why).sort()).toEqual(UNITS.map(() => "fenced"));
    await waitFor(() => wedged.logs.includes("the engine's event loop has not run for too long: its leases are left to lapse"), 5_000, "the thread's log line");
  }, 60_000);

  it("loses a partition another engine wrote as taken, and hands the others back on their latest revision", async () => {
    const e = await engine("first");
    // Renewed a few times by the thread: a hand-back on the revision of the acquisition would be refused.
    await sleep(1_500);
    await store.put(LEASE_KEYS.partition("2"), { owner: "other", expires_at: Date.now() + 60_000 });
    await waitFor(() => e.lost.length > 0, 5_000, "the lease lost");
    expect(e.lost).toEqual([{ unit: "2", why: "taken" }]);
    expect(e.manager.held).toEqual(new Set(["0", "1", "3"]));
    await e.manager.stop();
    expect(await leases()).toEqual([{ key: LEASE_KEYS.partition("2"), owner: "other", live: true }]);
    expect(e.logs).not.toContain("could not delete a released lease; it expires on its own");
    expect(await store.get(LEASE_KEYS.engine("first"))).toBeNull();
    await store.purge(LEASE_KEYS.partition("2"));
  }, 60_000);

  it("keeps the intake lease, held through the partitions' keeper, through a 3 s stall; hands it back on its latest revision", async () => {
    await ensureIntakeStream(await jetstreamManager(nc), 1);
    const e = await engine("intake");
    const logs: string[] = [];
    const leader = new IntakeLeader({
      store,
      self: "intake",
      jsm: await jetstreamManager(nc),
      source: { open: () => ({ samples: NEVER, watermark: () => 0 }) },
      publisher: () => new IntakePublisher({ publisher: new PipelinedPublisher(nc), partitions: UNITS.length, mintOf: () => undefined, maxQueued: 100, log: () => {} }),
      clock: systemClock,
      log: (_level, msg) => void logs.push(msg),
      keeper: e.manager.keeper,
    });
    leader.start();
    await waitFor(() => leader.leading, 10_000, "the intake");
    // Renewed a few times by the thread, then a stall past the fence.
    await sleep(1_500);
    stall(3_000);
    await sleep(100);
    expect(leader.leading).toBe(true);
    expect(logs).not.toContain("this engine is no longer the intake");
    expect((await store.get(INTAKE_LEASE_KEY))?.value.owner).toBe("intake");
    await leader.stop();
    expect(await store.get(INTAKE_LEASE_KEY)).toBeNull();
    await e.manager.stop();
  }, 60_000);
});
