/**
 * An in-memory `LeaseStore` with the compare-and-set semantics of NATS KV (one revision sequence per bucket, like the
 * stream sequence; a deleted key can be created again; a write names the revision it expects), with the faults a
 * network adds: each engine sees the store through its own link, which has a latency and can be cut. A cut link
 * loses the request (nothing applied) or, when `lostReplies`, applies it and loses the reply.
 */
import type { SimulatedClock } from "../../src/clock.ts";
import { LeaseConflictError, type LeaseRecord, type LeaseStore, type LeaseValue } from "../../src/streams/jetstream/leases.ts";

interface Slot {
  value: LeaseValue | null;
  revision: number;
}

export class FakeLeaseBucket {
  readonly #keys = new Map<string, Slot>();
  #seq = 0;

  /** Current live records (what `nats kv get` would show). */
  snapshot(prefix = ""): Map<string, LeaseRecord> {
    const out = new Map<string, LeaseRecord>();
    for (const [k, s] of this.#keys) if (s.value !== null && k.startsWith(prefix)) out.set(k, { value: s.value, revision: s.revision });
    return out;
  }

  list(prefix: string): Map<string, LeaseRecord> {
    return this.snapshot(prefix);
  }

  get(key: string): LeaseRecord | null {
    const s = this.#keys.get(key);
    return s === undefined || s.value === null ? null : { value: s.value, revision: s.revision };
  }

  create(key: string, value: LeaseValue): number {
    const s = this.#keys.get(key);
    if (s !== undefined && s.value !== null) throw new LeaseConflictError(key);
    return this.#write(key, value);
  }

  update(key: string, value: LeaseValue, revision: number): number {
    const s = this.#keys.get(key);
    if (s === undefined || s.revision !== revision) throw new LeaseConflictError(key);
    return this.#write(key, value);
  }

  remove(key: string, revision: number): void {
    const s = this.#keys.get(key);
    if (s === undefined || s.revision !== revision) throw new LeaseConflictError(key);
    this.#write(key, null);
  }

  put(key: string, value: LeaseValue): number {
    return this.#write(key, value);
  }

  purge(key: string): void {
    this.#write(key, null);
  }

  #write(key: string, value: LeaseValue | null): number {
    const revision = ++this.#seq;
    this.#keys.set(key, { value, revision });
    return revision;
  }
}

/** One engine's link to the bucket. */
export class FakeLink implements LeaseStore {
  readonly #bucket: FakeLeaseBucket;
  readonly #clock: SimulatedClock;
  readonly #latency: () => number;
  /** While cut, requests time out. */
  cut = false;
  /** While cut: the request is applied but the reply is lost (else: the request is lost). */
  lostReplies = false;

  constructor(bucket: FakeLeaseBucket, clock: SimulatedClock, latency: () => number) {
    this.#bucket = bucket;
    this.#clock = clock;
    this.#latency = latency;
  }

  #call<T>(op: () => T): Promise<T> {
    const cut = this.cut;
    const applyAnyway = this.lostReplies;
    const delay = this.#latency();
    return new Promise<T>((resolve, reject) => {
      // The request reaches the server after half the latency, the reply comes back after the other half.
      this.#clock.setTimeout(() => {
        if (cut && !applyAnyway) {
          this.#clock.setTimeout(() => reject(new Error("timeout")), 1_000);
          return;
        }
        let result: { ok: true; value: T } | { ok: false; error: unknown };
        try {
          result = { ok: true, value: op() };
        } catch (e) {
          result = { ok: false, error: e };
        }
        this.#clock.setTimeout(() => {
          if (cut) reject(new Error("timeout"));
          else if (result.ok) resolve(result.value);
          else reject(result.error);
        }, delay / 2);
      }, delay / 2);
    });
  }

  list(prefix: string) {
    return this.#call(() => this.#bucket.list(prefix));
  }
  get(key: string) {
    return this.#call(() => this.#bucket.get(key));
  }
  create(key: string, value: LeaseValue) {
    return this.#call(() => this.#bucket.create(key, value));
  }
  update(key: string, value: LeaseValue, revision: number) {
    return this.#call(() => this.#bucket.update(key, value, revision));
  }
  remove(key: string, revision: number) {
    return this.#call(() => this.#bucket.remove(key, revision));
  }
  put(key: string, value: LeaseValue) {
    return this.#call(() => this.#bucket.put(key, value));
  }
  purge(key: string) {
    return this.#call(() => this.#bucket.purge(key));
  }
}
