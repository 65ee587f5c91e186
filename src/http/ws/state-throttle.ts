import type { LiveState } from "./hub-ports.ts";

/**
 * At most `perSecond` state pushes per asset (addendum D: each published recompute, coalesced to 4/s): a state that
 * comes sooner waits, replaced by any newer one, until the asset's gap has passed, and then the latest goes out.
 */
export class StateThrottle {
  readonly #minGapMs: number;
  readonly #wall: () => number;
  readonly #lastSent = new Map<string, number>();
  readonly #pending = new Map<string, LiveState>();
  readonly #timers = new Map<string, ReturnType<typeof setTimeout>>();

  constructor(perSecond: number, wall: () => number) {
    this.#minGapMs = 1000 / perSecond;
    this.#wall = wall;
  }

  /** Pushes `s` now (`push` gets it and the instant), or when the asset's gap has passed if nothing newer came. */
  offer(s: LiveState, push: (s: LiveState, now: number) => void): void {
    const now = this.#wall();
    const last = this.#lastSent.get(s.mint);
    if (last === undefined || now - last >= this.#minGapMs) {
      push(s, now);
      return;
    }
    this.#pending.set(s.mint, s);
    if (this.#timers.has(s.mint)) return;
    const t = setTimeout(
      () => {
        this.#timers.delete(s.mint);
        const pending = this.#pending.get(s.mint);
        this.#pending.delete(s.mint);
        if (pending !== undefined) push(pending, this.#wall());
      },
      Math.max(1, last + this.#minGapMs - now),
    );
    this.#timers.set(s.mint, t);
  }

  /** A state went out at `now`: the asset's next one waits for the gap. */
  sent(mint: string, now: number): void {
    this.#lastSent.set(mint, now);
  }

  stop(): void {
    for (const t of this.#timers.values()) clearTimeout(t);
    this.#timers.clear();
  }
}
