import type { Catalog } from "../../catalog/index.ts";
import {
  BANDS,
  CONFIDENCES,
  GATES,
  decimalToWire,
  parseDecimal,
  parseTimestamp,
  PEG_STATES,
  type PegState,
  type Receipt,
  type SampleWire,
} from "../../methodology/index.ts";
import type { OracleSnapshot, OracleSnapshots, SampleRow, SnapshotRow, Store } from "../../store/index.ts";
import type { SampleMessage } from "../jetstream/messages.ts";
import type { BatchMessage } from "../jetstream/consumer.ts";
import { decodeSampleBatch, isSampleBatch } from "../jetstream/sample-batch.ts";

const decoder = new TextDecoder();

/** A message the projector cannot use. It is counted and skipped (acked), never retried forever. */
export interface ProjectorStats {
  projected: number;
  duplicates: number;
  rejected: number;
  /** Sample rows refused because their minute is already past raw retention. */
  stale?: number;
}

function isState(v: unknown): v is PegState {
  return typeof v === "string" && (PEG_STATES as readonly string[]).includes(v);
}

/**
 * Projects `peg.transition.*` into alerts and receipts, idempotently by alert id (a redelivered batch inserts
 * nothing twice). A receipt that does not parse or names an unknown mint is rejected and counted: JetStream keeps
 * it, and the store never holds a half-understood row.
 */
export function transitionProjector(store: Store, catalog: Catalog, stats: ProjectorStats, onReject?: (why: string) => void) {
  return async (batch: readonly BatchMessage[]): Promise<void> => {
    for (const m of batch) {
      let receipt: Receipt;
      try {
        receipt = JSON.parse(decoder.decode(m.data)) as Receipt;
      } catch {
        stats.rejected++;
        onReject?.(`transition seq ${m.seq}: not JSON`);
        continue;
      }
      const asset = catalog.byMint(receipt.mint);
      if (asset === undefined || typeof receipt.alert_id !== "string") {
        stats.rejected++;
        onReject?.(`transition seq ${m.seq}: unknown mint or missing alert id`);
        continue;
      }
      const inserted = await store.insertTransition(receipt, {
        seq: m.seq,
        monitoringOnly: asset.monitoringOnly,
        calibration: asset.calibration,
      });
      if (inserted) stats.projected++;
      else stats.duplicates++;
    }
  };
}

/** Row identity of an evaluation within its millisecond: the dwell timer is evaluated before a same-instant sample. */
const TRIGGER_SEQ = { dwell_timer: 0, sample: 1 } as const;

function optionalTime(v: string | null): number | null {
  return v === null ? null : parseTimestamp(v);
}

/** An optional wire decimal of the message's sample (display only): absent or malformed reads as null. */
function optionalDecimal(v: unknown): string | null {
  const d = v === undefined || v === null ? null : parseDecimal(v);
  return d === null ? null : decimalToWire(d);
}

/**
 * The sample's oracle entries in snapshot form (publish_time as epoch ms), in the message's member order. Display
 * only: absent, or any entry malformed, reads as null ("unknown"), never as a partial set that could hide a feed.
 */
function oracleOf(oracle: SampleWire["oracle"] | null | undefined): OracleSnapshots | null {
  if (oracle === undefined || oracle === null || typeof oracle !== "object" || Array.isArray(oracle)) return null;
  const out: Record<string, OracleSnapshot> = {};
  for (const [name, e] of Object.entries(oracle)) {
    if (typeof e !== "object" || e === null) return null;
    const price = parseDecimal(e.price);
    const conf = parseDecimal(e.conf);
    const publish = parseTimestamp(e.publish_time);
    if (price === null || conf === null || publish === null) return null;
    out[name] = { price: decimalToWire(price), conf: decimalToWire(conf), publish_time: publish };
  }
  return out;
}

/**
 * `PEG_SAMPLES` messages handed to the sample projector at once: a message holds up to 1,000 samples (a batch of
 * `SampleRecorder`; one in a `v: 1` message of an earlier build).
 */
export const SAMPLE_MESSAGES_PER_BATCH = 32;
/** Rows per store statement. */
const ROWS_PER_INSERT = 2_048;
/** Snapshot versions: the stream sequence times this, plus the sample's index in its message. */
const VERSIONS_PER_MESSAGE = 1_024;

/** The version of the snapshot a sample writes: later in the stream, or later in its message, is newer. */
export function snapshotVersion(seq: number, index = 0): number {
  return seq * VERSIONS_PER_MESSAGE + index;
}

/** The samples of one `PEG_SAMPLES` message: a batch, or one `v: 1` `SampleMessage`. */
function samplesOf(m: BatchMessage): SampleMessage[] {
  return isSampleBatch(m.data) ? decodeSampleBatch(m.data) : [JSON.parse(decoder.decode(m.data)) as SampleMessage];
}

/**
 * Projects `PEG_SAMPLES` (batches on `peg.samples.*`, single samples on `peg.sample.*`) into raw sample rows
 * (idempotent by mint, instant and trigger; the rollups are recomputed from raw rows, so redelivery never
 * double-counts) and the latest snapshot per asset (versioned by stream sequence and place in the message, so an
 * older sample never overwrites a newer one). `supplyOf` gives the latest circulating supply of a mint (wire decimal;
 * the feed's `SupplyBook`), stamped on each snapshot; null (or no `supplyOf`) keeps the stored one.
 */
export function sampleProjector(
  store: Store,
  stats: ProjectorStats,
  onReject?: (why: string) => void,
  supplyOf?: (mint: string) => string | null,
) {
  return async (batch: readonly BatchMessage[]): Promise<void> => {
    const rows: SampleRow[] = [];
    const latest = new Map<string, SnapshotRow>();
    for (const m of batch) {
      let samples: SampleMessage[];
      try {
        samples = samplesOf(m);
      } catch (e) {
        stats.rejected++;
        onReject?.(`sample seq ${m.seq}: ${e instanceof SyntaxError ? "not JSON" : e instanceof Error ? e.message : String(e)}`);
        continue;
      }
      samples.forEach((s, i) => project(s, m.seq, i));
    }
    for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) {
      const chunk = rows.slice(i, i + ROWS_PER_INSERT);
      const r = await store.insertSamples(chunk);
      stats.projected += r.inserted;
      stats.duplicates += chunk.length - r.inserted - r.stale;
      stats.stale = (stats.stale ?? 0) + r.stale;
    }
    // One statement for the batch's assets, each row conditional on being newer than the stored one.
    if (latest.size > 0) await store.upsertSnapshots([...latest.values()]);

    function project(s: SampleMessage, seq: number, index: number): void {
      const ts = parseTimestamp(s.ts);
      const valid =
        ts !== null &&
        isState(s.state) &&
        typeof s.mint === "string" &&
        s.trigger in TRIGGER_SEQ &&
        BANDS.includes(s.band) &&
        (s.gate === null || GATES.includes(s.gate)) &&
        CONFIDENCES.includes(s.confidence);
      if (!valid) {
        stats.rejected++;
        onReject?.(`sample seq ${seq}${index > 0 ? ` #${index}` : ""}: malformed`);
        return;
      }
      rows.push({
        mint: s.mint,
        ts,
        seq: TRIGGER_SEQ[s.trigger],
        discount: s.discount,
        discount_raw: s.discount_raw,
        state: s.state,
        market_usd: s.market_usd,
        intrinsic_usd: s.intrinsic_usd,
      });
      latest.set(s.mint, {
        mint: s.mint,
        state: s.state,
        band: s.band,
        gate: s.gate,
        state_reason: s.state_reason,
        discount: s.discount,
        discount_raw: s.discount_raw,
        intrinsic_usd: s.intrinsic_usd,
        market_usd: s.market_usd,
        confidence: s.confidence,
        committed_since: optionalTime(s.committed_since ?? null),
        published_since: optionalTime(s.published_since ?? null),
        updated_at: ts,
        version: snapshotVersion(seq, index),
        sol_per_lst: optionalDecimal(s.sample?.intrinsic_sol),
        oracle: oracleOf(s.sample?.oracle),
        // Not carried by samples: a slow signal observed on its own cadence; null keeps the stored value.
        circulating_supply: supplyOf?.(s.mint) ?? null,
      });
    }
  };
}
