/**
 * Ownership by partition (issue 26, item 1; `LEASE_PARTITIONS`): with a partition count P > 0, an asset belongs to
 * partition `partitionOf(mint, P)` and engines lease partitions (`partition.<n>` in PEG_LEASES) instead of assets, so
 * an engine's lease writes per second follow the partitions it holds, not the assets in them, and rebalancing moves
 * whole partitions (each engine within one partition of its fair share: `planLeases` over partitions).
 *
 * The hash is FNV-1a (32-bit) of the mint's base58 text as UTF-8, modulo P: the same on every process and every
 * platform, documented in docs/scaling.md, so P must be the same on every engine of a deployment (set at deploy time;
 * changing it moves every asset at once, like a restart of all engines).
 */

/** FNV-1a, 32-bit, of `text` as UTF-8. */
export function fnv1a32(text: string): number {
  let h = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(text)) h = Math.imul(h ^ byte, 0x01000193);
  return h >>> 0;
}

/** The partition of an asset among `count` (> 0). */
export function partitionOf(mint: string, count: number): number {
  if (!Number.isSafeInteger(count) || count < 1) throw new RangeError(`partition count must be a positive integer, got ${String(count)}`);
  return fnv1a32(mint) % count;
}

/** The units an engine leases and the assets in each: one per asset (count 0), or the partitions that have assets. */
export interface LeaseUnits {
  readonly keyPrefix: "asset." | "partition.";
  /** The units (mints, or partition numbers as text), in a stable order. */
  readonly units: readonly string[];
  /** The unit of an asset. */
  unitOf(mint: string): string;
  /** The assets of a unit (empty for an unknown unit). */
  assetsOf(unit: string): readonly string[];
}

export function leaseUnits(mints: readonly string[], partitions: number): LeaseUnits {
  if (partitions === 0) {
    const known = new Set(mints);
    return { keyPrefix: "asset.", units: [...mints], unitOf: (mint) => mint, assetsOf: (unit) => (known.has(unit) ? [unit] : []) };
  }
  const byUnit = new Map<string, string[]>();
  const unitByMint = new Map<string, string>();
  for (const mint of mints) {
    const unit = String(partitionOf(mint, partitions));
    unitByMint.set(mint, unit);
    const list = byUnit.get(unit);
    if (list === undefined) byUnit.set(unit, [mint]);
    else list.push(mint);
  }
  return {
    keyPrefix: "partition.",
    units: [...byUnit.keys()].sort((a, b) => Number(a) - Number(b)),
    unitOf: (mint) => unitByMint.get(mint) ?? String(partitionOf(mint, partitions)),
    assetsOf: (unit) => byUnit.get(unit) ?? [],
  };
}
