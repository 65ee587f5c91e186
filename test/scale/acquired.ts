/**
 * What the engines' `acquired assets` lines say (src/streams/jetstream/partition-restore.ts): one line per acquired
 * unit (a partition), with its started assets' mints, where their states came from and how many missed samples they
 * were fed. Each asset's own line is at debug level.
 */

/** A log line as the scale tests and bench:cluster parse them. */
type Line = Readonly<Record<string, unknown>>;

/** The `acquired assets` lines at or after `since` (by `at`), latest per mint: mint -> its line. */
export function acquiredBy<L extends Line>(lines: Iterable<L>, at: (l: L) => number, since: number): Map<string, L> {
  const out = new Map<string, L>();
  for (const l of lines) {
    if (l["msg"] !== "acquired assets" || at(l) < since) continue;
    for (const mint of l["mints"] as readonly string[]) out.set(mint, l);
  }
  return out;
}

/** Over distinct lines: assets by where their state came from, and the missed samples fed. */
export function acquiredTotals(lines: Iterable<Line>): { from: Record<string, number>; caughtUp: number; cold: string[] } {
  const from: Record<string, number> = {};
  let caughtUp = 0;
  const cold: string[] = [];
  for (const l of new Set(lines)) {
    for (const [source, n] of Object.entries(l["from"] as Record<string, number>)) from[source] = (from[source] ?? 0) + n;
    caughtUp += Number(l["caught_up"]);
    cold.push(...(l["cold"] as readonly string[]));
  }
  return { from, caughtUp, cold };
}
