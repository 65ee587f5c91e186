/** Audit receipts (methodology section 8, addendum A). */
import { z } from "zod";
import {
  Band,
  CatalogEntry,
  CommitStatus,
  Confidence,
  Count,
  Decimal,
  EvidenceStatus,
  GateName,
  Mint,
  PegState,
  Sha256Hex,
  Thresholds,
  Timestamp,
  Uuid,
  component,
} from "./common.ts";
import { cursorText } from "./query.ts";

export const OracleEntryWire = component(
  "OracleEntryWire",
  z.strictObject({ price: Decimal, conf: Decimal, publish_time: Timestamp }),
  "One price-oracle entry a decision used.",
);

export const InputsFrozen = component(
  "InputsFrozen",
  z.strictObject({
    asset: z.string(),
    class: z.string(),
    now: Timestamp,
    alpha: Decimal,
    intrinsic_usd: Decimal,
    market_usd: Decimal,
    intrinsic_sol: Decimal.nullable(),
    market_sol: Decimal.nullable(),
    cr: Decimal.nullable(),
    ewma_prev: Decimal.nullable(),
    previous_band: Band,
    previous_state: PegState.nullable(),
    candidate_state: Band.nullable(),
    candidate_since: Timestamp.nullable(),
    thresholds: Thresholds,
    threshold_kind: z.enum(["bps", "cr"]),
    oracle: z.record(z.string(), OracleEntryWire),
    confirm_up_secs: Count,
    decay_down_secs: Count,
    deadband_pct: Count,
    cr_deadband_pct: Count,
    intrinsic_stale: z.boolean().nullable(),
    trigger: z.enum(["sample", "dwell_timer"]),
  }),
  "Everything the decision used; optional values are null, never omitted.",
);

export const ComputedWire = component(
  "Computed",
  z.strictObject({
    discount_raw: Decimal,
    discount_smooth: Decimal,
    band: Band,
    final_state: PegState,
    gate: GateName.nullable(),
    confidence: Confidence,
  }),
  "The verdict re-derivable from inputs_frozen.",
);

const receiptShape = {
  id: Uuid,
  asset: z.string(),
  mint: Mint,
  from_state: PegState,
  to_state: PegState,
  detected_at: Timestamp,
  discount: Decimal,
  discount_bps: z.int32(),
  methodology_version: z.string(),
  git_sha: z.string().meta({ description: "Commit hashed into the receipt; empty when unknown." }),
  receipt_sha256: Sha256Hex,
  inputs_frozen: InputsFrozen,
  computed: ComputedWire,
  state_reason: z.string().optional().meta({ description: "Advisory, outside the hash; omitted when null." }),
  evidence_status: EvidenceStatus,
  commit_status: CommitStatus,
  onchain_tx_sig: z.string().optional().meta({ description: "Memo transaction signature once anchored." }),
  replay_bundle_url: z.string().meta({ description: "Path of the replay bundle, relative to the service base address." }),
  monitoring_only: z.boolean(),
};

export const AuditReceipt = component("AuditReceipt", z.strictObject(receiptShape), "A persisted transition receipt.");

export const AuditPending = component(
  "AuditPending",
  z.strictObject({ id: Uuid, evidence_status: z.literal("pending") }),
  "The alert is known but its receipt is not persisted yet; retry after Retry-After seconds.",
);

export const AuditDetail = component(
  "AuditDetail",
  z.strictObject({
    ...receiptShape,
    catalog_entry: CatalogEntry,
    dwell: z.strictObject({
      candidate_since: Timestamp.nullable().meta({ description: "When the committed candidate was first seen; null for a gate change." }),
      committed_at: Timestamp.meta({ description: "The decision instant." }),
      dwell_secs: Count.nullable().meta({ description: "Whole seconds from candidate_since to committed_at." }),
    }),
    summary: z.string().meta({ description: "Human summary of the decision. Not stable; never parse it." }),
  }),
  "A receipt with the catalog entry it was decided under, its dwell timeline and a human summary.",
);

export const AuditIndexRow = component(
  "AuditIndexRow",
  z.strictObject({
    id: Uuid,
    asset: z.string(),
    from_state: PegState,
    to_state: PegState,
    detected_at: Timestamp,
    methodology_version: z.string(),
    receipt_sha256: Sha256Hex,
    commit_status: CommitStatus,
    monitoring_only: z.boolean(),
  }),
  "One row of the audit ledger.",
);

export const AuditIndex = component(
  "AuditIndex",
  z.strictObject({
    ok: z.boolean(),
    generated_at: Timestamp,
    count: Count,
    data: z.array(AuditIndexRow),
    next_before: cursorText.nullable().meta({ description: "Cursor for the next (older) page as `before`; null on the last page." }),
  }),
  "A page of the audit ledger, newest first.",
);

const NOT_ANCHORED = ["not_applicable", "not_committed_yet", "retry_exhausted", "wallet_drained", "persistence_failed"] as const;

export const OnchainNotAnchored = component(
  "OnchainNotAnchored",
  z.strictObject({
    error: z.enum(NOT_ANCHORED),
    commit_status: z.enum(NOT_ANCHORED),
    message: z.string(),
  }),
  "The receipt has no on-chain commit: `error` and `commit_status` say why.",
);

export const OnchainCommit = component(
  "OnchainCommit",
  z.strictObject({
    commit_status: z.literal("committed"),
    tx_sig: z.string(),
    slot: z.int().min(0),
    block_time: Timestamp,
    memo: z.string().meta({ description: "`pegoracle-v1|<methodology_version>|<alert_id>|<receipt_sha256>`." }),
    signer: z.string(),
  }),
  "The SPL Memo commit of an anchored receipt.",
);

export const ReplayBundle = component(
  "ReplayBundle",
  z.strictObject({
    schema_version: z.literal("1"),
    methodology_version: z.string(),
    git_sha: z.string(),
    catalog_entry: CatalogEntry,
    inputs_frozen: InputsFrozen,
    expected_computed: ComputedWire,
    expected_receipt_sha256: Sha256Hex,
    state_reason: z.string().nullable(),
  }),
  "Everything the offline verifier needs to recompute the hash and re-derive the verdict.",
);

export type AuditReceiptBody = z.output<typeof AuditReceipt>;
export type AuditDetailBody = z.output<typeof AuditDetail>;
export type AuditIndexRowBody = z.output<typeof AuditIndexRow>;
