/**
 * Backpressure for a feed that can produce less (the simulated market, a scenario paced in real time): before each
 * tick the feed asks `admit()`, which says no while the pipeline behind the engine is more than about one tick
 * behind (the engine link's sample queue could not take a whole tick, or the sample projector has more than a tick
 * to catch up). A skipped tick is never produced, so nothing downstream drops or queues it; the throttle counts it,
 * warns at most every `WARN_EVERY_MS`, and `overload()` gives `/readyz` the reason for `HOLD_MS` after the last skip.
 *
 * A live feed cannot be told to produce less: its samples still meet the engine link's queue, which drops (and says
 * so) when full.
 */
import { systemClock, type Clock } from "../clock.ts";

/** Warnings about skipped ticks: at most one per this period. */
const WARN_EVERY_MS = 10_000;
/** `overload()` reports a skipped tick for this long after it. */
const HOLD_MS = 30_000;

export type ThrottleLog = (level: "warn", msg: string, fields?: Record<string, unknown>) => void;

/** Why the pipeline is behind right now (a sentence), or null when it can take another tick. */
export type Pressure = () => string | null;

export class IntakeThrottle {
  #pressure: Pressure = () => null;
  readonly #clock: Clock;
  readonly #log: ThrottleLog;
  #skipped = 0;
  #lastSkipAt: number | null = null;
  #lastWhy = "";
  #lastWarnAt = -Infinity;

  /** `clock`: wall time for the overload report and the warnings (not a scenario's clock). */
  constructor(options: { readonly log?: ThrottleLog; readonly clock?: Clock } = {}) {
    this.#log = options.log ?? (() => {});
    this.#clock = options.clock ?? systemClock;
  }

  /** What `admit()` asks (set once the engine link and the projectors exist; until then every tick is admitted). */
  watch(pressure: Pressure): void {
    this.#pressure = pressure;
  }

  /** Ticks skipped since start. */
  get skipped(): number {
    return this.#skipped;
  }

  /** True when the next tick may be produced; false counts a skipped tick (and may warn). */
  admit(): boolean {
    const why = this.#pressure();
    if (why === null) return true;
    this.skip(why);
    return false;
  }

  /** Counts a tick the feed skipped, for this reason. */
  skip(why: string): void {
    const now = this.#clock.now();
    this.#skipped++;
    this.#lastSkipAt = now;
    this.#lastWhy = why;
    if (now - this.#lastWarnAt >= WARN_EVERY_MS) {
      this.#lastWarnAt = now;
      this.#log("warn", "overloaded: the feed is throttled, ticks are skipped", { why, skipped_total: this.#skipped });
    }
  }

  /** Why the intake is throttled (a tick was skipped within the last `HOLD_MS`), or null. */
  overload(now = this.#clock.now()): string | null {
    if (this.#lastSkipAt === null || now - this.#lastSkipAt > HOLD_MS) return null;
    const ago = Math.max(0, Math.round((now - this.#lastSkipAt) / 1000));
    return `overloaded: the feed is throttled, ${this.#skipped} ticks skipped since start, the last ${ago} s ago (${this.#lastWhy})`;
  }
}
