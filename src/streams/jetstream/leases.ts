import type { LogFn } from "./engine-link.ts";
import { Heartbeat } from "./lease-heartbeat.ts";
import { FreeUnits, planLeases } from "./lease-plan.ts";
import type { LeaseKeeper } from "./lease-keeper.ts";
import type { HeldLease } from "./lease-renewal.ts";
import { Renewals } from "./lease-renewals.ts";
import type { LeaseManagerOptions } from "./lease-options.ts";
import { LEASE_KEYS, LEASE_MARGIN_MS, LEASE_RENEW_EVERY_MS, LEASE_TTL_MS, LeaseConflictError, type LeaseRecord } from "./lease-store.ts";

export type { LeaseHandlers, LeaseManagerOptions } from "./lease-options.ts";
export { planLeases, type LeasePlan, type LeaseView } from "./lease-plan.ts";
export {
  LEASE_BUCKET,
  LEASE_KEYS,
  LEASE_MARGIN_MS,
  LEASE_RENEW_EVERY_MS,
  LEASE_TTL_MS,
  LeaseConflictError,
  natsLeaseStore,
  type LeaseRecord,
  type LeaseStore,
  type LeaseValue,
} from "./lease-store.ts";

/**
 * Asset leases for several engine processes (issue 8 scale-out). Each asset (by mint) is run by at most one engine:
 * the one holding its lease in the KV bucket `PEG_LEASES`. Every write is a compare-and-set on the key's revision, so
 * two engines can never both believe a write made them the owner:
 *
 * - acquire: `create` (fails when the key exists) or, for an expired lease, `update` on the revision that was read;
 * - renew: `update` on the revision the holder wrote last; a revision mismatch means the lease was taken after it
 *   expired: the holder stops that actor at once;
 * - release (rebalance, shutdown): the actor is stopped and its snapshot flushed first, then the key is deleted on
 *   the held revision;
 * - self-fencing: an engine that could not renew stops the actor `fenceAfterMs` after the *sending* of its last
 *   successful renewal, which is before the lease's `expires_at` (sent + `ttlMs`); nobody takes a lease before
 *   `expires_at`, so the old owner has stopped before a new one can start.
 *
 * Engines announce themselves with a heartbeat key `engine.<id>` (`{owner, expires_at}`, same TTL); each aims for
 * `ceil(assets / live engines)` leases, the free ones split among the live engines alike by each (`planLeases`).
 * Clocks of the engines must agree within `ttlMs - fenceAfterMs` (NTP).
 */

/** How long after a foreign lease's `expires_at` the next planning round runs (the expiry itself must have passed). */
const EXPIRY_SLACK_MS = 20;
/** A free unit the engine it was split to has not taken for this long is taken by whoever is short (`planLeases`). */
const OVERDUE_MS = 1_000;

interface Held extends HeldLease {
  fence: unknown;
}

/**
 * Runs the lease protocol for one engine: every `renewEveryMs` it renews its heartbeat and its leases, then plans a
 * round (`planLeases`) and acquires or releases. `handlers.acquired` runs after the lease is held;
 * `handlers.lost` runs synchronously on a failed renewal or at the fencing deadline; `handlers.release` runs before
 * the key is deleted. `stop()` releases everything gracefully; `abandon()` (tests: a crash) just stops.
 */
export class LeaseManager {
  readonly #o: LeaseManagerOptions;
  readonly #ttl: number;
  readonly #every: number;
  readonly #fenceAfter: number;
  /** The renewal loop's tick: a fifth of the period. */
  readonly #tick: number;
  readonly #log: LogFn;
  readonly #held = new Map<string, Held>();
  readonly #prefix: "asset." | "partition.";
  #renewTimer: unknown = null;
  #planTimer: unknown = null;
  /** The first round's renewals, which the loops wait for (`start`). */
  #renewing: Promise<void> | null = null;
  /** The renewals and the heartbeat, on this thread; or the keeper's thread does them (`keeper`). */
  readonly #renewals: Renewals;
  readonly #keeper: LeaseKeeper | null;
  #planning: Promise<void> | null = null;
  #stopped = false;
  /** The planning failed: run again soon, not after a period. */
  #planSoon = false;
  /** An acquisition lost to another engine's write: plan again at the next tick (free units may be left). */
  #planAgain = false;
  /** Units whose `handlers.acquired` (the restore) runs: the rounds go on meanwhile; a release waits for it. */
  readonly #starting = new Map<string, Promise<void>>();
  /** Which free units the engines they were split to have left untaken too long (`planLeases`). */
  readonly #free = new FreeUnits(OVERDUE_MS);
  /** The earliest `expires_at` of a lease another engine holds, as last listed: a failover starts right after it. */
  #nextExpiry = Infinity;
  #stats = { acquired: 0, released: 0, lost: 0, fenced: 0, rounds: 0, failedRounds: 0, conflicts: 0 };

  constructor(options: LeaseManagerOptions) {
    this.#o = options;
    this.#ttl = options.ttlMs ?? LEASE_TTL_MS;
    this.#every = options.renewEveryMs ?? LEASE_RENEW_EVERY_MS;
    this.#fenceAfter = options.fenceAfterMs ?? this.#ttl - LEASE_MARGIN_MS;
    this.#tick = Math.max(10, Math.floor(this.#every / 5));
    if (!(this.#fenceAfter > 0 && this.#fenceAfter < this.#ttl && this.#every < this.#fenceAfter)) {
      throw new RangeError("lease timing must satisfy 0 < renewEveryMs < fenceAfterMs < ttlMs");
    }
    this.#log = options.log ?? (() => {});
    this.#prefix = options.keyPrefix ?? "asset.";
    this.#keeper = options.keeper ?? null;
    this.#renewals = new Renewals({
      context: { store: options.store, clock: options.clock, self: options.self, ttl: this.#ttl, fenceAfter: this.#fenceAfter, log: this.#log, stopped: () => this.#stopped },
      held: this.#held,
      key: (unit) => this.#key(unit),
      everyMs: this.#every,
      tickMs: this.#tick,
      heartbeat: new Heartbeat(options.store, options.self, this.#ttl, this.#log),
      settled: (unit, held, outcome) => {
        if (outcome === "renewed") this.#armFence(unit, held as Held);
        else if (outcome === "taken") this.#taken(unit, held as Held);
      },
    });
  }

  /** The lease key of one unit (an asset's mint, or a partition's number). */
  #key(unit: string): string {
    return `${this.#prefix}${unit}`;
  }

  /** Mints held now. */
  get held(): ReadonlySet<string> {
    return new Set(this.#held.keys());
  }

  /**
   * Held and within its fencing deadline by the clock now. The fence's timer stops the unit at that deadline, but a
   * timer runs late when the event loop is busy (what else is due may run first): what decides must ask this.
   */
  live(unit: string): boolean {
    const h = this.#held.get(unit);
    return h !== undefined && this.#o.clock.now() < this.#sentAt(unit, h) + this.#fenceAfter;
  }

  /** When the unit's last successful write was sent: as this thread knows it, or as the keeper's thread wrote it since. */
  #sentAt(unit: string, held: Held): number {
    return this.#keeper === null ? held.sentAt : Math.max(held.sentAt, this.#keeper.sentAt(this.#key(unit)));
  }

  /**
   * True while the unit's lease of now is held: false once it lapsed or was handed back, even when the unit is taken
   * again (a new term). A restore still reading when its lease lapsed must not start actors in the next term.
   */
  term(unit: string): () => boolean {
    const held = this.#held.get(unit);
    return () => held !== undefined && this.#held.get(unit) === held && held.releasing !== true;
  }

  get stats() {
    return { ...this.#stats, held: this.#held.size };
  }

  /** The thread that renews the leases, if not this one (`LeaseManagerOptions.keeper`). */
  get keeper(): LeaseKeeper | null {
    return this.#keeper;
  }

  /**
   * Runs a first round now (renewals, then acquire/release), then two loops every `renewEveryMs`: renewals (with the
   * heartbeat), and planning (list, acquire, release). Renewals never wait for a slow listing.
   */
  async start(): Promise<void> {
    const keeper = this.#keeper;
    if (keeper !== null) {
      const keys = this.#o.assets.map((unit) => this.#key(unit));
      await keeper.start({ self: this.#o.self, keys, ttlMs: this.#ttl, everyMs: this.#every, tickMs: this.#tick, fenceAfterMs: this.#fenceAfter, log: this.#log });
    }
    return this.#loops();
  }

  #loops(): Promise<void> {
    const first = this.round();
    // Ticks several times a period and renews each unit a period after its own last renewal was sent, never waiting for
    // another unit's: one renewal retried until its deadline (a slow answer under load) used to hold back the next
    // renewal of every other unit of the engine past their fencing deadlines, and all of them lapsed together.
    const tick = this.#tick;
    const renewLoop = () => {
      // The keeper's thread renews (and beats) on its own.
      if (this.#stopped || this.#keeper !== null) return;
      this.#renewTimer = this.#o.clock.setTimeout(() => {
        void this.#renewals.due();
        renewLoop();
      }, tick);
    };
    const planLoop = () => {
      if (this.#stopped) return;
      // A lease that is not renewed (its engine died) is taken as soon as it expires, not up to a period later.
      const untilExpiry = this.#nextExpiry - this.#o.clock.now() + EXPIRY_SLACK_MS;
      const period = this.#planAgain ? this.#tick : this.#planSoon ? Math.min(500, this.#every) : this.#every;
      this.#planTimer = this.#o.clock.setTimeout(() => void this.#plan().finally(planLoop), Math.max(EXPIRY_SLACK_MS, Math.min(period, untilExpiry)));
    };
    // The loops start once the first renewals are answered, not once the first round's acquisitions have restored
    // their assets: a cold start of 10,000 assets restores for seconds, and with no renewal meanwhile every partition
    // it had acquired was fenced 1.5 s in (a loop's round and the first one share what runs: `#renewing`, `#planning`).
    void (this.#renewing ?? first).finally(() => {
      renewLoop();
      planLoop();
    });
    return first;
  }

  /** One round: heartbeat and renewals, then acquire/release; resolves once the units it acquired have started. */
  async round(): Promise<void> {
    await this.#renewAll();
    await this.#plan();
    await Promise.all(this.#starting.values());
  }

  /** Heartbeat and every held lease's renewal (those not in flight already); resolves when they are answered. */
  #renewAll(): Promise<void> {
    if (this.#keeper !== null) return Promise.resolve();
    this.#renewing ??= this.#renewals.due(true).finally(() => (this.#renewing = null));
    return this.#renewing;
  }

  /** Lists the leases and engines, then acquires or releases (`planLeases`); concurrent calls share the run. */
  #plan(): Promise<void> {
    this.#planning ??= this.#runPlan().finally(() => (this.#planning = null));
    return this.#planning;
  }

  async #runPlan(): Promise<void> {
    if (this.#stopped) return;
    this.#stats.rounds++;
    this.#planSoon = false;
    this.#planAgain = false;
    const { store, self, clock } = this.#o;
    try {
      const [leases, engines] = await Promise.all([store.list(this.#prefix), store.list("engine.")]);
      const now = clock.now();
      const byMint = new Map<string, LeaseRecord>();
      for (const [key, r] of leases) byMint.set(key.slice(this.#prefix.length), r);
      // A lease naming us that we do not hold: an acquisition whose reply was lost. It is ours until it expires (nobody
      // else can write it before): take it as held, like a fresh acquisition.
      const orphans = [...byMint].filter(
        ([mint, r]) => r.value.owner === self && r.value.expires_at - this.#ttl + this.#fenceAfter > now && !this.#held.has(mint) && this.#o.assets.includes(mint),
      );
      await Promise.all(orphans.map(([mint, r]) => this.#adopt(mint, r)));
      // Our own leases as the store shows them must match what we hold; anything else is someone else's.
      const others: string[] = [];
      for (const [key, r] of engines) if (key !== LEASE_KEYS.engine(self) && r.value.expires_at > now) others.push(r.value.owner);
      const plan = planLeases({ self, now, assets: this.#o.assets, leases: byMint, engines: others.length + 1, held: this.held, others, overdue: (free) => this.#free.overdue(free, now) });
      this.#nextExpiry = Infinity;
      // And right after another engine's heartbeat expires (a beat can outlive its engine's leases by a tick): a unit
      // whose lease expired is not taken while its engine still counts as alive (the fair share).
      for (const r of [...byMint.values(), ...engines.values()]) {
        if (r.value.owner !== self && r.value.expires_at > now) this.#nextExpiry = Math.min(this.#nextExpiry, r.value.expires_at);
      }
      for (const mint of plan.release) await this.#release(mint);
      // Acquisitions run together: a failover restores all of a dead engine's assets at once. The round ends with their
      // writes, not their restores (seconds at 10,000 assets): one lost to another engine's write is made up for by
      // the next round, a tick later (survivors reaching for the same free units took half of them after the first
      // round's restores and a period more, bench:cluster).
      await Promise.all(plan.acquire.map(({ mint, revision }) => this.#acquire(mint, revision)));
    } catch (e) {
      this.#planSoon = true;
      this.#stats.failedRounds++;
      this.#log("warn", "lease round failed; retrying soon", { error: e instanceof Error ? e.message : String(e) });
    }
  }

  #armFence(mint: string, held: Held): void {
    if (held.fence !== null) this.#o.clock.clearTimeout(held.fence);
    const due = this.#sentAt(mint, held) + this.#fenceAfter - this.#o.clock.now();
    held.fence = this.#o.clock.setTimeout(() => this.#fence(mint, held), Math.max(0, due));
  }

  #fence(mint: string, held: Held): void {
    if (this.#held.get(mint) !== held) return;
    // Renewed meanwhile by the keeper's thread: the deadline moved.
    if (this.live(mint)) return this.#armFence(mint, held);
    this.#drop(mint, held);
    this.#stats.fenced++;
    this.#log("warn", "lease not renewed in time: stopping the asset before it can expire", { mint });
    this.#o.handlers.lost(mint, "fenced");
  }

  /**
   * Fences `unit` now when its deadline has passed and its fence's timer has not run yet (a busy event loop): what is
   * about to decide for it calls this instead of deciding. Returns whether the unit is still live.
   */
  fenceIfDue(unit: string): boolean {
    if (this.live(unit)) return true;
    const held = this.#held.get(unit);
    if (held !== undefined) this.#fence(unit, held);
    return false;
  }

  /** Another engine holds the unit now (a renewal found it written). */
  #taken(mint: string, held: Held): void {
    if (this.#held.get(mint) !== held) return;
    this.#drop(mint, held);
    this.#stats.lost++;
    this.#log("warn", "lease lost: another engine took the asset", { mint });
    this.#o.handlers.lost(mint, "taken");
  }

  #drop(mint: string, held: Held): void {
    if (held.fence !== null) this.#o.clock.clearTimeout(held.fence);
    this.#held.delete(mint);
    this.#keeper?.drop(this.#key(mint));
  }

  /** Holds `unit` from a write sent at `sentAt` (its revision `revision`): fence armed, the keeper told, the start run. */
  #hold(unit: string, revision: number, sentAt: number): void {
    const held: Held = { revision, sentAt, fence: null };
    this.#held.set(unit, held);
    this.#keeper?.hold(this.#key(unit), held, () => this.#taken(unit, held));
    this.#armFence(unit, held);
    this.#stats.acquired++;
    this.#start(unit);
  }

  async #acquire(mint: string, revision: number | null): Promise<void> {
    const { store, self, clock } = this.#o;
    const key = this.#key(mint);
    const sentAt = clock.now();
    const value = { owner: self, expires_at: sentAt + this.#ttl };
    let rev: number;
    try {
      rev = revision === null ? await store.create(key, value) : await store.update(key, value, revision);
    } catch (e) {
      if (!(e instanceof LeaseConflictError)) throw e;
      this.#stats.conflicts++;
      this.#planAgain = true; // another engine was faster
      return;
    }
    if (this.#stopped) return;
    this.#hold(mint, rev, sentAt);
  }

  /**
   * Runs `handlers.acquired` for a unit just held, after the unit's previous start if one still runs (its term ended:
   * it starts nothing, `term`); on failure hands the lease back so another engine (or a later round) tries.
   */
  #start(unit: string): void {
    const previous = this.#starting.get(unit) ?? Promise.resolve();
    const started: Promise<void> = previous.then(() => this.#o.handlers.acquired(unit)).then(
      () => void (this.#starting.get(unit) === started && this.#starting.delete(unit)),
      async (e: unknown) => {
        if (this.#starting.get(unit) === started) this.#starting.delete(unit);
        this.#log("error", "could not start an acquired asset; releasing its lease", { mint: unit, error: e instanceof Error ? e.message : String(e) });
        await this.#release(unit);
      },
    );
    this.#starting.set(unit, started);
  }

  async #adopt(mint: string, r: LeaseRecord): Promise<void> {
    if (this.#stopped || this.#held.has(mint)) return;
    this.#hold(mint, r.revision, r.value.expires_at - this.#ttl);
  }

  async #release(mint: string): Promise<void> {
    const held = this.#held.get(mint);
    if (held === undefined || held.releasing === true) return;
    held.releasing = true;
    // The keeper's thread stops renewing it too, and answers with the lease as last written.
    const lastWrite = this.#keeper?.letGo(this.#key(mint));
    // A unit still starting is released once started: its actors would otherwise start after the release stopped them.
    await this.#starting.get(mint);
    // The actor stops and its state is flushed while the lease is still ours (the fence keeps running meanwhile).
    await this.#o.handlers.release(mint);
    const last = lastWrite === undefined ? held : await lastWrite;
    if (this.#held.get(mint) !== held) return; // fenced or lost during the flush: nothing left to delete
    this.#drop(mint, held);
    // The keeper gave up on it (its deadline passed unanswered): it expires on its own.
    if (last === null) return;
    held.revision = last.revision;
    this.#stats.released++;
    await this.#o.store.remove(this.#key(mint), held.revision).catch((e: unknown) => {
      this.#log("warn", "could not delete a released lease; it expires on its own", { mint, error: e instanceof Error ? e.message : String(e) });
    });
  }

  #clearTimers(): void {
    if (this.#renewTimer !== null) this.#o.clock.clearTimeout(this.#renewTimer);
    if (this.#planTimer !== null) this.#o.clock.clearTimeout(this.#planTimer);
  }

  /** Stops the rounds and hands every lease back (actors stopped and flushed first), then deletes the heartbeat. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#clearTimers();
    await Promise.allSettled([this.#renewing, this.#planning, ...this.#renewals.inFlight]);
    await Promise.all([...this.#held.keys()].map((mint) => this.#release(mint)));
    if (this.#keeper !== null) await this.#keeper.stop();
    else await this.#renewals.removeHeartbeat();
  }

  /** Stops the rounds and the fencing timers without touching the store (a crash, in tests). */
  abandon(): void {
    this.#stopped = true;
    this.#clearTimers();
    for (const h of this.#held.values()) if (h.fence !== null) this.#o.clock.clearTimeout(h.fence);
    this.#held.clear();
    this.#keeper?.abandon();
  }
}
