/**
 * A simulated deployment of lease managers (`LeaseManager`) on the fake CAS bucket (lease-fake-store.ts): engines
 * spawned, killed and cut off on one simulated clock, who runs which unit at every instant (a unit run by two engines
 * at once is a violation).
 */
import { SimulatedClock } from "../../src/clock.ts";
import { LeaseManager } from "../../src/streams/jetstream/leases.ts";
import { FakeLeaseBucket, FakeLink } from "./lease-fake-store.ts";

export const TTL = 6_000;
export const EVERY = 2_000;
export const ASSETS = Array.from({ length: 12 }, (_, i) => `mint${i}`);

export interface Engine {
  readonly id: string;
  readonly link: FakeLink;
  readonly manager: LeaseManager;
  alive: boolean;
}

/** A simulated deployment: engines, the bucket, and who runs which asset at every instant. */
export class World {
  readonly clock = new SimulatedClock(1_000_000);
  readonly bucket = new FakeLeaseBucket();
  readonly engines: Engine[] = [];
  /** mint -> engines whose actor for it is running. */
  readonly running = new Map<string, Set<string>>();
  readonly violations: string[] = [];
  #n = 0;

  constructor(
    readonly rand: () => number,
    readonly timings: { ttlMs?: number; renewEveryMs?: number } = { ttlMs: TTL, renewEveryMs: EVERY },
    /** How long an acquired asset's restore takes (default up to 300 ms, by `rand`). */
    readonly restoreMs: number | null = null,
  ) {}

  spawn(): Engine {
    const id = `e${this.#n++}`;
    const link = new FakeLink(this.bucket, this.clock, () => 5 + Math.floor(this.rand() * 200));
    const run = (mint: string) => {
      let s = this.running.get(mint);
      if (s === undefined) this.running.set(mint, (s = new Set()));
      return s;
    };
    const manager = new LeaseManager({
      store: link,
      self: id,
      assets: ASSETS,
      clock: this.clock,
      ...this.timings,
      handlers: {
        acquired: async (mint) => {
          const s = run(mint);
          const others = [...s].filter((o) => o !== id);
          if (others.length > 0) this.violations.push(`${mint}: ${id} started while ${others.join(",")} ran it at ${this.clock.now()}`);
          s.add(id);
          await this.sleep(this.restoreMs ?? this.rand() * 300); // the restore takes a while
        },
        lost: (mint) => {
          run(mint).delete(id);
        },
        release: async (mint) => {
          await this.sleep(this.rand() * 500); // drain and flush
          run(mint).delete(id);
        },
      },
    });
    const e: Engine = { id, link, manager, alive: true };
    this.engines.push(e);
    void manager.start();
    return e;
  }

  kill(e: Engine): void {
    e.alive = false;
    e.manager.abandon();
    for (const s of this.running.values()) s.delete(e.id);
  }

  sleep(ms: number): Promise<void> {
    return new Promise((r) => this.clock.setTimeout(r, ms));
  }

  async advance(ms: number): Promise<void> {
    const end = this.clock.now() + ms;
    while (this.clock.now() < end) {
      this.clock.set(Math.min(end, this.clock.now() + 20));
      await new Promise((r) => setImmediate(r));
    }
  }

  live(): Engine[] {
    return this.engines.filter((e) => e.alive);
  }
}
