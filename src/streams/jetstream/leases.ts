import { JetStreamApiCodes, JetStreamApiError, jetstreamManager } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Clock } from "../../clock.ts";
import type { LogFn } from "./engine-link.ts";
import { kvLeaderGet } from "./kv-leader-get.ts";

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
 * `ceil(assets / live engines)` leases. Clocks of the engines must agree within `ttlMs - fenceAfterMs` (NTP).
 */

/** The value of a lease or heartbeat key. `expires_at` is epoch milliseconds on the writer's clock. */
export interface LeaseValue {
  readonly owner: string;
  readonly expires_at: number;
}

/** One key as read, with the revision a compare-and-set must name. */
export interface LeaseRecord {
  readonly value: LeaseValue;
  readonly revision: number;
}

/** Thrown by a `LeaseStore` when a compare-and-set found another revision (or an existing key on create). */
export class LeaseConflictError extends Error {
  override readonly name = "LeaseConflictError";
  readonly code = "lease_conflict";
  constructor(key: string) {
    super(`lease ${key} was written by someone else`);
  }
}

/** The compare-and-set store the manager runs on: NATS KV (`natsLeaseStore`) or an in-memory fake in tests. */
export interface LeaseStore {
  /** Every live (not deleted) key under `prefix`. Unreadable values are skipped. */
  list(prefix: string): Promise<Map<string, LeaseRecord>>;
  /** One live key, or null. */
  get(key: string): Promise<LeaseRecord | null>;
  /** Creates the key; `LeaseConflictError` when it exists (a deleted key may be created again). */
  create(key: string, value: LeaseValue): Promise<number>;
  /** Writes when the key is at `revision`; `LeaseConflictError` otherwise. */
  update(key: string, value: LeaseValue, revision: number): Promise<number>;
  /** Deletes when the key is at `revision`; `LeaseConflictError` otherwise. */
  remove(key: string, revision: number): Promise<void>;
  /** Writes unconditionally (heartbeats: only their own engine writes them). */
  put(key: string, value: LeaseValue): Promise<number>;
  /** Deletes unconditionally. */
  purge(key: string): Promise<void>;
}

export const LEASE_KEYS = {
  asset: (mint: string) => `asset.${mint}`,
  /** A partition's lease (src/streams/jetstream/lease-partitions.ts): the unit of ownership when LEASE_PARTITIONS > 0. */
  partition: (n: string) => `partition.${n}`,
  engine: (id: string) => `engine.${id}`,
} as const;

/** What one engine sees and holds at one instant: the input of `planLeases`. */
export interface LeaseView {
  readonly self: string;
  readonly now: number;
  /** Every asset to run (mints). */
  readonly assets: readonly string[];
  /** Lease records by mint (absent: never leased or deleted). */
  readonly leases: ReadonlyMap<string, LeaseRecord>;
  /** Engines alive now, this one included. */
  readonly engines: number;
  /** Mints this engine holds. */
  readonly held: ReadonlySet<string>;
}

export interface LeasePlan {
  /** Free or expired leases to take, each with the revision to update (null: create). */
  readonly acquire: readonly { readonly mint: string; readonly revision: number | null }[];
  /** Held leases to hand back (over the fair share). */
  readonly release: readonly string[];
}

/** A stable per-engine order of the assets, so engines starting together reach for different ones first. */
function spread(self: string, mint: string): number {
  let h = 2166136261;
  for (const c of `${self}|${mint}`) h = Math.imul(h ^ c.charCodeAt(0), 16777619);
  return h >>> 0;
}

/**
 * The pure decision of one round: hold `ceil(assets / engines)` leases. Release the surplus; take free leases
 * (absent, or expired by `now`) up to the share. Never takes a lease another engine holds unexpired.
 */
export function planLeases(view: LeaseView): LeasePlan {
  const target = Math.ceil(view.assets.length / Math.max(1, view.engines));
  const held = view.assets.filter((m) => view.held.has(m));
  if (held.length > target) {
    const order = [...held].sort((a, b) => spread(view.self, b) - spread(view.self, a));
    return { acquire: [], release: order.slice(0, held.length - target) };
  }
  const free = view.assets
    .filter((m) => !view.held.has(m))
    .flatMap((mint): { mint: string; revision: number | null }[] => {
      const r = view.leases.get(mint);
      if (r === undefined) return [{ mint, revision: null }];
      if (r.value.expires_at <= view.now) return [{ mint, revision: r.revision }];
      return [];
    })
    .sort((a, b) => spread(view.self, a.mint) - spread(view.self, b.mint));
  return { acquire: free.slice(0, target - held.length), release: [] };
}

/** What the engine does when it gains or loses an asset. */
export interface LeaseHandlers {
  /**
   * The lease is ours: restore the actor (from its KV snapshot) and start feeding it. The lease can be lost while this
   * runs (`lost` is called meanwhile): check `LeaseManager.held` before starting the actor.
   */
  acquired(mint: string): Promise<void>;
  /** The lease is lost or about to expire: stop the actor now, publish and write nothing more for it. Synchronous. */
  lost(mint: string, why: "taken" | "fenced"): void;
  /** A graceful hand-back: stop the actor, wait for its transitions to be acked, flush its snapshot. */
  release(mint: string): Promise<void>;
}

export interface LeaseManagerOptions {
  readonly store: LeaseStore;
  /** This engine's id (unique per process start). */
  readonly self: string;
  /** Every asset to run (mints), or every partition when `keyPrefix` is `partition.`: the units leased. */
  readonly assets: readonly string[];
  /** The lease keys' prefix: `asset.` (default: one lease per asset) or `partition.` (one per partition). */
  readonly keyPrefix?: "asset." | "partition.";
  /** Wall clock (leases are wall-clock time, whatever the feed's clock). */
  readonly clock: Clock;
  readonly handlers: LeaseHandlers;
  /** Lease lifetime. Default 2,500 ms: a dead engine's assets move about 2.5 s after its last renewal. */
  readonly ttlMs?: number;
  /** Renewal and rebalancing period. Default 500 ms. */
  readonly renewEveryMs?: number;
  /**
   * Stop an asset this long after sending its last successful renewal. Default `ttlMs - 1,000` (1,500 ms): 1 s of
   * margin for clock skew and a late timer before anyone may take the lease.
   */
  readonly fenceAfterMs?: number;
  readonly log?: LogFn;
}

/** How long after a foreign lease's `expires_at` the next planning round runs (the expiry itself must have passed). */
const EXPIRY_SLACK_MS = 20;

interface Held {
  revision: number;
  /** When the write that produced `revision` was sent: the lease is valid until sentAt + ttl. */
  sentAt: number;
  fence: unknown;
  /** Being handed back: not renewed any more (a renewal racing the delete would keep the key alive). */
  releasing?: boolean;
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
  readonly #log: LogFn;
  readonly #held = new Map<string, Held>();
  readonly #prefix: "asset." | "partition.";
  #renewTimer: unknown = null;
  #planTimer: unknown = null;
  #renewing: Promise<void> | null = null;
  #planning: Promise<void> | null = null;
  #stopped = false;
  /** A renewal failed for a reason other than a lost lease (or the planning failed): retry soon, not after a period. */
  #renewSoon = false;
  #planSoon = false;
  /** The earliest `expires_at` of a lease another engine holds, as last listed: a failover starts right after it. */
  #nextExpiry = Infinity;
  #stats = { acquired: 0, released: 0, lost: 0, fenced: 0, rounds: 0, failedRounds: 0 };

  constructor(options: LeaseManagerOptions) {
    this.#o = options;
    this.#ttl = options.ttlMs ?? 2_500;
    this.#every = options.renewEveryMs ?? 500;
    this.#fenceAfter = options.fenceAfterMs ?? this.#ttl - 1_000;
    if (!(this.#fenceAfter > 0 && this.#fenceAfter < this.#ttl && this.#every < this.#fenceAfter)) {
      throw new RangeError("lease timing must satisfy 0 < renewEveryMs < fenceAfterMs < ttlMs");
    }
    this.#log = options.log ?? (() => {});
    this.#prefix = options.keyPrefix ?? "asset.";
  }

  /** The lease key of one unit (an asset's mint, or a partition's number). */
  #key(unit: string): string {
    return `${this.#prefix}${unit}`;
  }

  /** Mints held now. */
  get held(): ReadonlySet<string> {
    return new Set(this.#held.keys());
  }

  get stats() {
    return { ...this.#stats, held: this.#held.size };
  }

  /**
   * Runs a first round now (renewals, then acquire/release), then two loops every `renewEveryMs`: renewals (with the
   * heartbeat), and planning (list, acquire, release). Renewals never wait for a slow listing.
   */
  start(): Promise<void> {
    const first = this.round();
    const renewLoop = () => {
      if (this.#stopped) return;
      this.#renewTimer = this.#o.clock.setTimeout(() => void this.#renewAll().finally(renewLoop), this.#renewSoon ? Math.min(500, this.#every) : this.#every);
    };
    const planLoop = () => {
      if (this.#stopped) return;
      // A lease that is not renewed (its engine died) is taken as soon as it expires, not up to a period later.
      const untilExpiry = this.#nextExpiry - this.#o.clock.now() + EXPIRY_SLACK_MS;
      const period = this.#planSoon ? Math.min(500, this.#every) : this.#every;
      this.#planTimer = this.#o.clock.setTimeout(() => void this.#plan().finally(planLoop), Math.max(EXPIRY_SLACK_MS, Math.min(period, untilExpiry)));
    };
    void first.finally(() => {
      renewLoop();
      planLoop();
    });
    return first;
  }

  /** One round: heartbeat and renewals, then acquire/release. */
  async round(): Promise<void> {
    await this.#renewAll();
    await this.#plan();
  }

  /** Heartbeat and every held lease's renewal; concurrent calls share the run in progress. */
  #renewAll(): Promise<void> {
    this.#renewing ??= (async () => {
      if (this.#stopped) return;
      this.#renewSoon = false;
      const { store, self, clock } = this.#o;
      const [beat] = await Promise.allSettled([
        store.put(LEASE_KEYS.engine(self), { owner: self, expires_at: clock.now() + this.#ttl }),
        ...[...this.#held.keys()].map((mint) => this.#renew(mint)),
      ]);
      if (beat?.status === "rejected") {
        this.#renewSoon = true;
        this.#log("warn", "engine heartbeat failed", { error: beat.reason instanceof Error ? beat.reason.message : String(beat.reason) });
      }
    })().finally(() => (this.#renewing = null));
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
      let alive = 1;
      for (const [key, r] of engines) if (key !== LEASE_KEYS.engine(self) && r.value.expires_at > now) alive++;
      const plan = planLeases({ self, now, assets: this.#o.assets, leases: byMint, engines: alive, held: this.held });
      this.#nextExpiry = Infinity;
      for (const r of byMint.values()) if (r.value.owner !== self && r.value.expires_at > now) this.#nextExpiry = Math.min(this.#nextExpiry, r.value.expires_at);
      for (const mint of plan.release) await this.#release(mint);
      // Acquisitions run together: a failover restores all of a dead engine's assets at once.
      await Promise.all(plan.acquire.map(({ mint, revision }) => this.#acquire(mint, revision)));
    } catch (e) {
      this.#planSoon = true;
      this.#stats.failedRounds++;
      this.#log("warn", "lease round failed; retrying soon", { error: e instanceof Error ? e.message : String(e) });
    }
  }

  #armFence(mint: string, held: Held): void {
    if (held.fence !== null) this.#o.clock.clearTimeout(held.fence);
    const due = held.sentAt + this.#fenceAfter - this.#o.clock.now();
    held.fence = this.#o.clock.setTimeout(() => {
      if (this.#held.get(mint) !== held) return;
      this.#held.delete(mint);
      this.#stats.fenced++;
      this.#log("warn", "lease not renewed in time: stopping the asset before it can expire", { mint });
      this.#o.handlers.lost(mint, "fenced");
    }, Math.max(0, due));
  }

  async #renew(mint: string): Promise<void> {
    const held = this.#held.get(mint);
    if (held === undefined || held.releasing === true) return;
    const sentAt = this.#o.clock.now();
    try {
      const revision = await this.#o.store.update(this.#key(mint), { owner: this.#o.self, expires_at: sentAt + this.#ttl }, held.revision);
      if (this.#held.get(mint) !== held) return; // fenced meanwhile: the actor is stopped; the lease expires on its own
      held.revision = revision;
      held.sentAt = sentAt;
      this.#armFence(mint, held);
    } catch (e) {
      if (!(e instanceof LeaseConflictError)) {
        this.#renewSoon = true;
        this.#log("warn", "lease renewal failed", { mint, error: e instanceof Error ? e.message : String(e) });
        return; // unknown outcome: keep going until the fencing deadline
      }
      if (this.#held.get(mint) !== held) return;
      // A renewal whose reply was lost may have landed: the key then still names us, at a newer revision.
      const current = await this.#o.store.get(this.#key(mint)).catch(() => null);
      if (this.#held.get(mint) !== held) return;
      if (current !== null && current.value.owner === this.#o.self && current.value.expires_at > this.#o.clock.now()) {
        held.revision = current.revision;
        held.sentAt = current.value.expires_at - this.#ttl;
        this.#armFence(mint, held);
        return;
      }
      this.#drop(mint, held);
      this.#stats.lost++;
      this.#log("warn", "lease lost: another engine took the asset", { mint });
      this.#o.handlers.lost(mint, "taken");
    }
  }

  #drop(mint: string, held: Held): void {
    if (held.fence !== null) this.#o.clock.clearTimeout(held.fence);
    this.#held.delete(mint);
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
      if (e instanceof LeaseConflictError) return; // another engine was faster
      throw e;
    }
    if (this.#stopped) return;
    const held: Held = { revision: rev, sentAt, fence: null };
    this.#held.set(mint, held);
    this.#armFence(mint, held);
    this.#stats.acquired++;
    try {
      await this.#o.handlers.acquired(mint);
    } catch (e) {
      // Could not restore the actor: hand the lease back so another engine (or a later round) tries.
      this.#log("error", "could not start an acquired asset; releasing its lease", { mint, error: e instanceof Error ? e.message : String(e) });
      await this.#release(mint);
    }
  }

  async #adopt(mint: string, r: LeaseRecord): Promise<void> {
    if (this.#stopped || this.#held.has(mint)) return;
    const held: Held = { revision: r.revision, sentAt: r.value.expires_at - this.#ttl, fence: null };
    this.#held.set(mint, held);
    this.#armFence(mint, held);
    this.#stats.acquired++;
    try {
      await this.#o.handlers.acquired(mint);
    } catch (e) {
      this.#log("error", "could not start an acquired asset; releasing its lease", { mint, error: e instanceof Error ? e.message : String(e) });
      await this.#release(mint);
    }
  }

  async #release(mint: string): Promise<void> {
    const held = this.#held.get(mint);
    if (held === undefined || held.releasing === true) return;
    held.releasing = true;
    // The actor stops and its state is flushed while the lease is still ours (the fence keeps running meanwhile).
    await this.#o.handlers.release(mint);
    if (this.#held.get(mint) !== held) return; // fenced or lost during the flush: nothing left to delete
    this.#drop(mint, held);
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
    await Promise.allSettled([this.#renewing, this.#planning]);
    await Promise.all([...this.#held.keys()].map((mint) => this.#release(mint)));
    await this.#o.store.purge(LEASE_KEYS.engine(this.#o.self)).catch(() => {});
  }

  /** Stops the rounds and the fencing timers without touching the store (a crash, in tests). */
  abandon(): void {
    this.#stopped = true;
    this.#clearTimers();
    for (const h of this.#held.values()) if (h.fence !== null) this.#o.clock.clearTimeout(h.fence);
    this.#held.clear();
  }
}

function isConflict(e: unknown): boolean {
  return (
    e instanceof JetStreamApiError &&
    (e.code === JetStreamApiCodes.StreamWrongLastSequence || e.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown)
  );
}

/** Name of the lease bucket. */
export const LEASE_BUCKET = "PEG_LEASES";

/**
 * The lease bucket on NATS KV (history 1, `replicas` as the streams). Keys `asset.<mint>` and `engine.<id>`, values
 * `LeaseValue` JSON. Compare-and-set is the `Nats-Expected-Last-Subject-Sequence` header the KV client sends. Reads go
 * to the stream leader (`kvLeaderGet`), never to a replica that may not have a write yet (a deleted key read as live).
 * `replicas: "open"` only opens an existing bucket (readers such as an API process must never create it: a bucket
 * created with the wrong replica count would not survive the loss of its one node).
 */
export async function natsLeaseStore(nc: NatsConnection, replicas: number | "open" = 1): Promise<LeaseStore & { readonly kv: KV }> {
  const kv = replicas === "open" ? await new Kvm(nc).open(LEASE_BUCKET) : await new Kvm(nc).create(LEASE_BUCKET, { history: 1, replicas });
  const jsm = await jetstreamManager(nc);
  const encode = (v: LeaseValue) => JSON.stringify(v);
  const subjectPrefix = `$KV.${LEASE_BUCKET}.`;
  const read = async (key: string): Promise<LeaseRecord | null> => {
    const e = await kvLeaderGet(jsm, LEASE_BUCKET, key);
    if (e === null || e.operation !== "PUT") return null;
    try {
      const v = e.json<LeaseValue>();
      return typeof v.owner === "string" && typeof v.expires_at === "number" ? { value: v, revision: e.revision } : null;
    } catch {
      return null; // not a lease value: ignored
    }
  };
  const update = async (key: string, value: LeaseValue, revision: number): Promise<number> => {
    try {
      // A short timeout: a renewal must land well within the fencing deadline (1.5 s after it was sent), or be retried.
      return await kv.update(key, encode(value), revision, 1_000);
    } catch (e) {
      if (isConflict(e)) throw new LeaseConflictError(key);
      throw e;
    }
  };
  return {
    kv,
    list: async (prefix) => {
      // The keys from the stream's per-subject state, not from `kv.keys()`: that creates a single-replica consumer,
      // which may be placed on a node that just died, while the stream answers as soon as it has a leader.
      const info = await jsm.streams.info(`KV_${LEASE_BUCKET}`, { subjects_filter: `${subjectPrefix}${prefix}>` });
      const keys = Object.keys(info.state.subjects ?? {}).map((subject) => subject.slice(subjectPrefix.length));
      const out = new Map<string, LeaseRecord>();
      await Promise.all(
        keys.map(async (k) => {
          const r = await read(k);
          if (r !== null) out.set(k, r);
        }),
      );
      return out;
    },
    create: async (key, value) => {
      try {
        return await kv.put(key, encode(value), { previousSeq: 0 }); // what `kv.create` sends first
      } catch (e) {
        if (!isConflict(e)) throw e;
      }
      // The key has a message. `kv.create` would then read it with a direct get, which a replica without the delete
      // yet answers with the old value (a spurious conflict): read it on the leader, and write over a delete marker
      // on its revision (still compare-and-set: another engine's create in between makes this fail).
      const last = await kvLeaderGet(jsm, LEASE_BUCKET, key);
      if (last === null || last.operation === "PUT") throw new LeaseConflictError(key);
      return update(key, value, last.revision);
    },
    update,
    put: (key, value) => kv.put(key, encode(value)),
    get: read,
    purge: (key) => kv.delete(key),
    remove: async (key, revision) => {
      try {
        await kv.delete(key, { previousSeq: revision });
      } catch (e) {
        if (isConflict(e)) throw new LeaseConflictError(key);
        throw e;
      }
    },
  };
}
