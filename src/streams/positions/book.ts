/**
 * The in-memory positions book: reads every positions source on a fixed cadence (on the injected clock) and keeps
 * the latest positions per asset; each asset's loop exposure is computed once per refresh, when a route first reads it
 * (a source that can build one asset's positions on their own, `readByMint`, builds them then too).
 *
 * Failure policy: a source that fails keeps its last good positions (logged); the snapshot's `updatedAt` is the
 * oldest successful read among the sources, so `updated_at` never claims fresher data than was read. Before every
 * source has been read once there is no snapshot (the routes answer 503 `not_ready`). One refresh runs at a time:
 * a refresh that is still running when the next is due is not doubled.
 */
import { lazyExposures, positionsByMint, type ExposureReader, type ExposureSnapshot } from "../../advisory/index.ts";
import type { Clock } from "../../clock.ts";
import type { PositionSource, PositionsByMint } from "./source.ts";

export type PositionsLog = (level: "info" | "warn" | "error", msg: string, fields?: Record<string, unknown>) => void;

export interface PositionsBookOptions {
  readonly sources: readonly PositionSource[];
  readonly clock: Clock;
  /** Milliseconds between refreshes, > 0. Default 60 000. */
  readonly refreshMs?: number;
  readonly log?: PositionsLog;
}

export class PositionsBook implements ExposureReader {
  readonly #sources: readonly PositionSource[];
  readonly #clock: Clock;
  readonly #refreshMs: number;
  readonly #log: PositionsLog;
  readonly #last = new Map<PositionSource, { readonly at: number; readonly positions: PositionsByMint }>();
  #snapshot: ExposureSnapshot | null = null;
  #timer: unknown = null;
  #running: Promise<void> | null = null;
  #stopped = false;

  constructor(opts: PositionsBookOptions) {
    if (opts.sources.length === 0) throw new RangeError("a positions book needs at least one source");
    const refreshMs = opts.refreshMs ?? 60_000;
    if (!(refreshMs > 0)) throw new RangeError("refreshMs must be > 0");
    this.#sources = opts.sources;
    this.#clock = opts.clock;
    this.#refreshMs = refreshMs;
    this.#log = opts.log ?? (() => {});
  }

  snapshot(): ExposureSnapshot | null {
    return this.#snapshot;
  }

  /** Reads every source once and rebuilds the snapshot. Resolves (never rejects) when done. */
  refresh(): Promise<void> {
    this.#running ??= this.#refresh().finally(() => (this.#running = null));
    return this.#running;
  }

  async #refresh(): Promise<void> {
    const now = this.#clock.now();
    await Promise.all(
      this.#sources.map(async (s) => {
        try {
          this.#last.set(s, { at: now, positions: s.readByMint !== undefined ? await s.readByMint(now) : positionsByMint(await s.read(now)) });
        } catch (e) {
          this.#log("warn", "positions source failed; keeping its last positions", { source: s.name, error: e instanceof Error ? e.message : String(e) });
        }
      }),
    );
    if (this.#last.size < this.#sources.length) return;
    const reads = [...this.#last.values()];
    const parts = reads.map((r) => r.positions);
    this.#snapshot = {
      updatedAt: Math.min(...reads.map((r) => r.at)),
      // Figures are computed for a mint when a route first reads them (and its simulated positions built then).
      byMint: lazyExposures(
        () => new Set(parts.flatMap((p) => [...p.keys()])),
        (mint) => {
          const lists = parts.flatMap((p) => p.get(mint) ?? []);
          return lists.length === 0 ? undefined : lists;
        },
      ),
    };
  }

  /** Refreshes now, then every `refreshMs` until `stop()`. Resolves after the first refresh. */
  start(): Promise<void> {
    this.#stopped = false;
    const tick = (): void => {
      this.#timer = null;
      if (this.#stopped) return;
      void this.refresh().then(() => {
        if (!this.#stopped) this.#timer = this.#clock.setTimeout(tick, this.#refreshMs);
      });
    };
    const first = this.refresh();
    void first.then(() => {
      if (!this.#stopped && this.#timer === null) this.#timer = this.#clock.setTimeout(tick, this.#refreshMs);
    });
    return first;
  }

  /** Stops refreshing (idempotent); waits for a refresh in flight. The last snapshot stays readable. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== null) this.#clock.clearTimeout(this.#timer);
    this.#timer = null;
    await this.#running;
  }
}

