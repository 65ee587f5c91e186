/**
 * The store: PostgreSQL or embedded PGlite through one Kysely code path. Repositories take the executor (`db` or a
 * `trx`) first; `openStore` binds them all. Route and stream code import from here, never from the files.
 */
export { createStore, openStore, type Store, type StoreConfig, type StoreKind } from "./db.ts";
export { MIGRATIONS, MigrationError, appliedMigrations, knownMigrations, migrateToLatest, migrationProvider } from "./migrate.ts";
export type { Database, Executor } from "./schema.ts";
export { StoreDataError, atomically } from "./normalise.ts";
export {
  latestSnapshots,
  oracleSnapshotsOf,
  snapshotFromStateEvent,
  upsertAssets,
  upsertSnapshot,
  type OracleSnapshot,
  type OracleSnapshots,
  type SnapshotRow,
} from "./assets.ts";
export {
  auditPage,
  calibrationFigures,
  latestAlertIds,
  statsCounts,
  windows24h,
  WINDOW_BUCKETS,
  type AuditEntry,
  type AuditPageQuery,
  type CalibrationRow,
  type StatsRow,
  type Window24hRow,
} from "./readmodel.ts";
export {
  COMMIT_STATUSES,
  alertById,
  alerts,
  countAlertsSince,
  initialCommitStatus,
  insertTransition,
  markDispatched,
  receiptById,
  type AlertRecord,
  type AlertsQuery,
  type CommitStatus,
  type StoredReceipt,
  type TransitionMeta,
} from "./alerts.ts";
export {
  history,
  insertSamples,
  lastSampleAt,
  sampleFromStateEvent,
  type HistoryQuery,
  type InsertSamplesResult,
  type MinuteHistoryRow,
  type RawHistoryRow,
  type SampleRow,
} from "./samples.ts";
export {
  RAW_RETENTION_MS,
  RETENTION_EVERY_MS,
  ROLLUP_RETENTION_MS,
  applyRetention,
  startRetention,
  type RetentionOptions,
  type RetentionResult,
  type RetentionTarget,
} from "./retention.ts";
