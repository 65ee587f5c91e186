import type { Heartbeat } from "./lease-heartbeat.ts";
import { renewLease, type HeldLease, type RenewalContext } from "./lease-renewal.ts";

/** What became of one unit's renewal (`renewLease`). */
export type RenewalOutcome = "renewed" | "taken" | "gone";

export interface RenewalsOptions {
  readonly context: RenewalContext;
  /** The units held now, by unit: what is renewed, and what a renewal checks it still holds. */
  readonly held: ReadonlyMap<string, HeldLease>;
  /** A unit's lease key. */
  key(unit: string): string;
  /** Renewal period. */
  readonly everyMs: number;
  /** The loop's tick (a fifth of the period). */
  readonly tickMs: number;
  readonly heartbeat: Heartbeat;
  /** Called with each renewal's outcome, once it is known, if the unit is still held as it was. */
  settled(unit: string, held: HeldLease, outcome: RenewalOutcome): void;
}

/**
 * The renewals of one engine's held leases, with its heartbeat: run by the lease manager on its own thread, or by the
 * lease keeper's thread (`lease-keeper.ts`) so that a busy event loop cannot let them lapse. Each unit is renewed on
 * its own, a period after its own last renewal was sent: one renewal retried until its deadline (a slow answer under
 * load) used to hold back the next renewal of every other unit past their fencing deadlines, and all lapsed together.
 */
export class Renewals {
  readonly #o: RenewalsOptions;
  /** Units whose renewal (with its retries) is in flight: the next tick leaves them alone. */
  readonly #inFlight = new Map<string, Promise<void>>();

  constructor(options: RenewalsOptions) {
    this.#o = options;
  }

  /** The renewals and the heartbeat in flight (a stop waits for them). */
  get inFlight(): Promise<void>[] {
    const beat = this.#o.heartbeat.inFlight;
    return [...this.#inFlight.values(), ...(beat === null ? [] : [beat])];
  }

  /** Deletes the heartbeat (a graceful stop: the other engines stop counting this one at once). */
  removeHeartbeat(): Promise<void> {
    return this.#o.heartbeat.remove();
  }

  /** The renewal of `unit` in flight, if any (a hand-back waits for it before deleting the key). */
  of(unit: string): Promise<void> | undefined {
    return this.#inFlight.get(unit);
  }

  /**
   * The renewal of every held unit whose last renewal was sent a period ago (`all`: every held unit), each on its own.
   * With them the heartbeat, so it expires with the engine's leases, not up to a period later (the survivors count a
   * dead engine alive until its heartbeat expires, and take its expired leases only then: the fair share). Resolves
   * when the ones started here are answered (or given up at their deadline).
   */
  due(all = false): Promise<void> {
    const o = this.#o;
    if (o.context.stopped()) return Promise.resolve();
    const now = o.context.clock.now();
    const free = [...o.held].filter(([unit, held]) => !this.#inFlight.has(unit) && held.releasing !== true);
    // Due: renewed a period ago (half a tick of slack for a timer that fires early). When some unit is due, the ones
    // past half their period are renewed with it, once: units acquired at other instants fall into step, and the
    // engine sends one heartbeat per period with all its renewals.
    const dueAt = now - o.everyMs + o.tickMs / 2;
    const any = all || free.some(([, held]) => held.sentAt <= dueAt);
    const withThem = now - o.everyMs / 2;
    const started: Promise<void>[] = [];
    for (const [unit, held] of free) {
      if (!any || held.sentAt > withThem) continue;
      const renewal = this.#renew(unit, held).finally(() => this.#inFlight.delete(unit));
      this.#inFlight.set(unit, renewal);
      started.push(renewal);
    }
    const beat = o.heartbeat.beat(now, any, dueAt);
    if (beat !== null) started.push(beat);
    return Promise.allSettled(started).then(() => {});
  }

  async #renew(unit: string, held: HeldLease): Promise<void> {
    const o = this.#o;
    const outcome = await renewLease(o.context, o.key(unit), unit, held, () => o.held.get(unit));
    // A hand-back or a fence meanwhile: the unit's outcome is no longer this renewal's to tell.
    if (o.held.get(unit) === held) o.settled(unit, held, outcome);
  }
}
