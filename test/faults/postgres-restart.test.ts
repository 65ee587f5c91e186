/**
 * PostgreSQL restarts under the service (issue 8): mid-burst, the PostgreSQL server the test started is stopped
 * (fast shutdown) and kept down for 4 s, then later shut down immediately (as a crash) and kept down for 3 s; both
 * times it comes back on the same port and data. Projector batches fail meanwhile and are redelivered by JetStream.
 * Afterwards the invariants of `invariants.ts` hold, and `/readyz` answered 503 while the database was down.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, it } from "vitest";
import { startReceiver, type Receiver } from "../delivery/receiver.ts";
import { startNats, type TestNats } from "../support/nats.ts";
import { startPostgres, type TestPostgres } from "../support/postgres.ts";
import { freePort, sleep } from "../support/ports.ts";
import { outage, runFaultTest } from "./fault-run.ts";
import { HOOK_PATHS } from "./harness.ts";

const dir = mkdtempSync(join(tmpdir(), "peg-faults-pg-"));
let nats: TestNats;
let pg: TestPostgres;
let rx: Receiver;

beforeAll(async () => {
  nats = await startNats();
  // Crash-safe settings: an immediate shutdown must not lose what PostgreSQL acknowledged as committed.
  pg = await startPostgres({ durable: true });
  rx = await startReceiver();
});
afterAll(async () => {
  await rx?.close();
  await nats?.dispose();
  await pg?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

it("survives PostgreSQL being stopped and crashed mid-burst", async () => {
  const dataDir = join(dir, "data");
  mkdirSync(dataDir);
  await runFaultTest({
    name: "postgres-restart",
    store: { kind: "postgres", url: await pg.createDatabase() },
    natsUrl: nats.url,
    dataDir,
    port: await freePort(),
    speed: 40,
    rx,
    hookPaths: [HOOK_PATHS.ok, HOOK_PATHS.status503],
    inject: async (ctx) => {
      const restart = () => pg.start();
      const first = await outage(ctx, "PostgreSQL stopped", () => pg.stop(), 4_000, restart);
      await sleep(3_000);
      return [first, await outage(ctx, "PostgreSQL crashed", () => pg.kill(), 3_000, restart)];
    },
  });
}, 400_000);
