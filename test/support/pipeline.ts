/**
 * What a pipeline test runs against: its own nats-server (streams and buckets created) and PostgreSQL (a fresh
 * database, migrated, the shipped catalog's rows in), started side by side; `dispose()` stops both.
 */
import { connect, type NatsConnection } from "@nats-io/transport-node";
import type { Catalog } from "../../src/catalog/index.ts";
import { systemClock } from "../../src/clock.ts";
import { ensureTopology, type Topology } from "../../src/streams/jetstream/index.ts";
import { openStore, type Store } from "../../src/store/index.ts";
import { startNats, type TestNats } from "./nats.ts";
import { startPostgres, type TestPostgres } from "./postgres.ts";

export interface TestPipeline {
  readonly nats: TestNats;
  readonly pg: TestPostgres;
  readonly nc: NatsConnection;
  readonly topology: Topology;
  readonly store: Store;
  /** The database's URL (for another pool on it, e.g. the projector's thread). */
  readonly databaseUrl: string;
  dispose(): Promise<void>;
}

export async function startPipeline(catalog: Catalog, poolMax = 4): Promise<TestPipeline> {
  const [nats, pg] = await Promise.all([startNats(), startPostgres()]);
  const nc = await connect({ servers: nats.url, noAsyncTraces: true });
  const topology = await ensureTopology(nc);
  const databaseUrl = await pg.createDatabase();
  const store = await openStore({ kind: "postgres", url: databaseUrl, max: poolMax }, systemClock);
  await store.upsertAssets(catalog.active);
  return {
    nats,
    pg,
    nc,
    topology,
    store,
    databaseUrl,
    dispose: async () => {
      await store.close();
      await nc.close();
      await Promise.all([nats.dispose(), pg.dispose()]);
    },
  };
}
