/**
 * Simulated lending positions for the default (FEED=sim) service: a deterministic book of leveraged positions across
 * several protocols for the catalog's liquid-staking and stablecoin assets. Loops are mostly LST collateral against
 * SOL debt and stables against stables, held close to their liquidation line as real loops are.
 *
 * Deterministic: the book is a function of (seed, asset mint, refresh epoch) only, drawn with the simulated market's
 * PRNG (`../sources/simulated-market/prng.ts`, bit-identical everywhere; no Math.log/pow). Values move a little from one epoch to the next.
 * Some assets get no book at all (nothing tracked: the feed omits `systemic`), some a sparse or whale-dominated one
 * (the privacy rule withholds figures and `coverage` is `partial`).
 */
import { lendingPosition, type LendingPosition } from "../../advisory/index.ts";
import type { CatalogAsset } from "../../catalog/index.ts";
import type { AssetClass, EpochMs } from "../../methodology/index.ts";
import { Prng, streamSeed } from "../sources/simulated-market/prng.ts";
import type { PositionSource, PositionsByMint } from "./source.ts";

export const SIM_PROTOCOLS = ["kamino", "marginfi", "save", "drift"] as const;

/** Relative share of positions per protocol (kamino the deepest). */
const PROTOCOL_WEIGHTS: readonly (readonly [(typeof SIM_PROTOCOLS)[number], number])[] = [
  ["kamino", 0.45],
  ["marginfi", 0.3],
  ["save", 0.15],
  ["drift", 0.1],
];

/** Liquidation thresholds by protocol: [LST collateral in its SOL-debt group, stablecoin collateral]. */
const LIQUIDATION_THRESHOLD: Readonly<Record<(typeof SIM_PROTOCOLS)[number], readonly [string, string]>> = {
  kamino: ["0.92", "0.95"],
  marginfi: ["0.9", "0.95"],
  save: ["0.88", "0.9"],
  drift: ["0.9", "0.93"],
};

const LOOPED_CLASSES: ReadonlySet<AssetClass> = new Set<AssetClass>(["lst", "stable_fiat", "stable_dn", "stable_cdp", "stable_yield"]);

/** Typical collateral of one position on an asset, USD (one pick per asset; each position is 0.5x to 3x of it). */
const MAGNITUDES = [10_000, 50_000, 100_000, 250_000, 1_000_000] as const;

export interface SimulatedPositionsOptions {
  readonly assets: readonly CatalogAsset[];
  /** Same seed as the simulated market by default: the same seed gives the same book. */
  readonly seed: number;
  /** Length of one epoch, ms: the book changes at most once per epoch. Default 60 000. */
  readonly epochMs?: number;
}

interface BasePosition {
  readonly protocol: (typeof SIM_PROTOCOLS)[number];
  readonly collateral: number;
  /** Health before any shock, > 1. */
  readonly health: number;
  readonly lt: string;
}

/** A protocol among the asset's `listed` ones (a prefix of PROTOCOL_WEIGHTS), by their relative weights. */
function pickProtocol(prng: Prng, listed: number): (typeof SIM_PROTOCOLS)[number] {
  const weights = PROTOCOL_WEIGHTS.slice(0, listed);
  let u = prng.next() * weights.reduce((s, [, w]) => s + w, 0);
  for (const [p, w] of weights) {
    if (u < w) return p;
    u -= w;
  }
  return weights[0]![0];
}

/** The asset's base book: how many positions, their sizes, protocols and health. Empty for many tail assets. */
function baseBook(asset: CatalogAsset, seed: number): BasePosition[] {
  if (!LOOPED_CLASSES.has(asset.class)) return [];
  const prng = new Prng(streamSeed(seed, `positions:${asset.mint}`));
  if (prng.chance(0.3)) return [];
  const count = prng.chance(0.15) ? prng.int(1, 4) : prng.int(8, 90);
  const whale = prng.chance(0.12) ? prng.int(0, count - 1) : -1;
  const lst = asset.class === "lst";
  // Thin books are listed on fewer protocols (the deepest first); deep ones on all four.
  const listed = Math.min(SIM_PROTOCOLS.length, 1 + Math.floor(count / 25));
  const scale = prng.pick(MAGNITUDES);
  const book: BasePosition[] = [];
  for (let i = 0; i < count; i++) {
    const protocol = pickProtocol(prng, listed);
    let collateral = scale * prng.uniform(0.5, 3);
    if (i === whale) collateral *= 40;
    // Loops sit close to their line: a third run tight (within 3 % of it), the rest looser; stables a little tighter.
    const health = prng.chance(0.3) ? prng.uniform(1.003, 1.03) : lst ? prng.uniform(1.03, 1.4) : prng.uniform(1.03, 1.25);
    book.push({ protocol, collateral, health, lt: LIQUIDATION_THRESHOLD[protocol][lst ? 0 : 1] });
  }
  return book;
}

/** Deterministic simulated positions for every looped-class asset of `assets`. */
export function simulatedPositions(opts: SimulatedPositionsOptions): PositionSource {
  const epochMs = opts.epochMs ?? 60_000;
  if (!(epochMs > 0)) throw new RangeError("epochMs must be > 0");
  const books = new Map(
    opts.assets.flatMap((a) => {
      const book = baseBook(a, opts.seed);
      return book.length === 0 ? [] : [[a.mint, book] as const];
    }),
  );
  /** One asset's positions in an epoch: a function of the seed, the mint and the epoch only. */
  const positionsOf = (mint: string, book: readonly BasePosition[], epoch: number): LendingPosition[] => {
    const drift = new Prng(streamSeed(opts.seed, `positions:${mint}:${epoch}`));
    return book.map((b) => {
      // Each epoch moves collateral by about 0.3 % and health by about 0.2 % (independent per epoch).
      const collateral = b.collateral * (1 + 0.003 * drift.normal());
      const health = Math.max(1.0005, b.health * (1 + 0.002 * drift.normal()));
      const debt = (collateral * Number(b.lt)) / health;
      return lendingPosition({
        protocol: b.protocol,
        collateral_mint: mint,
        collateral_usd: collateral.toFixed(2),
        debt_usd: debt.toFixed(2),
        liquidation_threshold: b.lt,
      });
    });
  };
  const byMint = (now: EpochMs): PositionsByMint => {
    const epoch = Math.floor(now / epochMs);
    const built = new Map<string, readonly LendingPosition[]>();
    return {
      keys: () => books.keys(),
      get(mint) {
        let list = built.get(mint);
        if (list === undefined) {
          const book = books.get(mint);
          if (book === undefined) return undefined;
          built.set(mint, (list = positionsOf(mint, book, epoch)));
        }
        return list;
      },
    };
  };
  return {
    name: "sim",
    read: async (now: EpochMs): Promise<readonly LendingPosition[]> => {
      const all = byMint(now);
      return [...books.keys()].flatMap((mint) => all.get(mint)!);
    },
    readByMint: async (now: EpochMs) => byMint(now),
  };
}
