/**
 * Schema migrations: timestamped files in ./migrations, imported statically (no filesystem scanning, so the set is
 * fixed at build time) and applied in name order by Kysely's Migrator at every open. Kysely's lock table serialises
 * two processes opening the same database. Add `YYYY_MM_DD_NNNN_what.ts` and list it below; never edit or rename a
 * migration that has shipped.
 */
import type { Kysely } from "kysely";
import { Migrator, type Migration, type MigrationProvider } from "kysely";
import * as initial from "./migrations/2026_11_21_0001_initial.ts";
import * as readModels from "./migrations/2026_11_21_0002_read_models.ts";
import * as accounts from "./migrations/2026_11_21_0003_accounts.ts";
import * as dispatch from "./migrations/2026_11_21_0004_dispatch.ts";
import * as anchoring from "./migrations/2026_11_21_0005_anchoring.ts";
import * as incrementalRollups from "./migrations/2026_11_25_0006_incremental_rollups.ts";
import * as x402Payments from "./migrations/2026_11_25_0007_x402_payments.ts";
import * as compactSamples from "./migrations/2026_11_26_0009_compact_samples.ts";
import * as x402Answers from "./migrations/2026_11_26_0008_x402_answers.ts";
import * as sampleBlocks from "./migrations/2026_11_27_0010_sample_blocks.ts";

/** Any Kysely instance: migrations work below the app's table types (Kysely's Migrator takes `Kysely<any>`). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyKysely = Kysely<any>;

export const MIGRATIONS: Readonly<Record<string, Migration>> = {
  "2026_11_21_0001_initial": initial,
  "2026_11_21_0002_read_models": readModels,
  "2026_11_21_0003_accounts": accounts,
  "2026_11_21_0004_dispatch": dispatch,
  "2026_11_21_0005_anchoring": anchoring,
  "2026_11_25_0006_incremental_rollups": incrementalRollups,
  "2026_11_25_0007_x402_payments": x402Payments,
  "2026_11_26_0009_compact_samples": compactSamples,
  "2026_11_26_0008_x402_answers": x402Answers,
  "2026_11_27_0010_sample_blocks": sampleBlocks,
};

export const migrationProvider: MigrationProvider = {
  getMigrations: () => Promise.resolve({ ...MIGRATIONS }),
};

/** A migration failed; the database is left at the last migration that succeeded. Never retry blindly. */
export class MigrationError extends Error {
  readonly code = "migration_failed";
  readonly migration: string | null;
  constructor(migration: string | null, cause: unknown) {
    super(`migration ${migration ?? "(setup)"} failed: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = "MigrationError";
    this.migration = migration;
  }
}

/** Applies every pending migration. Returns the names applied by this call (empty when already up to date). */
export async function migrateToLatest(db: AnyKysely): Promise<string[]> {
  const migrator = new Migrator({ db, provider: migrationProvider });
  const { error, results } = await migrator.migrateToLatest();
  if (error !== undefined) {
    const failed = results?.find((r) => r.status === "Error")?.migrationName ?? null;
    throw new MigrationError(failed, error);
  }
  return (results ?? []).filter((r) => r.status === "Success").map((r) => r.migrationName);
}

/** Names of the migrations this build knows, in order. */
export function knownMigrations(): string[] {
  return Object.keys(MIGRATIONS).sort();
}

/** Names recorded as applied in the database (Kysely's `kysely_migration` table), in order. */
export async function appliedMigrations(db: AnyKysely): Promise<string[]> {
  const migrator = new Migrator({ db, provider: migrationProvider });
  const infos = await migrator.getMigrations();
  return infos.filter((m) => m.executedAt !== undefined).map((m) => m.name);
}
