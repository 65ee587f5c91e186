import { DeliverPolicy, type JsMsg } from "@nats-io/jetstream";
import type { MsgHdrs } from "@nats-io/transport-node";
import { assetStateFromJSON, type ActorHost, type HostAsset } from "../../actors/index.ts";
import { parseTimestamp, stateFromReceipt, type AssetState } from "../../methodology/index.ts";
import type { LogFn } from "./engine-link.ts";
import { limiter } from "./limiter.ts";
import { SAMPLE_TS_HEADER } from "./messages.ts";
import { orderedConsumer } from "./ordered-consumer.ts";
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

/** An asset's last message on `peg.transition.<mint>`. */
interface StoredTransition {
  readonly seq: number;
  readonly receipt: ReceiptLike;
  /** The stamp of the last sample the state after it reflects (`SAMPLE_TS_HEADER`); null on older messages. */
  readonly sampleTs: number | null;
}

function storedTransition(seq: number, h: MsgHdrs | undefined, receipt: ReceiptLike): StoredTransition {
  const ts = Number(h?.get(SAMPLE_TS_HEADER) || NaN);
  return { seq, receipt, sampleTs: Number.isFinite(ts) ? ts : null };
}

/**
 * The state right after a stored transition: rebuilt from its receipt, with the last sample's own stamp where the
 * message carries it (a receipt has only the evaluation instant, later than the stamp for a live feed).
 */
function stateAfter(t: StoredTransition): AssetState {
  const state = stateFromReceipt(t.receipt);
  return t.sampleTs === null || state.last === null ? state : { ...state, last: { ...state.last, ts: t.sampleTs } };
}

/**
 * The last message on `peg.transition.<mint>` (its stream sequence is the asset's fencing token, docs/scaling.md), or
 * null when the subject has none.
 */
export async function lastTransition(topology: Pick<Topology, "jsm">, mint: string): Promise<StoredTransition | null> {
  try {
    const m = await topology.jsm.streams.getMessage(TOPOLOGY.transitions.stream, { last_by_subj: subjects.transition(mint) });
    return m === null ? null : storedTransition(m.seq, m.header, m.json<ReceiptLike>());
  } catch (e) {
    if (/no message found|not found/i.test(e instanceof Error ? e.message : String(e))) return null;
    throw e;
  }
}

/** Where an asset's recovered state came from. */
export type RecoverySource = "snapshot" | "transition" | "store";

export interface RecoveryOptions {
  readonly log?: LogFn;
  readonly fromStore?: (mint: string) => Promise<ReceiptLike | null>;
  /**
   * Of these mints, the ones the store holds any alert for (one query instead of a `fromStore` round trip for every
   * asset with neither a snapshot nor a transition, e.g. every asset of a first start). Absent: `fromStore` is asked
   * for each.
   */
  readonly storeHas?: (mints: readonly string[]) => Promise<ReadonlySet<string>>;
  /**
   * Restore from the last transition in JetStream whenever there is one, whatever the snapshot says: after a publish
   * was rejected by the fencing token, the stream holds a transition this engine's snapshot does not include, even
   * when the snapshot is newer.
   */
  readonly preferTransition?: boolean;
  /**
   * One pass over each stream's last messages (true) or two reads per asset (false). Default: from `BULK_FROM`
   * assets on. A pass reads every asset's, so it pays for a share of the assets only (`RestoreReads`).
   */
  readonly bulk?: boolean;
  /**
   * The assets' last transitions as one pass read them (`lastTransitions`): an asset absent from it has none, and only
   * its snapshot is read (a replicated cluster's take-over, `RestoreReads`). Not with `bulk`.
   */
  readonly transitions?: TransitionPass;
}

/** What `readRecovery` found. */
export interface RecoveryRead {
  /** Per mint, the state to resume from; assets with nothing to resume from are absent. */
  readonly states: Map<string, { state: AssetState; source: RecoverySource }>;
  /**
   * Per mint (every asset read), the stream sequence of its last message on `peg.transition.<mint>`, 0 when it has
   * none: the fencing token the engine publishes its next transition with (`EngineLink.fence`).
   */
  readonly transitionSeqs: Map<string, number>;
}

/**
 * Reads the state every asset should resume from (issue 3 recovery), without touching any actor: its KV snapshot,
 * unless JetStream holds an acknowledged transition newer than that snapshot (the process stopped between the ack
 * and the snapshot write), in which case the state right after that transition is rebuilt exactly from its receipt;
 * with neither, the store's latest receipt. Also returns each asset's last transition sequence (the fencing token).
 */
export async function readRecovery(assets: readonly HostAsset[], topology: Topology, options: RecoveryOptions = {}): Promise<RecoveryRead> {
  const log = options.log ?? (() => {});
  const known = options.transitions;
  const bulk = (options.bulk ?? (known === undefined && assets.length >= BULK_FROM)) ? await readAllLast(topology) : null;
  const transitionOf = (mint: string) => (known === undefined ? lastTransition(topology, mint) : Promise.resolve(known.get(mint)));
  // A read that fails (a timeout, NATS unreachable) fails the recovery, to be tried again: resuming from an older
  // state, or cold, because the snapshot could not be fetched would rewind the asset. Only a snapshot that was read
  // and does not decode is ignored. Both reads of an asset at once, and `READS_AT_ONCE` assets at once: a take-over
  // restores thousands of assets, each a round trip or two.
  const reads = limiter(READS_AT_ONCE);
  const fetched = await Promise.all(
    assets.map((asset) =>
      reads.run(() => (bulk === null ? Promise.all([snapshotText(topology, asset.mint), transitionOf(asset.mint)]) : bulk.of(asset.mint))),
    ),
  );
  const out = new Map<string, { state: AssetState; source: RecoverySource }>();
  const transitionSeqs = new Map<string, number>();
  const neither: HostAsset[] = [];
  for (const [i, asset] of assets.entries()) {
    const [text, lastMsg] = fetched[i]!;
    let snapshot: AssetState | null = null;
    try {
      if (text !== null) snapshot = assetStateFromJSON(JSON.parse(text));
    } catch (e) {
      log("warn", "ignoring unreadable actor snapshot", { asset: asset.symbol, error: e instanceof Error ? e.message : String(e) });
    }
    transitionSeqs.set(asset.mint, lastMsg?.seq ?? 0);
    const lastAt = lastMsg === null ? null : parseTimestamp(lastMsg.receipt.detected_at);
    const newer = snapshot === null || snapshot.evaluatedAt === null || options.preferTransition === true || (lastAt !== null && lastAt > snapshot.evaluatedAt);
    if (lastMsg !== null && lastAt !== null && newer) {
      out.set(asset.mint, { state: stateAfter(lastMsg), source: "transition" });
    } else if (snapshot !== null) {
      out.set(asset.mint, { state: snapshot, source: "snapshot" });
    } else {
      neither.push(asset);
    }
  }
  if (options.fromStore !== undefined && neither.length > 0) {
    const has = options.storeHas === undefined ? null : await options.storeHas(neither.map((a) => a.mint));
    for (const asset of neither) {
      if (has !== null && !has.has(asset.mint)) continue;
      const stored = await options.fromStore(asset.mint);
      if (stored !== null) out.set(asset.mint, { state: stateFromReceipt(stored), source: "store" });
    }
  }
  return { states: out, transitionSeqs };
}

/**
 * From this many assets on, `readRecovery` reads every actor snapshot and every asset's last transition in one pass
 * each (an ordered consumer delivering the last message per subject) instead of two round trips per asset. Below it
 * (a lease acquisition restores one asset), the per-asset reads are cheaper than a pass over every subject.
 */
export const BULK_FROM = 32;

/** Assets whose reads are in flight at once (each one or two NATS requests). */
const READS_AT_ONCE = 64;
/** How long a pass's consumer creation is tried (`orderedConsumer`): about as long as one request used to wait. */
const PASS_CREATE_BUDGET_MS = 5_000;

async function snapshotText(topology: Topology, mint: string): Promise<string | null> {
  const entry = await topology.actors.get(mint);
  return entry !== null && entry.length > 0 ? entry.string() : null;
}

/**
 * Every actor snapshot (the KV bucket's last value per key; a deleted or purged key has an empty value and is left
 * out) and every asset's last transition, each in one pass over its stream. Decoded only for the assets asked for
 * (`of`): a take-over reads the whole catalogue's and restores a share of it. A snapshot the pass did not deliver is
 * read on its own (a key replaced while the pass ran can be skipped, see `lastPerSubject`; a 10,000-asset take-over
 * beside running engines rewrites hundreds of them meanwhile).
 */
async function readAllLast(topology: Topology): Promise<{ of(mint: string): Promise<[string | null, StoredTransition | null]> }> {
  const kvPrefix = `$KV.${TOPOLOGY.actors.bucket}.`;
  const [snapshotPass, transitions] = await Promise.all([lastPerSubject(topology, `KV_${TOPOLOGY.actors.bucket}`, `${kvPrefix}>`), lastTransitions(topology)]);
  const snapshots = new Map<string, JsMsg>();
  for (const m of snapshotPass.messages) snapshots.set(m.subject.slice(kvPrefix.length), m);
  return {
    of: async (mint) => {
      const s = snapshots.get(mint);
      // Not in the pass: read on its own, unless the bucket is empty (a first start). A snapshot missed here would
      // restart the asset from an older state. A transition missed (most assets have none, so reading each on its own
      // would cost the per-asset reads again) is caught by its fencing token: the asset's next publish is refused and
      // the asset restored from the stream (`EngineLink`, `onConflict`).
      const text = s !== undefined ? (s.data.length > 0 ? s.string() : null) : snapshotPass.messages.length === 0 && snapshotPass.complete ? null : await snapshotText(topology, mint);
      return [text, transitions.get(mint)];
    },
  };
}

/**
 * Every asset's last transition (by mint), in one pass over `PEG_TRANSITIONS` (most assets have none). A transition
 * the pass misses (written while it ran, or not yet on the replica it reads) is caught by its fencing token: the
 * asset's next publish is refused and the asset restored from the stream's leader.
 */
export async function lastTransitions(topology: Topology): Promise<TransitionPass> {
  const prefix = subjects.transition("");
  const messages = new Map<string, JsMsg>();
  for (const m of (await lastPerSubject(topology, TOPOLOGY.transitions.stream, `${prefix}>`)).messages) messages.set(m.subject.slice(prefix.length), m);
  // Decoded only for the assets asked for.
  return {
    get: (mint) => {
      const m = messages.get(mint);
      return m === undefined ? null : storedTransition(m.seq, m.headers, m.json<ReceiptLike>());
    },
  };
}

/** The last transition of each asset, as one pass read them; null: none. */
export interface TransitionPass {
  get(mint: string): StoredTransition | null;
}

/**
 * The last message of every subject matching `filter` in `stream`, through an ordered consumer, in one pass: until
 * nothing is pending (`complete`), or until a message written after the pass began (the stream is written all the
 * while in a take-over: waiting for nothing pending never ended). Then the pass is not `complete`: a subject whose
 * last message was replaced before the pass reached it was skipped, and is read on its own.
 */
async function lastPerSubject(topology: Topology, stream: string, filter: string): Promise<{ messages: JsMsg[]; complete: boolean }> {
  const consumer = await orderedConsumer(topology.nc, stream, { filter_subjects: filter, deliver_policy: DeliverPolicy.LastPerSubject }, { what: `creating a pass over ${stream}`, budgetMs: PASS_CREATE_BUDGET_MS });
  const out: JsMsg[] = [];
  try {
    if ((await consumer.info(true)).num_pending === 0) return { messages: out, complete: true };
    // Every message of the pass's starting set is at or before this sequence.
    const last = (await topology.jsm.streams.info(stream)).state.last_seq;
    const messages = await consumer.consume({ max_messages: 1_000 });
    for await (const m of messages) {
      if (m.seq > last) return { messages: out, complete: false };
      out.push(m);
      if (m.info.pending === 0) break;
    }
    return { messages: out, complete: true };
  } finally {
    await consumer.delete().catch(() => {});
  }
}

/** `readRecovery`'s states only. */
export async function readRecoveryStates(
  assets: readonly HostAsset[],
  topology: Topology,
  options: RecoveryOptions = {},
): Promise<Map<string, { state: AssetState; source: RecoverySource }>> {
  return (await readRecovery(assets, topology, options)).states;
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
  options: RecoveryOptions = {},
): Promise<RecoverySummary> {
  return applyRecovery(host, assets, await readRecoveryStates(assets, topology, options));
}
