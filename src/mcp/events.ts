/**
 * Transitions after a cursor, for `subscribe_peg_events` and `GET /x402/events`. The cursor is the PEG_TRANSITIONS
 * stream sequence (the `seq` of `/v1/ws` transitions): every transition has one, without gaps, and the projector
 * stores it with the alert. An answer is cut at the first missing sequence (a transition the store has not projected
 * yet), so nothing is skipped; a gap still open after `gapGraceMs` is passed over (a transition that will never be
 * stored). With nothing new, the call waits up to its bound, polling the store.
 */
import type { Clock } from "../clock.ts";
import { alertRow } from "../http/routes/feeds.ts";
import type { AlertRowBody } from "../http/schemas/index.ts";
import { alertsAfterSeq, lastAlertSeq, type AlertRecord, type Executor } from "../store/index.ts";

/** One transition as the alert feed lists it, plus its stream sequence (the cursor). */
export type TransitionEvent = AlertRowBody & { readonly seq: number };

export interface EventPage {
  readonly events: readonly TransitionEvent[];
  /** Pass this as the next `after`: the sequence of the last event returned, or the cursor given when none. */
  readonly next_cursor: number;
}

export interface TransitionEvents {
  /** The newest stored sequence (0: none): where a subscription without a cursor starts. */
  latest(): Promise<number>;
  /** Transitions with a sequence above `after`, oldest first; waits up to `waitMs` for the first one. */
  after(after: number, opts: { readonly limit: number; readonly waitMs: number; readonly signal?: AbortSignal }): Promise<EventPage>;
}

export const EVENTS_LIMIT = { min: 1, max: 100, default: 50 } as const;
export const EVENTS_WAIT_SECS = { min: 0, max: 25, default: 10 } as const;

export interface StoreEventsOptions {
  /** How often a waiting call asks the store again. Default 250 ms. */
  readonly pollMs?: number;
  /** How long a missing sequence holds an answer back before it is passed over. Default 15 s. */
  readonly gapGraceMs?: number;
}

/** Transitions from the store's alerts (their `seq`), on the injected clock. */
export function storeEvents(db: Executor, clock: Clock, opts: StoreEventsOptions = {}): TransitionEvents {
  const pollMs = opts.pollMs ?? 250;
  const gapGraceMs = opts.gapGraceMs ?? 15_000;
  /** First time each missing sequence was seen (bounded: the oldest entries go first). */
  const gapsSeen = new Map<number, number>();

  /** The contiguous prefix of `rows` after `after` (a gap older than the grace is passed over). */
  function contiguous(after: number, rows: readonly AlertRecord[]): AlertRecord[] {
    const out: AlertRecord[] = [];
    let expected = after + 1;
    for (const r of rows) {
      const seq = r.seq!;
      if (seq !== expected) {
        const now = clock.now();
        const first = gapsSeen.get(expected) ?? now;
        if (!gapsSeen.has(expected)) {
          if (gapsSeen.size >= 1_000) gapsSeen.delete(gapsSeen.keys().next().value!);
          gapsSeen.set(expected, now);
        }
        if (now - first < gapGraceMs) break;
      }
      out.push(r);
      expected = seq + 1;
    }
    return out;
  }

  const sleep = (ms: number, signal?: AbortSignal) =>
    new Promise<void>((resolve) => {
      const t = clock.setTimeout(() => resolve(), ms);
      signal?.addEventListener("abort", () => {
        clock.clearTimeout(t);
        resolve();
      }, { once: true });
    });

  return {
    latest: () => lastAlertSeq(db),
    async after(after, { limit, waitMs, signal }) {
      const deadline = clock.now() + waitMs;
      for (;;) {
        const rows = contiguous(after, await alertsAfterSeq(db, after, limit));
        if (rows.length > 0) {
          return { events: rows.map((a) => ({ ...alertRow(a), seq: a.seq! })), next_cursor: rows[rows.length - 1]!.seq! };
        }
        const left = deadline - clock.now();
        if (left <= 0 || signal?.aborted === true) return { events: [], next_cursor: after };
        await sleep(Math.min(pollMs, left), signal);
      }
    },
  };
}
