import type { MachineView } from "../actors/index.ts";
import type { Catalog } from "../catalog/index.ts";
import type { Clock } from "../clock.ts";
import type { Config } from "../config.ts";
import type { EpochMs, Receipt } from "../methodology/index.ts";
import type {
  AlertRecord,
  AuditPageQuery,
  CalibrationRow,
  HistoryQuery,
  MinuteHistoryRow,
  OnchainCommitRecord,
  RawHistoryRow,
  SnapshotRow,
  StatsRow,
  StoredReceipt,
} from "../store/index.ts";

/** One asset's latest published snapshot as the API reads it (the store row plus what the cards need). */
export interface SnapshotView extends SnapshotRow {
  /** SOL per LST share of the latest sample (LSTs only), wire decimal. */
  readonly sol_per_lst: string | null;
  /** The latest sample's oracle entries: feed -> {price, conf, publish_time (epoch ms)}; wire decimals. */
  readonly oracle: Readonly<Record<string, { readonly price: string; readonly conf: string; readonly publish_time: EpochMs }>> | null;
  /** Circulating supply scaled by decimals, wire decimal; null until first observed. */
  readonly circulating_supply: string | null;
}

/** Trailing-24 h figures of one asset from its 1-minute rollups (methodology section 7). */
export interface Window24h {
  /** 24 hourly averages of d_smooth, oldest first, rounded to 8 decimals; null for an hour without rows. */
  readonly series: readonly (number | null)[];
  /** max(max_discount) - min(min_discount), wire decimal; null when there are no rows. */
  readonly jitter: string | null;
  /** Largest |discount| in either direction, wire decimal; null when there are no rows. */
  readonly worst: string | null;
}

/** Counters behind /v1/stats (addendum A), except what the HTTP layer knows itself (ws_clients). */
export interface StatsCounts {
  readonly alerts_24h: number;
  readonly transitions_by_state_24h: Readonly<Record<string, number>>;
  readonly last_sample_at: EpochMs | null;
  /** As the store computes it from the delivery attempts of the trailing 24 h. */
  readonly delivery: StatsRow["delivery"];
}

/** Distribution of one asset's |discount| over the trailing 7 days of 1-minute rows (addendum A calibration). */
export type CalibrationFigures = CalibrationRow;

/** One row of the audit ledger (addendum A). */
export interface AuditRow {
  readonly id: string;
  readonly asset: string;
  readonly from_state: string;
  readonly to_state: string;
  readonly detected_at: EpochMs;
  readonly methodology_version: string;
  readonly receipt_sha256: string;
  readonly commit_status: string;
  readonly monitoring_only: boolean;
}

export type AuditQuery = AuditPageQuery;

/** A machine inspection: the view, an asset no engine runs, or no engine answered. */
export type MachineLookup =
  | { readonly kind: "ok"; readonly view: MachineView }
  | { readonly kind: "unknown" }
  | { readonly kind: "unavailable"; readonly reason: string };

export interface Readiness {
  readonly database: boolean;
  readonly nats: boolean;
  readonly engine: boolean;
  /** Age of the newest asset snapshot, whole seconds; null when there is none. */
  readonly snapshot_age_secs: number | null;
  /** Why a failing check failed, when more is known than "down" (a full disk, a server that did not answer in time). */
  readonly reasons?: { readonly database?: string; readonly nats?: string; readonly engine?: string };
  /** The engine cannot keep up and is dropping samples: why (not ready while set). */
  readonly overloaded?: string;
}

/**
 * Everything the HTTP routes read. The service builds it from the store, NATS and the engine; tests build it over an
 * in-memory store. Routes never reach the store or NATS directly.
 */
export interface ReadModel {
  readonly catalog: Catalog;
  readonly clock: Clock;
  readonly config: Config;
  /** Latest snapshot per mint. */
  snapshots(): Promise<ReadonlyMap<string, SnapshotView>>;
  /** The snapshots if a fresh copy is at hand (a cache), for answering without waiting; else undefined. */
  peekSnapshots?(): ReadonlyMap<string, SnapshotView> | undefined;
  /** The latest alert ids if a fresh copy is at hand; else undefined. */
  peekLatestAlertIds?(): ReadonlyMap<string, string> | undefined;
  /** Trailing-24 h windows per mint, ending at `now` (all mints with rows). */
  windows24h(now: EpochMs): Promise<ReadonlyMap<string, Window24h>>;
  history(mint: string, q: HistoryQuery): Promise<RawHistoryRow[] | MinuteHistoryRow[]>;
  alerts(q: { since?: EpochMs; mint?: string; limit: number; offset: number }): Promise<AlertRecord[]>;
  alertById(id: string): Promise<AlertRecord | undefined>;
  receiptById(id: string): Promise<StoredReceipt | undefined>;
  /** The newest transition per mint (for the peg feed's receipt_url). */
  latestAlertIds(): Promise<ReadonlyMap<string, string>>;
  /** An alert id JetStream holds but the store has not projected yet (the 202 answer). */
  pendingAlert(id: string): Promise<boolean>;
  /** An alert id whose receipt write was dead-lettered (the 410 answer). */
  deadLettered(id: string): Promise<boolean>;
  stats(now: EpochMs): Promise<StatsCounts>;
  calibration(now: EpochMs): Promise<readonly CalibrationFigures[]>;
  audit(q: AuditQuery): Promise<AuditRow[]>;
  readiness(): Promise<Readiness>;
  /** The live band-machine actor of one asset, asked of the engine that runs it. */
  machine(mint: string): Promise<MachineLookup>;
  /** The on-chain commit of an anchored receipt (`/v1/audit/{id}/onchain`); absent or undefined: not anchored. */
  onchainCommit?(id: string): Promise<OnchainCommitRecord | undefined>;
  /** Receipt as a Receipt object (convenience over receiptById). */
  receipt(id: string): Promise<Receipt | undefined>;
}
