import type { Catalog } from "../../catalog/index.ts";
import type { Clock } from "../../clock.ts";
import type { Config } from "../../config.ts";
import { openKeyRing, type KeyRing } from "../../delivery/index.ts";
import type { SecretBox } from "../../secret-box.ts";
import { openStore, retentionFromDays, type Store } from "../../store/index.ts";
import type { LogFn } from "../../streams/jetstream/index.ts";
import { openNats, type NatsLink } from "./nats.ts";
import type { UndoStack } from "./undo.ts";

/** The store side of the start: the store, the catalog's rows being upserted, the webhook signing key ring. */
export interface StoreSide {
  readonly store: Store;
  /** The projected rows reference the catalog's rows, so the projectors wait for this; the API does not. */
  readonly assetsUpserted: Promise<number>;
  readonly keyRing: KeyRing;
}

/**
 * Opens and migrates the store, starts upserting the catalog's rows and opens the webhook signing key ring: generated
 * and persisted (sealed) on first start, the same kid on every later one. On failure the store is closed again.
 */
async function openStoreSide(config: Config, catalog: Catalog, secrets: SecretBox, clock: Clock): Promise<StoreSide> {
  const where = config.database.kind === "postgres" ? { kind: "postgres" as const, url: config.database.url } : { kind: "pglite" as const, dataDir: config.database.dataDir };
  const store = await openStore(where, clock, retentionFromDays(config.history));
  const assetsUpserted = store.upsertAssets(catalog.all);
  assetsUpserted.catch(() => {}); // awaited by the caller before the projectors start; a failure there fails the start
  try {
    return { store, assetsUpserted, keyRing: await openKeyRing(store.db, clock.now(), secrets) };
  } catch (e) {
    await assetsUpserted.catch(() => {});
    await store.close().catch(() => {});
    throw e;
  }
}

/** The store and NATS while they open side by side. */
export interface Foundations {
  readonly nats: Promise<NatsLink>;
  /** The opened store side; from then on `undo` closes the store. */
  store(): Promise<StoreSide>;
  /** For a start that fails while either is still opening: closes what opens after all (NATS's parts are in `undo`). */
  abandon(): Promise<void>;
}

/**
 * The store (open, migrate, the catalog's rows, the signing key) and NATS (server, connection, topology) do not depend
 * on each other: they open side by side, their work done by PostgreSQL or PGlite and nats-server.
 */
export function openFoundations(config: Config, catalog: Catalog, secrets: SecretBox, clock: Clock, log: LogFn, undo: UndoStack): Foundations {
  const nats = openNats(config, log, undo);
  nats.catch(() => {}); // awaited by the caller
  const opening = openStoreSide(config, catalog, secrets, clock);
  opening.catch(() => {}); // awaited by the caller
  let owned = false;
  return {
    nats,
    store: async () => {
      const side = await opening;
      undo.push(() => side.store.close());
      owned = true;
      return side;
    },
    abandon: async () => {
      await nats.catch(() => {});
      if (!owned) await (await opening.catch(() => null))?.store.close().catch(() => {});
    },
  };
}

/** The asset's latest receipt in the store (recovery's fallback when JetStream has none), or null. */
export function latestStoredReceipt(store: Store) {
  return async (mint: string) => {
    const [latest] = await store.alerts({ mint, limit: 1, offset: 0 });
    if (latest === undefined) return null;
    const r = await store.receiptById(latest.id);
    return r === undefined ? null : r.receipt;
  };
}
