/**
 * Backpressure for a feed that can produce less (the simulated market): before each tick the feed asks `admit()`,
 * which says no while the pipeline behind the engine is more than about one tick behind (the engine link's sample
 * queue could not take a whole tick, or the sample projector has more than a tick to catch up). A skipped tick is
 * never produced, so nothing downstream drops or queues it; the throttle counts it and warns at most every
 * `WARN_EVERY_MS`. `overload()` gives `/readyz` a reason while more than `OVERLOAD_SHARE` of the ticks of the last
 * `WINDOW_MS` were skipped: a service that skips a tick now and then (a garbage collection, a slower projector batch)
 * keeps up; one that skips one tick in ten does not.
 *
 * A live feed cannot be told to produce less: its samples still meet the engine link's queue, which drops (and says
 * so) when full.
 */
import { systemClock, type Clock } from "../clock.ts";

/** Warnings about skipped ticks: at most one per this period. */
const WARN_EVERY_MS = 10_000;
/** `overload()` judges the ticks of this last period... */
const WINDOW_MS = 30_000;
/** ...and reports an overload while more than this share of them were skipped... */
const OVERLOAD_SHARE = 0.1;
/** ...counting at least this many ticks (one skip among the first few ticks after a start is not an overload). */
const MIN_TICKS = 10;

export type ThrottleLog = (level: "warn", msg: string, fields?: Record<string, unknown>) => void;

/** Why the pipeline is behind right now (a sentence), or null when it can take another tick. */
export type Pressure = () => string | null;

export class IntakeThrottle {
  #pressure: Pressure = () => null;
  readonly #clock: Clock;
  readonly #log: ThrottleLog;
  #skipped = 0;
  #lastWhy = "";
  /** The ticks of the last `WINDOW_MS` (from `#head`): when, and whether skipped. */
  #ticks: { readonly at: number; readonly skipped: boolean }[] = [];
  #head = 0;
  #skippedInWindow = 0;
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

  /** Adds a pressure to what `admit()` asks (ROLE=engine with a shared intake: its publishes to PEG_INTAKE). */
  alsoWatch(extra: Pressure): void {
    const first = this.#pressure;
    this.#pressure = () => first() ?? extra();
  }

  /** Ticks skipped since start. */
  get skipped(): number {
    return this.#skipped;
  }

  /** True when the next tick may be produced; false counts a skipped tick (and may warn). */
  admit(): boolean {
    const why = this.#pressure();
    if (why === null) {
      this.#record(this.#clock.now(), false);
      return true;
    }
    this.skip(why);
    return false;
  }

  /** Counts a tick the feed skipped, for this reason. */
  skip(why: string): void {
    const now = this.#clock.now();
    this.#skipped++;
    this.#lastWhy = why;
    this.#record(now, true);
    if (now - this.#lastWarnAt >= WARN_EVERY_MS) {
      this.#lastWarnAt = now;
      this.#log("warn", "overloaded: the feed is throttled, ticks are skipped", { why, skipped_total: this.#skipped });
    }
  }

  /**
   * Why the intake is throttled (more than `OVERLOAD_SHARE` of the last `WINDOW_MS`'s ticks, and of `MIN_TICKS`,
   * skipped), or null.
   */
  overload(now = this.#clock.now()): string | null {
    this.#prune(now);
    const ticks = this.#ticks.length - this.#head;
    if (this.#skippedInWindow <= OVERLOAD_SHARE * Math.max(ticks, MIN_TICKS)) return null;
    return `overloaded: the feed is throttled, ${this.#skippedInWindow} of the last ${WINDOW_MS / 1000} s's ${ticks} ticks skipped (${this.#lastWhy})`;
  }

  #record(at: number, skipped: boolean): void {
    this.#ticks.push({ at, skipped });
    if (skipped) this.#skippedInWindow++;
    this.#prune(at);
  }

  #prune(now: number): void {
    while (this.#head < this.#ticks.length && this.#ticks[this.#head]!.at <= now - WINDOW_MS) {
      if (this.#ticks[this.#head]!.skipped) this.#skippedInWindow--;
      this.#head++;
    }
    if (this.#head > 1024 && this.#head * 2 > this.#ticks.length) {
      this.#ticks = this.#ticks.slice(this.#head);
      this.#head = 0;
    }
  }
}
