/**
 * The advisory figures' lending positions as the service runs them: Kamino's obligations in one book (one API read),
 * or the simulated positions in one `PositionsBook` per slice of `ASSETS_PER_BOOK` assets. A book's refresh is
 * synchronous CPU on this thread (when it also computed every figure, about half a millisecond per asset): one book of 10,000 assets froze the event loop
 * for seconds at start and every minute after (HTTP requests, NATS acknowledgements and timers waiting behind it, long
 * enough for JetStream requests to time out). The simulated book is a function of the seed, each mint and the epoch,
 * so its slices hold exactly the single book's positions; each slice's freeze stays near a tenth of a second. The
 * slices load one after the other, yielding to I/O between them, so their minutely refreshes stay staggered too.
 *
 * The reader's snapshot is null until every book has loaded (the routes answer 503 `not_ready` meanwhile), then the
 * union of the books' exposures (mints are disjoint across slices), `updatedAt` the oldest book's. A refresh only reads
 * and groups positions: each asset's figures are computed when a route first asks for them (`loopExposureByMint`).
 */
import type { ExposureLookup, ExposureReader, ExposureSnapshot } from "../advisory/index.ts";
import type { CatalogAsset } from "../catalog/index.ts";
import type { Clock } from "../clock.ts";
import { kaminoPositions, PositionsBook, simulatedPositions, type PositionSource, type PositionsLog } from "../streams/positions/index.ts";

/** Assets per simulated book: each refresh holds the event loop for about a tenth of a second on the benchmark machine. */
export const ASSETS_PER_BOOK = 100;

export interface PositionsBooksOptions {
  /** The active assets (the simulated positions' looped-class assets among them). */
  readonly assets: readonly CatalogAsset[];
  /** Seed of the simulated positions (the simulated market's). */
  readonly seed: number;
  /** KAMINO_POSITIONS_URL: Kamino's obligations instead of the simulated positions; null for simulated. */
  readonly kaminoUrl: string | null;
  /** Wall-clock time: positions are read in real time, whatever clock a scenario replays on. */
  readonly clock: Clock;
  readonly log: PositionsLog;
  /** Assets per simulated book; default `ASSETS_PER_BOOK`. */
  readonly assetsPerBook?: number;
}

export interface PositionsBooks extends ExposureReader {
  /** Loads the books one after the other, each then refreshing every minute; resolves once all have loaded or on stop. */
  start(): Promise<void>;
  /** Stops every book (idempotent), waiting for a refresh in flight. */
  stop(): Promise<void>;
}

const yieldToIo = () => new Promise<void>((resolve) => setImmediate(resolve));

export function positionsBooks(opts: PositionsBooksOptions): PositionsBooks {
  // Sources are built when their book starts: building the simulated base books is itself CPU.
  const sourceOf: (() => PositionSource)[] = [];
  if (opts.kaminoUrl !== null) {
    const baseUrl = opts.kaminoUrl;
    sourceOf.push(() => kaminoPositions({ baseUrl }));
  } else {
    const perBook = opts.assetsPerBook ?? ASSETS_PER_BOOK;
    if (!(Number.isSafeInteger(perBook) && perBook > 0)) throw new RangeError("assetsPerBook must be a positive integer");
    for (let i = 0; i < Math.max(1, opts.assets.length); i += perBook) {
      const assets = opts.assets.slice(i, i + perBook);
      sourceOf.push(() => simulatedPositions({ assets, seed: opts.seed }));
    }
  }
  const books: PositionsBook[] = [];
  let stopped = false;
  let merged: { readonly parts: readonly ExposureSnapshot[]; readonly snapshot: ExposureSnapshot } | null = null;
  return {
    snapshot() {
      if (books.length < sourceOf.length) return null;
      const parts: ExposureSnapshot[] = [];
      for (const b of books) {
        const s = b.snapshot();
        if (s === null) return null;
        parts.push(s);
      }
      if (parts.length === 1) return parts[0]!;
      if (merged === null || parts.some((p, i) => p !== merged!.parts[i])) {
        // Which book holds each mint (mints are disjoint across slices); figures stay computed on first read.
        const owner = new Map<string, ExposureLookup>();
        for (const p of parts) for (const mint of p.byMint.keys()) owner.set(mint, p.byMint);
        const byMint: ExposureLookup = { get: (mint) => owner.get(mint)?.get(mint), keys: () => owner.keys() };
        merged = { parts, snapshot: { updatedAt: Math.min(...parts.map((p) => p.updatedAt)), byMint } };
      }
      return merged.snapshot;
    },
    async start() {
      for (const source of sourceOf) {
        if (stopped) return;
        const book = new PositionsBook({ sources: [source()], clock: opts.clock, log: opts.log });
        books.push(book);
        await book.start();
        await yieldToIo();
      }
    },
    async stop() {
      stopped = true;
      await Promise.all(books.map((b) => b.stop()));
    },
  };
}
