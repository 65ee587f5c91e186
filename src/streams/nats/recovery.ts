import { assetStateFromJSON, type ActorHost, type HostAsset } from "../../actors/index.ts";
import { parseTimestamp, stateFromReceipt, type AssetState } from "../../methodology/index.ts";
import type { LogFn } from "./engine-link.ts";
import { subjects, TOPOLOGY, type Topology } from "./topology.ts";

export interface RecoverySummary {
  /** Assets restored from their `peg_actors` snapshot. */
  readonly fromSnapshot: number;
  /** Assets whose last acknowledged transition was newer than their snapshot (or had none). */
  readonly fromTransition: number;
  /** Assets restored from the store's latest receipt (no snapshot and no transition in JetStream). */
  readonly fromStore: number;
  /** Assets with nothing to restore (cold start). */
  readonly cold: number;
}

/** A receipt-shaped record: the parts `stateFromReceipt` needs, plus its decision instant. */
interface ReceiptLike {
  readonly catalog_entry: unknown;
  readonly inputs_frozen: unknown;
  readonly detected_at: string;
}

async function lastTransition(topology: Topology, mint: string): Promise<ReceiptLike | null> {
  try {
    const m = await topology.jsm.streams.getMessage(TOPOLOGY.transitions.stream, { last_by_subj: subjects.transition(mint) });
    return m === null ? null : m.json<ReceiptLike>();
  } catch (e) {
    if (/no message found|not found/i.test(e instanceof Error ? e.message : String(e))) return null;
    throw e;
  }
}

/**
 * Restores every asset's actor at start (issue 3 recovery): from its KV snapshot, unless JetStream holds an
 * acknowledged transition newer than that snapshot (the process stopped between the ack and the snapshot write), in
 * which case the state right after that transition is rebuilt exactly from its receipt; with neither, from the
 * store's latest receipt. Each restored actor resumes at the clock's now, so a dwell deadline that passed while the
 * process was down commits at its own instant. Start the EngineLink before calling this: a resumed deadline may
 * emit a transition at once.
 */
export async function recoverActors(
  host: ActorHost,
  assets: readonly HostAsset[],
  topology: Topology,
  options: { log?: LogFn; fromStore?: (mint: string) => Promise<ReceiptLike | null> } = {},
): Promise<RecoverySummary> {
  const log = options.log ?? (() => {});
  let fromSnapshot = 0, fromTransition = 0, fromStore = 0, cold = 0;
  for (const asset of assets) {
    let snapshot: AssetState | null = null;
    try {
      const entry = await topology.actors.get(asset.mint);
      if (entry !== null && entry.length > 0) snapshot = assetStateFromJSON(JSON.parse(entry.string()));
    } catch (e) {
      log("warn", "ignoring unreadable actor snapshot", { asset: asset.symbol, error: e instanceof Error ? e.message : String(e) });
    }
    const last = await lastTransition(topology, asset.mint);
    const lastAt = last === null ? null : parseTimestamp(last.detected_at);
    let state: AssetState | null = snapshot;
    if (last !== null && lastAt !== null && (snapshot === null || snapshot.evaluatedAt === null || lastAt > snapshot.evaluatedAt)) {
      state = stateFromReceipt(last);
      fromTransition++;
    } else if (snapshot !== null) {
      fromSnapshot++;
    } else if (options.fromStore !== undefined) {
      const stored = await options.fromStore(asset.mint);
      if (stored !== null) {
        state = stateFromReceipt(stored);
        fromStore++;
      }
    }
    if (state === null) {
      cold++;
      continue;
    }
    host.restoreAsset(asset.mint, state);
  }
  return { fromSnapshot, fromTransition, fromStore, cold };
}
