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

/** Where an asset's recovered state came from. */
export type RecoverySource = "snapshot" | "transition" | "store";

/**
 * Reads the state every asset should resume from (issue 3 recovery), without touching any actor: its KV snapshot,
 * unless JetStream holds an acknowledged transition newer than that snapshot (the process stopped between the ack
 * and the snapshot write), in which case the state right after that transition is rebuilt exactly from its receipt;
 * with neither, the store's latest receipt. Assets with nothing to resume from are absent from the result.
 */
export async function readRecoveryStates(
  assets: readonly HostAsset[],
  topology: Topology,
  options: { log?: LogFn; fromStore?: (mint: string) => Promise<ReceiptLike | null> } = {},
): Promise<Map<string, { state: AssetState; source: RecoverySource }>> {
  const log = options.log ?? (() => {});
  const out = new Map<string, { state: AssetState; source: RecoverySource }>();
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
    if (last !== null && lastAt !== null && (snapshot === null || snapshot.evaluatedAt === null || lastAt > snapshot.evaluatedAt)) {
      out.set(asset.mint, { state: stateFromReceipt(last), source: "transition" });
    } else if (snapshot !== null) {
      out.set(asset.mint, { state: snapshot, source: "snapshot" });
    } else if (options.fromStore !== undefined) {
      const stored = await options.fromStore(asset.mint);
      if (stored !== null) out.set(asset.mint, { state: stateFromReceipt(stored), source: "store" });
    }
  }
  return out;
}

/**
 * Restores actors from `readRecoveryStates`. Each resumes at the host clock's now, so a dwell deadline that passed
 * while the process was down commits at its own instant. Start the EngineLink first: a resumed deadline may emit a
 * transition at once.
 */
export function applyRecovery(
  host: ActorHost,
  assets: readonly HostAsset[],
  states: ReadonlyMap<string, { state: AssetState; source: RecoverySource }>,
): RecoverySummary {
  let fromSnapshot = 0, fromTransition = 0, fromStore = 0, cold = 0;
  for (const asset of assets) {
    const r = states.get(asset.mint);
    if (r === undefined) {
      cold++;
      continue;
    }
    if (r.source === "snapshot") fromSnapshot++;
    else if (r.source === "transition") fromTransition++;
    else fromStore++;
    host.restoreAsset(asset.mint, r.state);
  }
  return { fromSnapshot, fromTransition, fromStore, cold };
}

/** `readRecoveryStates` then `applyRecovery`. */
export async function recoverActors(
  host: ActorHost,
  assets: readonly HostAsset[],
  topology: Topology,
  options: { log?: LogFn; fromStore?: (mint: string) => Promise<ReceiptLike | null> } = {},
): Promise<RecoverySummary> {
  return applyRecovery(host, assets, await readRecoveryStates(assets, topology, options));
}
