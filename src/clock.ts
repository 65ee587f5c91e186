/**
 * The one injected clock (STYLE.md "One injected clock"). Actors (as xstate's `clock`), stores and staleness checks
 * take a Clock; nothing else reads the wall clock.
 */
export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(id: unknown): void;
}

/** The process wall clock. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (id) => clearTimeout(id as ReturnType<typeof setTimeout>),
};

interface Timer {
  readonly id: number;
  readonly due: number;
  readonly fn: () => void;
}

function before(a: Timer, b: Timer): boolean {
  return a.due < b.due || (a.due === b.due && a.id < b.id);
}

/**
 * A clock that moves only when told to, for replay and tests (after xstate's SimulatedClock). Timers fire in due
 * order (ties in scheduling order) and each fires with `now()` equal to its own due instant, so a dwell timer's
 * evaluation sees exactly its deadline. Timers live in a binary heap; cleared ones are dropped lazily.
 */
export class SimulatedClock implements Clock {
  #now: number;
  #seq = 0;
  #heap: Timer[] = [];
  #live = new Set<number>();

  constructor(startMs = 0) {
    this.#now = startMs;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): number {
    const id = ++this.#seq;
    this.#push({ id, due: this.#now + Math.max(0, ms), fn });
    this.#live.add(id);
    return id;
  }

  clearTimeout(id: unknown): void {
    if (typeof id === "number") this.#live.delete(id);
  }

  /** Number of timers not yet fired or cleared. */
  get pending(): number {
    return this.#live.size;
  }

  /** The earliest pending due instant, or null. */
  nextDue(): number | null {
    this.#dropCleared();
    return this.#heap[0]?.due ?? null;
  }

  /** Moves time forward to `ms`, firing every timer due at or before it (including ones scheduled while firing). */
  set(ms: number): void {
    if (ms < this.#now) throw new RangeError(`a simulated clock never goes back (${ms} < ${this.#now})`);
    for (;;) {
      this.#dropCleared();
      const next = this.#heap[0];
      if (next === undefined || next.due > ms) break;
      this.#pop();
      this.#live.delete(next.id);
      this.#now = next.due;
      next.fn();
    }
    this.#now = ms;
  }

  increment(ms: number): void {
    this.set(this.#now + ms);
  }

  #dropCleared(): void {
    while (this.#heap.length > 0 && !this.#live.has(this.#heap[0]!.id)) this.#pop();
  }

  #push(t: Timer): void {
    const h = this.#heap;
    h.push(t);
    let i = h.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(h[i]!, h[parent]!)) break;
      [h[i], h[parent]] = [h[parent]!, h[i]!];
      i = parent;
    }
  }

  #pop(): void {
    const h = this.#heap;
    const last = h.pop()!;
    if (h.length === 0) return;
    h[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1, r = l + 1;
      let m = i;
      if (l < h.length && before(h[l]!, h[m]!)) m = l;
      if (r < h.length && before(h[r]!, h[m]!)) m = r;
      if (m === i) break;
      [h[i], h[m]] = [h[m]!, h[i]!];
      i = m;
    }
  }
}

/** Runs `fn` later, once every timer that is due now has had its turn (see `ScaledClock`). */
export type AfterDueTimers = (fn: () => void) => void;

/**
 * Two turns of the event loop: `fn` runs in the check phase of the next loop iteration, whose timers phase started
 * after this call, so every Node timer due by now (a scenario feed's next sample, however late) has run before it.
 * One turn is not enough: the check phase of this iteration can come before a timer that fell due while this
 * iteration's timers phase was running.
 */
export const nextLoopTurn: AfterDueTimers = (fn) => {
  setImmediate(() => setImmediate(fn));
};

/** One timer of a ScaledClock: its scenario due instant once armed, and the base timer it waits on. */
interface ScaledTimer {
  readonly fn: () => void;
  readonly ms: number;
  due: number;
  base: unknown;
  live: boolean;
}

/**
 * A clock that runs `speed` times faster than `base`, starting at `origin`: scenario feeds replay history at
 * SCENARIO_SPEED with every dwell window scaled alike, and receipts carry scenario time.
 *
 * Created `paused`, it reads `origin` and holds the timers set meanwhile until `start()`: a service restarting from
 * recovered actors creates the clock before the rest of its start-up and starts it with the intake, so no dwell
 * timer can fire ahead of the samples that precede its deadline while the service is still starting.
 *
 * A timer fires in scenario order with the feed, as in the offline replay (every sample stamped before its due
 * instant first), however late the event loop runs:
 * - never early: a base timer that wakes before the scenario due instant (the base clock rounds to whole
 *   milliseconds, 40 scenario milliseconds at speed 40) waits again for the rest;
 * - then after every timer that is due by then (`afterDueTimers`, default `nextLoopTurn`). The feed's own timer for
 *   its next sample is due before any dwell deadline later than that sample, but after a stall (a loaded machine, GC)
 *   both are overdue and Node runs overdue timers list by list, not in due order: a dwell timer run straight from
 *   its base timer could evaluate before the feed had delivered samples stamped seconds before its deadline.
 */
export class ScaledClock implements Clock {
  readonly #base: Clock;
  readonly #origin: number;
  #startedAt: number | null;
  readonly #speed: number;
  readonly #afterDueTimers: AfterDueTimers;
  /** Timers set while paused, armed on start. */
  readonly #held = new Set<ScaledTimer>();

  constructor(
    origin: number,
    speed: number,
    base: Clock = systemClock,
    opts: { readonly paused?: boolean; readonly afterDueTimers?: AfterDueTimers } = {},
  ) {
    if (!(speed > 0) || !Number.isFinite(speed)) throw new RangeError("speed must be a positive finite number");
    this.#base = base;
    this.#origin = origin;
    this.#startedAt = opts.paused === true ? null : base.now();
    this.#speed = speed;
    this.#afterDueTimers = opts.afterDueTimers ?? nextLoopTurn;
  }

  /** Starts a paused clock (no-op when running): time runs from `origin` now, and held timers are armed. */
  start(): void {
    if (this.#startedAt !== null) return;
    this.#startedAt = this.#base.now();
    for (const t of this.#held) this.#arm(t);
    this.#held.clear();
  }

  now(): number {
    return this.#startedAt === null ? this.#origin : this.#origin + Math.floor((this.#base.now() - this.#startedAt) * this.#speed);
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const t: ScaledTimer = { fn, ms: Math.max(0, ms), due: Number.NaN, base: undefined, live: true };
    if (this.#startedAt === null) this.#held.add(t);
    else this.#arm(t);
    return t;
  }

  clearTimeout(id: unknown): void {
    if (typeof id !== "object" || id === null || !("live" in id)) return;
    const t = id as ScaledTimer;
    t.live = false;
    this.#held.delete(t);
    if (t.base !== undefined) this.#base.clearTimeout(t.base);
    t.base = undefined;
  }

  #arm(t: ScaledTimer): void {
    t.due = this.now() + t.ms;
    this.#wait(t, t.ms);
  }

  #wait(t: ScaledTimer, ms: number): void {
    t.base = this.#base.setTimeout(() => {
      t.base = undefined;
      if (!t.live) return;
      const left = t.due - this.now();
      if (left > 0) return this.#wait(t, left);
      this.#afterDueTimers(() => {
        if (!t.live) return;
        t.live = false;
        t.fn();
      });
    }, this.#scaled(ms));
  }

  #scaled(ms: number): number {
    return Math.max(0, Math.ceil(ms / this.#speed));
  }
}
