/**
 * The transitions of the last 24 h (at most `max` beyond that count), keyed by event-stream sequence, as the text sent
 * to clients: what a `subscribe` with `since_seq` replays (addendum D). Entries leave in stream order, by age or by
 * count; `coveredFrom` is then the lowest sequence from which the ring is complete.
 */
import type { EpochMs } from "../../methodology/index.ts";
import { WS_LIMITS } from "./protocol.ts";

export interface RingEntry {
  readonly seq: number;
  readonly mint: string;
  readonly at: EpochMs;
  readonly text: string;
}

export class TransitionRing {
  readonly #max: number;
  readonly #wall: () => number;
  readonly #ring: RingEntry[] = [];
  #ringHead = 0;
  /** The lowest sequence from which the ring is complete (every later transition is in it). */
  #coveredFrom = 1;

  constructor(max: number, wall: () => number) {
    this.#max = max;
    this.#wall = wall;
  }

  get size(): number {
    return this.#ring.length - this.#ringHead;
  }

  get coveredFrom(): number {
    return this.#coveredFrom;
  }

  /** The sequence from which the ring is complete (set by the feed after its back-fill from the stream). */
  coverFrom(seq: number): void {
    this.#coveredFrom = Math.max(1, seq);
  }

  /** Keeps a transition, then drops what is older than the replay window or beyond the count. */
  push(e: RingEntry): void {
    this.#ring.push(e);
    this.#trim();
  }

  /** The entries with a sequence above `seq`, in stream order. */
  *after(seq: number): Generator<RingEntry> {
    for (let i = this.#firstAfter(seq); i < this.#ring.length; i++) yield this.#ring[i]!;
  }

  /** Index of the first ring entry with a sequence above `seq`. */
  #firstAfter(seq: number): number {
    let lo = this.#ringHead;
    let hi = this.#ring.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.#ring[mid]!.seq <= seq) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  #trim(): void {
    const horizon = this.#wall() - WS_LIMITS.replayWindowMs;
    while (this.#ringHead < this.#ring.length && (this.#ring.length - this.#ringHead > this.#max || this.#ring[this.#ringHead]!.at < horizon)) {
      this.#coveredFrom = this.#ring[this.#ringHead]!.seq + 1;
      this.#ringHead++;
    }
    if (this.#ringHead > 1024 && this.#ringHead * 2 > this.#ring.length) {
      this.#ring.splice(0, this.#ringHead);
      this.#ringHead = 0;
    }
  }
}
