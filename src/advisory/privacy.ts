/**
 * The privacy rule of the advisory figures (interface 2.7 and part 8): no published figure may describe a small group
 * of positions, or be dominated by one.
 *
 * **Band.** A band is a set of positions whose summed collateral (and debt) a reader can learn from what is
 * published. That is every published figure itself — the asset total (`loop_exposure_usd`, `debt_usd`), each
 * protocol's bucket in `by_protocol`, each cascade rung's liquidatable set — and also every set a reader can isolate
 * by subtracting one published figure from another that contains it: the positions that become liquidatable between
 * two published rungs, the positions beyond the last published rung (total minus rung), and the protocols whose
 * figures were withheld (total minus the published protocols).
 *
 * **Rule.** A non-empty band is publishable only when it holds at least `PRIVACY_FLOOR` (5) positions and no single
 * position holds more than half of its collateral or more than half of its debt. An empty band describes nobody and
 * is always publishable (a rung with nothing liquidatable shows `0`).
 *
 * **How it is enforced.** Figures are withheld (published as null) until every band — direct or by difference — is
 * publishable: cascade rungs along the chain of nested liquidatable sets (`chainPublication`), protocol buckets with
 * complementary suppression (`partitionPublication`). Because a union of disjoint publishable bands is publishable,
 * publishing only unions of publishable blocks keeps every difference publishable too.
 *
 * Limit: the guarantee is per hierarchy (the cascade chain with its total; the protocol partition with its total).
 * Which protocol a liquidatable position belongs to is never published, so a cascade rung and a protocol bucket
 * cannot be subtracted from each other as sets.
 */
import { ZERO, type Decimal } from "../methodology/index.ts";
import type { LendingPosition } from "./position.ts";

/** Minimum number of positions in a published band (interface part 8). */
export const PRIVACY_FLOOR = 5;

/** Position-count labels: `0`, `<5`, then k-floored ranges (lower bound, inclusive upper bound). */
const LABEL_RANGES: readonly (readonly [number, number])[] = [
  [5, 9],
  [10, 24],
  [25, 49],
  [50, 99],
  [100, 249],
  [250, 499],
  [500, 999],
];

/**
 * The `positions` label of a count (decision): `0` for none (an empty band reveals nothing), `<5` for 1 to 4 — the
 * floor bucket, so a count below the privacy floor is never distinguishable — then `5-9`, `10-24`, `25-49`, `50-99`,
 * `100-249`, `250-499`, `500-999` and `1000+`. Never a raw count.
 */
export function positionsLabel(count: number): string {
  if (!Number.isSafeInteger(count) || count < 0) throw new RangeError(`not a position count: ${count}`);
  if (count === 0) return "0";
  if (count < PRIVACY_FLOOR) return `<${PRIVACY_FLOOR}`;
  for (const [lo, hi] of LABEL_RANGES) if (count >= lo && count <= hi) return `${lo}-${hi}`;
  return "1000+";
}

/** Summed collateral and debt of a set of positions, exact. */
export function totals(band: readonly LendingPosition[]): { readonly collateral: Decimal; readonly debt: Decimal } {
  let collateral = ZERO;
  let debt = ZERO;
  for (const p of band) {
    collateral = collateral.plus(p.collateral_usd);
    debt = debt.plus(p.debt_usd);
  }
  return { collateral, debt };
}

/** Whether a band may be published: empty, or at least 5 positions with none above half its collateral or debt. */
export function publishable(band: readonly LendingPosition[]): boolean {
  if (band.length === 0) return true;
  if (band.length < PRIVACY_FLOOR) return false;
  const { collateral, debt } = totals(band);
  const halfC = collateral.div(2);
  const halfD = debt.div(2);
  return band.every((p) => !p.collateral_usd.gt(halfC) && !p.debt_usd.gt(halfD));
}

function without(set: readonly LendingPosition[], removed: ReadonlySet<LendingPosition>): LendingPosition[] {
  return set.filter((p) => !removed.has(p));
}

/**
 * Which rungs of a chain of nested sets (`rungs[0]` within `rungs[1]` within ... within `total`) may be published,
 * given that `total` itself is published. A rung is published when the positions added since the last published
 * rung form a publishable block; then, while the positions beyond the last published rung are not publishable, the
 * highest published rungs are withdrawn. Every published rung, and every difference between two published figures of
 * the chain, is then a union of publishable blocks.
 */
export function chainPublication(total: readonly LendingPosition[], rungs: readonly (readonly LendingPosition[])[]): boolean[] {
  const published = rungs.map(() => false);
  let last: readonly LendingPosition[] = [];
  for (let k = 0; k < rungs.length; k++) {
    const block = without(rungs[k]!, new Set(last));
    if (publishable(block)) {
      published[k] = true;
      last = rungs[k]!;
    }
  }
  for (;;) {
    const top = published.lastIndexOf(true);
    const base = top < 0 ? [] : rungs[top]!;
    // With no rung published the remainder is `total` itself, published by the caller's own check.
    if (top < 0 || publishable(without(total, new Set(base)))) return published;
    published[top] = false;
  }
}

/**
 * Which cells of a partition of a published total may be published: cells that are not publishable are withheld,
 * and while the withheld cells together (the total minus the published ones) are not publishable, the smallest
 * published cell is withheld as well (complementary suppression). Ties break on the cell's index.
 */
export function partitionPublication(cells: readonly (readonly LendingPosition[])[]): boolean[] {
  const published = cells.map((c) => publishable(c));
  for (;;) {
    const withheld = cells.filter((_, i) => !published[i]).flat();
    if (publishable(withheld)) return published;
    let smallest = -1;
    for (let i = 0; i < cells.length; i++) {
      if (!published[i]) continue;
      if (smallest < 0 || totals(cells[i]!).collateral.lt(totals(cells[smallest]!).collateral)) smallest = i;
    }
    // With every cell withheld the union is the published total itself, which is publishable.
    if (smallest < 0) return published;
    published[smallest] = false;
  }
}
