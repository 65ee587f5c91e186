/**
 * The privacy rule of the advisory figures (interface 2.7 and part 8): no published figure may describe a small group
 * of positions, or be dominated by one. Every figure is a decimal string (interface 2.7 types them so, never null):
 * instead of withholding a figure, a published figure counts only the positions of publishable bands, and `coverage`
 * is `partial` whenever anything was left out — the figures are then lower bounds.
 *
 * **Band.** A band is a set of positions whose summed collateral (and debt) a reader can learn from what is
 * published. That is every published figure itself — the asset total (`loop_exposure_usd`, `debt_usd`), each
 * protocol's bucket in `by_protocol`, each cascade rung's liquidatable set — and also every set a reader can isolate
 * by subtracting one published figure from another whose set contains it: the positions that become liquidatable
 * between two published rungs, the positions beyond a rung (total minus rung), the other protocols (total minus a
 * protocol), a protocol minus a rung inside it or a rung minus a protocol inside it, and total minus the sum of the
 * listed protocols.
 *
 * **Rule.** A non-empty band is publishable only when it holds at least `PRIVACY_FLOOR` (5) positions and no single
 * position holds more than half of its collateral or more than half of its debt. An empty band describes nobody and
 * is always publishable (a rung with nothing liquidatable shows `0`).
 *
 * **What is published** (`publication`), all of it a union of publishable blocks, because a union of disjoint
 * publishable bands is publishable:
 *
 * 1. Protocol buckets (`partitionPublication`): a bucket that is not publishable is omitted from `by_protocol`, and
 *    while the omitted buckets together are not publishable the smallest listed one is omitted too (complementary
 *    suppression). The omitted positions appear in no figure at all, so nothing published can recover them; the
 *    complementary step is defence in depth: a reader who learns the asset's whole leveraged book elsewhere (another
 *    service, an older answer) and subtracts our total still only finds a publishable band.
 * 2. The total (`loop_exposure_usd`, `debt_usd`) is the sum of the listed buckets: a union of publishable buckets, and
 *    total minus the listed protocols is exactly zero. With nothing listed it is `0` (coverage `partial`).
 * 3. The cascade counts only positions of the listed protocols (decision). With the total now the listed protocols
 *    only, a rung over the whole book would mix the two partitions: when every listed position is liquidatable at a
 *    shock, rung minus total is exactly the liquidatable positions of the omitted protocols — one position, say. So
 *    the chain of nested liquidatable sets is cut down to the published total (`rung ∩ total`) and published along
 *    that chain (`chainPublication`): a rung is published when the positions added since the last published rung
 *    form a publishable block (and the rung is `crossPublishable` against every listed bucket, below); then, while
 *    the positions beyond the last published rung are not publishable, the highest published rungs are withdrawn. A
 *    rung that is not published carries the previous published rung's figure and `positions` label (the first rung:
 *    `0`), so the cascade stays monotone in the shock, and rung minus rung, total minus rung, are unions of blocks.
 * 4. A rung and a protocol bucket are nested when every position of one lies in the other (a protocol wholly
 *    liquidatable at a shock, or a rung wholly inside one protocol). A reader cannot see which protocol a liquidatable
 *    position belongs to, but may guess it, so a rung is published only when for every listed bucket it is nested
 *    with, the difference is publishable (`crossPublishable`).
 *
 * Hence every published figure, and the difference of any two published figures whose sets are nested, is a
 * publishable band; and every published figure is at most its true, unsuppressed value. Limit: the guarantee covers
 * single figures and differences of two within one answer; combinations of three or more figures across the two
 * partitions (a rung minus two protocols, say), and differences between answers of successive refreshes, are not
 * audited.
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
 * given that `total` itself is published and publishable. A rung is published when it is `eligible` (all are by
 * default) and the positions added since the last published rung form a publishable block; then, while the positions
 * beyond the last published rung are not publishable, the highest published rungs are withdrawn. Every published
 * rung, and every difference between two published figures of the chain (the total included), is then a union of
 * publishable blocks.
 */
export function chainPublication(
  total: readonly LendingPosition[],
  rungs: readonly (readonly LendingPosition[])[],
  eligible: readonly boolean[] = rungs.map(() => true),
): boolean[] {
  const published = rungs.map(() => false);
  let last: readonly LendingPosition[] = [];
  for (let k = 0; k < rungs.length; k++) {
    if (eligible[k] !== true) continue;
    const block = without(rungs[k]!, new Set(last));
    if (publishable(block)) {
      published[k] = true;
      last = rungs[k]!;
    }
  }
  for (;;) {
    const top = published.lastIndexOf(true);
    const base = top < 0 ? [] : rungs[top]!;
    // With no rung published the remainder is `total` itself, publishable by the caller's own check.
    if (top < 0 || publishable(without(total, new Set(base)))) return published;
    published[top] = false;
  }
}

/**
 * Whether a rung may stand beside the listed protocol buckets: for every bucket nested with it (the bucket wholly
 * inside the rung, or the rung wholly inside the bucket) the difference must be publishable.
 */
export function crossPublishable(rung: readonly LendingPosition[], cells: readonly (readonly LendingPosition[])[]): boolean {
  const inRung = new Set(rung);
  for (const cell of cells) {
    const inCell = new Set(cell);
    if (cell.every((p) => inRung.has(p)) && !publishable(without(rung, inCell))) return false;
    if (rung.every((p) => inCell.has(p)) && !publishable(without(cell, inRung))) return false;
  }
  return true;
}

/**
 * Which cells of a partition may be published: cells that are not publishable are withheld, and while the withheld
 * cells together are not publishable, the smallest published cell is withheld as well (complementary suppression).
 * Ties break on the cell's index. When the whole partition is not publishable, every cell ends up withheld.
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
    // Every cell withheld: nothing is published.
    if (smallest < 0) return published;
    published[smallest] = false;
  }
}

/** What the privacy rule lets a reader see of one asset's book: the listed protocol buckets and the cascade's sets. */
export interface Publication {
  /** Per cell: listed in `by_protocol` (and counted in the total) or omitted. */
  readonly cellShown: readonly boolean[];
  /** The published total: the positions of the listed cells. */
  readonly total: readonly LendingPosition[];
  /** Per rung: whether its own set is published (false: it carries the previous published rung's set). */
  readonly rungShown: readonly boolean[];
  /** Per rung: the set whose sums and label it publishes (its own, or the last published rung's, or empty). */
  readonly rungSets: readonly (readonly LendingPosition[])[];
  /** Whether anything was left out: some cell omitted or some rung showing less than its true set. */
  readonly withheld: boolean;
}

/**
 * Applies the privacy rule (see the header) to a book partitioned into `cells` (protocols) with the chain of nested
 * liquidatable sets `rungs` (ascending shocks).
 */
export function publication(cells: readonly (readonly LendingPosition[])[], rungs: readonly (readonly LendingPosition[])[]): Publication {
  const cellShown = partitionPublication(cells);
  const listed = cells.filter((_, i) => cellShown[i]);
  const total = listed.flat();
  const inTotal = new Set(total);
  const chain = rungs.map((r) => r.filter((p) => inTotal.has(p)));
  const rungShown = chainPublication(total, chain, chain.map((r) => crossPublishable(r, listed)));
  const rungSets: (readonly LendingPosition[])[] = [];
  let shown: readonly LendingPosition[] = [];
  chain.forEach((r, k) => {
    if (rungShown[k] === true) shown = r;
    rungSets.push(shown);
  });
  return { cellShown, total, rungShown, rungSets, withheld: cellShown.includes(false) || rungShown.includes(false) };
}
