/**
 * What the cluster benchmark reads back at its end: every transition in `PEG_TRANSITIONS` compared with what each
 * WebSocket client received (lost, repeated, out of order) and with itself (one chain of states per asset: a decision
 * of a second owner would fork a chain, a from-state that is not the asset's previous to-state).
 */
import type { Receipt } from "../src/methodology/index.ts";
import type { TransitionClient } from "./cluster-procs.ts";

export interface HistoryCounts {
  readonly transitions: number;
  /** Stream transitions some client never received (summed over clients). */
  readonly lost: number;
  /** Alert ids twice in the stream, plus transitions a client received twice. */
  readonly duplicated: number;
  /** Transitions a client received after one with a higher sequence. */
  readonly outOfOrder: number;
  /** Transitions whose from-state is not the asset's previous to-state in the stream. */
  readonly chainBreaks: number;
  readonly chainBreakLines: readonly string[];
  /** Assets whose first transition in the stream starts from UNKNOWN (not a break: see `compareHistory`). */
  readonly firstFromUnknown: readonly string[];
}

export function compareHistory(receipts: readonly Receipt[], firstSeq: number, clients: readonly TransitionClient[]): HistoryCounts {
  const ids = receipts.map((r) => r.alert_id);
  const streamDuplicates = ids.length - new Set(ids).size;
  let lost = 0;
  let duplicated = streamDuplicates;
  let outOfOrder = 0;
  for (const c of clients) {
    const got = new Set(c.transitions.map((t) => t.alert_id));
    duplicated += c.transitions.length - got.size;
    lost += ids.filter((id) => !got.has(id)).length;
    for (let i = 1; i < c.transitions.length; i++) if (c.transitions[i]!.seq <= c.transitions[i - 1]!.seq) outOfOrder++;
  }
  const lastTo = new Map<string, string>();
  const chainBreakLines: string[] = [];
  const firstFromUnknown: string[] = [];
  receipts.forEach((r, i) => {
    const want = lastTo.get(r.asset);
    const line = `seq ${firstSeq + i}: ${r.asset} ${r.from_state}->${r.to_state} after ${want ?? "nothing (its first transition)"}`;
    // An asset's first transition follows no stored one. A cold actor's first published state is not a transition
    // (src/methodology/evaluate.ts): PEGGED, or UNKNOWN when its first evaluation hit a gate (stale samples on a loaded
    // machine, an outage incident), so a first transition from UNKNOWN is counted apart, not as a fork.
    if (want === undefined && r.from_state === "UNKNOWN") firstFromUnknown.push(line);
    else if (r.from_state !== (want ?? "PEGGED")) chainBreakLines.push(line);
    lastTo.set(r.asset, r.to_state);
  });
  return { transitions: receipts.length, lost, duplicated, outOfOrder, chainBreaks: chainBreakLines.length, chainBreakLines, firstFromUnknown };
}
