/**
 * PostgreSQL restarts under the service (issue 8): mid-burst, the PostgreSQL server the test started is stopped
 * (fast shutdown) and kept down for 4 s, then later shut down immediately (as a crash) and kept down for 3 s; both
 * times it comes back on the same port and data. Projector batches fail meanwhile and are redelivered by JetStream.
 * Afterwards the invariants of `invariants.ts` hold, and `/readyz` answered 503 while the database was down.
 */
import { it } from "vitest";
import { sleep } from "../support/ports.ts";
import { faultSuite, outage } from "./fault-run.ts";
import { HOOK_PATHS } from "./harness.ts";

// Crash-safe settings: an immediate shutdown must not lose what PostgreSQL acknowledged as committed.
const suite = faultSuite("pg", { postgres: { durable: true } });

it("survives PostgreSQL being stopped and crashed mid-burst", async () => {
  await suite.run({
    name: "postgres-restart",
    hookPaths: [HOOK_PATHS.ok, HOOK_PATHS.status503],
    inject: async (ctx) => {
      const restart = () => suite.pg.start();
      const first = await outage(ctx, "PostgreSQL stopped", () => suite.pg.stop(), 4_000, restart);
      await sleep(3_000);
      return [first, await outage(ctx, "PostgreSQL crashed", () => suite.pg.kill(), 3_000, restart)];
    },
  });
}, 400_000);
