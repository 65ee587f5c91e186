/**
 * The tables of migration 0005 (anchors, anchor_budget, anchor_keys), declared here, next to the only code that
 * touches them (anchors.ts, anchor-keys.ts), and the anchor row as the repositories return it.
 */
import type { ColumnType, Kysely, Selectable } from "kysely";
import type { EpochMs } from "../methodology/index.ts";
import { toEnum, toInt, toIntOrNull, toMs, toMsOrNull } from "./normalise.ts";
import type { Executor, NullableTimestamptz, Timestamptz } from "./schema.ts";

/** Life of one anchor row. `over_budget` rows exist only to remember that the budget refused the alert. */
export const ANCHOR_ROW_STATUSES = [
  "reserved",
  "sent",
  "committed",
  "retry_exhausted",
  "wallet_drained",
  "persistence_failed",
  "over_budget",
] as const;
export type AnchorRowStatus = (typeof ANCHOR_ROW_STATUSES)[number];

/** The failures that end an anchor for good (they are also the receipt's `commit_status`). */
export type AnchorFailure = "retry_exhausted" | "wallet_drained" | "persistence_failed";

export interface AnchorsTable {
  alert_id: string;
  status: string;
  budget_day: string | null;
  attempts: ColumnType<number, number | undefined, number>;
  memo: string;
  signer: string | null;
  tx_sig: string | null;
  wire_tx: string | null;
  last_valid_block_height: ColumnType<string | number | bigint | null, string | null, string | null>;
  slot: ColumnType<string | number | bigint | null, string | null, string | null>;
  block_time: NullableTimestamptz;
  error: string | null;
  lease_owner: string | null;
  lease_until: NullableTimestamptz;
  created_at: Timestamptz;
  updated_at: Timestamptz;
}

interface AnchorBudgetTable {
  day: string;
  used: number;
}

interface AnchorKeysTable {
  address: string;
  seed_hex: string;
  created_at: Timestamptz;
}

type AnchorTables = { anchors: AnchorsTable; anchor_budget: AnchorBudgetTable; anchor_keys: AnchorKeysTable };
type AnchorDb = Kysely<Executor extends Kysely<infer D> ? D & AnchorTables : never>;

export const tables = (db: Executor): AnchorDb => db.withTables<AnchorTables>() as unknown as AnchorDb;

/** One anchor row. Instants are epoch ms; `last_valid_block_height` and `slot` are safe integers. */
export interface AnchorRecord {
  readonly alert_id: string;
  readonly status: AnchorRowStatus;
  /** UTC day (`YYYY-MM-DD`) whose budget paid for this alert; null when refused. */
  readonly budget_day: string | null;
  /** Transactions signed so far. */
  readonly attempts: number;
  readonly memo: string;
  readonly signer: string | null;
  /** Signature of the transaction in flight (`sent`) or landed (`committed`). */
  readonly tx_sig: string | null;
  /** Base64 wire transaction in flight, so it can be re-sent unchanged after a restart. */
  readonly wire_tx: string | null;
  readonly last_valid_block_height: number | null;
  readonly slot: number | null;
  readonly block_time: EpochMs | null;
  readonly error: string | null;
  /** The worker holding the alert, until `lease_until`. */
  readonly lease_owner: string | null;
  readonly lease_until: EpochMs | null;
  readonly updated_at: EpochMs;
}

export function anchorFromRow(r: Selectable<AnchorsTable>): AnchorRecord {
  return {
    alert_id: r.alert_id,
    status: toEnum(r.status, ANCHOR_ROW_STATUSES, "anchors.status"),
    budget_day: r.budget_day,
    attempts: toInt(r.attempts, "anchors.attempts"),
    memo: r.memo,
    signer: r.signer,
    tx_sig: r.tx_sig,
    wire_tx: r.wire_tx,
    last_valid_block_height: toIntOrNull(r.last_valid_block_height, "anchors.last_valid_block_height"),
    slot: toIntOrNull(r.slot, "anchors.slot"),
    block_time: toMsOrNull(r.block_time, "anchors.block_time"),
    error: r.error,
    lease_owner: r.lease_owner,
    lease_until: toMsOrNull(r.lease_until, "anchors.lease_until"),
    updated_at: toMs(r.updated_at, "anchors.updated_at"),
  };
}
