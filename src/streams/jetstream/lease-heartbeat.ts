import type { LogFn } from "./engine-link.ts";
import { LEASE_KEYS, type LeaseStore } from "./lease-store.ts";

/**
 * An engine's heartbeat, the key `engine.<id>` with the leases' TTL: the other engines count it alive (their fair
 * share) until it expires. Sent with the engine's renewals, so it expires with its leases, not up to a period later
 * (the survivors take a dead engine's expired leases only once its heartbeat has expired too); after a failure, again
 * at the next tick.
 */
export class Heartbeat {
  readonly #store: Pick<LeaseStore, "put" | "purge">;
  readonly #key: string;
  readonly #self: string;
  readonly #ttl: number;
  readonly #log: LogFn;
  #inFlight: Promise<void> | null = null;
  #lastSent = -Infinity;
  #failed = false;

  constructor(store: Pick<LeaseStore, "put" | "purge">, self: string, ttlMs: number, log: LogFn) {
    this.#store = store;
    this.#key = LEASE_KEYS.engine(self);
    this.#self = self;
    this.#ttl = ttlMs;
    this.#log = log;
  }

  /** The beat in flight, if any (a stop waits for it). */
  get inFlight(): Promise<void> | null {
    return this.#inFlight;
  }

  /**
   * Sends a beat unless one is in flight, when `withRenewals` (renewals go out now), after a failed one, or when the
   * last was sent at or before `dueAt`. Returns the beat sent, or null.
   */
  beat(now: number, withRenewals: boolean, dueAt: number): Promise<void> | null {
    if (this.#inFlight !== null || !(withRenewals || this.#failed || this.#lastSent <= dueAt)) return null;
    this.#failed = false;
    this.#lastSent = now;
    this.#inFlight = this.#store
      .put(this.#key, { owner: this.#self, expires_at: now + this.#ttl })
      .then(
        () => {},
        (e: unknown) => {
          this.#failed = true;
          this.#log("warn", "engine heartbeat failed", { error: e instanceof Error ? e.message : String(e) });
        },
      )
      .finally(() => (this.#inFlight = null));
    return this.#inFlight;
  }

  /** Deletes the heartbeat (a graceful stop: the others stop counting this engine at once). */
  remove(): Promise<void> {
    return this.#store.purge(this.#key).catch(() => {});
  }
}
