/**
 * The service's ReadModel: every read goes to the store (PostgreSQL or PGlite) through its repositories and the
 * read-model queries (store/readmodel.ts); what the store cannot know comes in as functions (`pendingAlert` from
 * JetStream, `readiness` from the service's health checks).
 */
import type { Catalog } from "../catalog/index.ts";
import type { Clock } from "../clock.ts";
import type { Config } from "../config.ts";
import {
  auditPage,
  calibrationFigures,
  latestAlertIds,
  onchainCommit,
  statsCounts,
  windows24h,
  type Store,
} from "../store/index.ts";
import type { MachineLookup, ReadModel, Readiness, SnapshotView } from "./read-model.ts";

export interface StoreReadModelDeps {
  readonly store: Store;
  readonly catalog: Catalog;
  readonly clock: Clock;
  readonly config: Config;
  /**
   * True for an alert id the event stream holds but the store has not projected yet (the audit lookup's 202).
   * Default: always false (the store is the only source).
   */
  readonly pendingAlert?: (id: string) => Promise<boolean>;
  readonly readiness: () => Promise<Readiness>;
  /** Asks the engine for one actor (over NATS in the service). Default: no engine. */
  readonly machine?: (mint: string) => Promise<MachineLookup>;
}

export function createStoreReadModel(deps: StoreReadModelDeps): ReadModel {
  const { store, catalog, clock, config } = deps;
  const db = store.db;
  const pendingAlert = deps.pendingAlert ?? (() => Promise.resolve(false));
  return {
    catalog,
    clock,
    config,
    snapshots: async () => {
      const rows = await store.latestSnapshots();
      return new Map<string, SnapshotView>(rows.map((r) => [r.mint, r]));
    },
    windows24h: (now) => windows24h(db, now),
    history: (mint, q) => store.history(mint, q),
    alerts: (q) => store.alerts(q),
    alertById: (id) => store.alertById(id),
    receiptById: (id) => store.receiptById(id),
    onchainCommit: (id) => onchainCommit(db, id),
    latestAlertIds: () => latestAlertIds(db),
    pendingAlert: (id) => pendingAlert(id),
    // Receipt writes share the alert's transaction and are retried by the projector, never dead-lettered: there is
    // no dead-letter table yet, so no id answers 410.
    deadLettered: () => Promise.resolve(false),
    stats: (now) => statsCounts(db, now),
    calibration: (now) => calibrationFigures(db, now),
    audit: (q) => auditPage(db, q),
    readiness: () => deps.readiness(),
    machine: (mint) => (deps.machine ?? (() => Promise.resolve<MachineLookup>({ kind: "unavailable", reason: "no engine is connected" })))(mint),
    receipt: async (id) => (await store.receiptById(id))?.receipt,
  };
}
