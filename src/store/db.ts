/**
 * Opening the store: one code path for PostgreSQL (node-postgres pool) and PGlite (embedded, on disk or in memory).
 * Both speak the same SQL through Kysely; the drivers' differences in value types (int8 as string or number) are
 * absorbed by the repositories (normalise.ts). Migrations run at open.
 */
import { Kysely, PostgresDialect, sql, type Dialect } from "kysely";
import { statfsSync } from "node:fs";
import pg from "pg";
import type { Clock } from "../clock.ts";
import type { CatalogAsset } from "../catalog/index.ts";
import type { EpochMs, Receipt } from "../methodology/index.ts";
import {
  alertById,
  alerts,
  countAlertsSince,
  insertTransition,
  markDispatched,
  receiptById,
  type AlertRecord,
  type AlertsQuery,
  type StoredReceipt,
  type TransitionMeta,
} from "./alerts.ts";
import { latestSnapshots, newestSnapshotAt, upsertAssets, upsertSnapshot, upsertSnapshots, type SnapshotRow } from "./assets.ts";
import { migrateToLatest } from "./migrate.ts";
import { DEFAULT_RETENTION, applyRetention, type RetentionResult, type RetentionWindows } from "./retention.ts";
import {
  history,
  insertSamples,
  lastSampleAt,
  type HistoryQuery,
  type InsertSamplesResult,
  type MinuteHistoryRow,
  type RawHistoryRow,
  type SampleRow,
} from "./samples.ts";
import type { Database, Executor } from "./schema.ts";

/**
 * Where the data lives. `pglite` keeps it in `dataDir` (created if missing; owner-only, see pglite-fs.ts);
 * `pglite-memory` loses it on close.
 */
export type StoreConfig =
  | { readonly kind: "postgres"; readonly url: string; /** Pool size, default 10. */ readonly max?: number }
  | { readonly kind: "pglite"; readonly dataDir: string }
  | { readonly kind: "pglite-memory" };

export type StoreKind = StoreConfig["kind"];

/**
 * The store: the Kysely handle (for transactions spanning repositories: pass `trx` to the repository functions) and
 * every repository bound to it. Instants are epoch ms; decimals are exact wire strings.
 */
export interface Store {
  readonly db: Executor;
  readonly kind: StoreKind;
  /** How far back raw samples and 1-minute rollups are kept (default DEFAULT_RETENTION). */
  readonly retention: RetentionWindows;
  /** Applies pending migrations (already done by openStore); returns the names applied. */
  migrate(): Promise<string[]>;
  /** Closes the pool or the embedded database. Idempotent. */
  close(): Promise<void>;
  /**
   * Whether the embedded database has room to write: at least `MIN_FREE_BYTES` (one 16 MiB WAL segment) free in its
   * data directory. A full disk fails writes that extend a file while reads and in-place updates still succeed, so a
   * read probe cannot see it. Always true for PostgreSQL (its server owns its disk) and in-memory PGlite.
   */
  hasRoom(): boolean;
  /** Upserts catalog assets, stamping changed rows with the clock's now. */
  upsertAssets(assets: readonly CatalogAsset[]): Promise<number>;
  upsertSnapshot(row: SnapshotRow): Promise<boolean>;
  /** `upsertSnapshot` for many assets in one statement; returns how many were applied. */
  upsertSnapshots(rows: readonly SnapshotRow[]): Promise<number>;
  latestSnapshots(): Promise<SnapshotRow[]>;
  /** The newest snapshot's `updated_at` (null: none), without reading every snapshot. */
  newestSnapshotAt(): Promise<EpochMs | null>;
  insertTransition(receipt: Receipt, meta: TransitionMeta): Promise<boolean>;
  /** Stamps `dispatched_at` (default: the clock's now) once. */
  markDispatched(id: string, at?: EpochMs): Promise<boolean>;
  alerts(q: AlertsQuery): Promise<AlertRecord[]>;
  /** Of `mints`, those with at least one stored alert (one query; recovery asks it for every asset at start). */
  mintsWithAlerts(mints: readonly string[]): Promise<Set<string>>;
  alertById(id: string): Promise<AlertRecord | undefined>;
  receiptById(id: string): Promise<StoredReceipt | undefined>;
  countAlertsSince(ts: EpochMs): Promise<number>;
  /** Stores a sample batch, refusing rows past raw retention at the clock's now (see samples.ts). */
  insertSamples(rows: readonly SampleRow[]): Promise<InsertSamplesResult>;
  history(mint: string, q: HistoryQuery & { bucket: "raw" }): Promise<RawHistoryRow[]>;
  history(mint: string, q: HistoryQuery & { bucket: "1m" }): Promise<MinuteHistoryRow[]>;
  history(mint: string, q: HistoryQuery): Promise<RawHistoryRow[] | MinuteHistoryRow[]>;
  lastSampleAt(mint?: string): Promise<EpochMs | null>;
  /** Packs closed minutes and drops the history partitions past `retention` at `now` (default: the clock's now). */
  applyRetention(now?: EpochMs): Promise<RetentionResult>;
}

async function dialectFor(config: StoreConfig): Promise<Dialect> {
  switch (config.kind) {
    case "postgres": {
      const pool = new pg.Pool({ connectionString: config.url, max: config.max ?? 10 });
      // A connection the server closes (a PostgreSQL restart or failover) is reported as an 'error' event on its
      // client, also re-emitted on the pool while the client is idle there; without listeners either event kills
      // the process. The broken client is discarded (by the pool, when idle or when released), queries on it fail
      // and are retried by their callers, and the next query opens a new connection.
      pool.on("error", () => {});
      pool.on("connect", (client) => client.on("error", () => {}));
      return new PostgresDialect({ pool });
    }
    // PGlite (its WebAssembly build and the dialect) is loaded only when used: a start on PostgreSQL never pays for it.
    case "pglite": {
      const [{ PGliteDialect }, { openPgliteDir }] = await Promise.all([import("kysely-pglite-dialect"), import("./pglite-fs.ts")]);
      // Owner-only (0700 / 0600), WAL included: PGlite's own modes would let any local user read or rewrite receipts.
      return new PGliteDialect(openPgliteDir(config.dataDir));
    }
    case "pglite-memory": {
      const [{ PGliteDialect }, { PGlite }] = await Promise.all([import("kysely-pglite-dialect"), import("@electric-sql/pglite")]);
      return new PGliteDialect(new PGlite());
    }
  }
}

/** Free bytes below which an embedded store's directory counts as full (`Store.hasRoom`): one WAL segment. */
export const MIN_FREE_BYTES = 16 * 2 ** 20;

/**
 * Binds every repository to `db`. Exposed for tests and tools that bring their own Kysely instance. `dataDir`: the
 * embedded database's directory, whose free space `hasRoom` checks.
 */
export function createStore(
  db: Kysely<Database>,
  kind: StoreKind,
  clock: Clock,
  dataDir?: string,
  retention: RetentionWindows = DEFAULT_RETENTION,
): Store {
  let closing: Promise<void> | null = null;
  const hasRoom = (): boolean => {
    if (dataDir === undefined) return true;
    try {
      const fs = statfsSync(dataDir);
      return fs.bavail * fs.bsize >= MIN_FREE_BYTES;
    } catch {
      return false;
    }
  };
  return {
    db,
    kind,
    retention,
    migrate: () => migrateToLatest(db),
    close: () => (closing ??= db.destroy()),
    hasRoom,
    upsertAssets: (assets) => upsertAssets(db, assets, clock.now()),
    upsertSnapshot: (row) => upsertSnapshot(db, row),
    upsertSnapshots: (rows) => upsertSnapshots(db, rows),
    latestSnapshots: () => latestSnapshots(db),
    newestSnapshotAt: () => newestSnapshotAt(db),
    insertTransition: (receipt, meta) => insertTransition(db, receipt, meta),
    markDispatched: (id, at) => markDispatched(db, id, at ?? clock.now()),
    alerts: (q) => alerts(db, q),
    mintsWithAlerts: async (mints) => {
      if (mints.length === 0) return new Set();
      // One array parameter, however many assets.
      const rows = await db.selectFrom("alerts").select("mint").distinct().where(sql<boolean>`mint = any(${[...mints]}::text[])`).execute();
      return new Set(rows.map((r) => r.mint));
    },
    alertById: (id) => alertById(db, id),
    receiptById: (id) => receiptById(db, id),
    countAlertsSince: (ts) => countAlertsSince(db, ts),
    insertSamples: (rows) => insertSamples(db, rows, { now: clock.now(), rawRetentionMs: retention.rawMs }),
    history: ((mint: string, q: HistoryQuery) => history(db, mint, q)) as Store["history"],
    lastSampleAt: (mint) => lastSampleAt(db, mint),
    applyRetention: (now) => applyRetention(db, now ?? clock.now(), retention),
  };
}

/** Opens the database, applies pending migrations and returns the bound store. On failure nothing is left open. */
export async function openStore(config: StoreConfig, clock: Clock, retention: RetentionWindows = DEFAULT_RETENTION): Promise<Store> {
  const dataDir = config.kind === "pglite" ? config.dataDir : undefined;
  const store = createStore(new Kysely<Database>({ dialect: await dialectFor(config) }), config.kind, clock, dataDir, retention);
  try {
    await store.migrate();
  } catch (e) {
    await store.close().catch(() => {});
    throw e;
  }
  return store;
}
