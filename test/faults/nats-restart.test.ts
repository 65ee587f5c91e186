/**
 * nats-server restarts under the service (issue 8): mid-burst, the test's nats-server is killed (SIGKILL) and kept
 * down for 4 s, then later stopped gracefully (SIGTERM) and kept down for 3 s; both times it comes back on the same
 * port and store. The service (PGlite) reconnects on its own; transitions decided meanwhile are published once it
 * is back. Afterwards the invariants of `invariants.ts` hold, and `/readyz` answered 503 while NATS was down.
 */
import { it } from "vitest";
import { sleep } from "../support/ports.ts";
import { faultSuite, outage } from "./fault-run.ts";
import { HOOK_PATHS } from "./harness.ts";

const suite = faultSuite("nats");

it("survives nats-server being killed and restarted mid-burst", async () => {
  await suite.run({
    name: "nats-restart",
    hookPaths: [HOOK_PATHS.ok, HOOK_PATHS.status500],
    inject: async (ctx) => {
      const restart = () => suite.nats.start();
      const first = await outage(ctx, "nats-server killed", () => suite.nats.kill(), 4_000, restart);
      await sleep(3_000);
      return [first, await outage(ctx, "nats-server stopped", () => suite.nats.stop(), 3_000, restart)];
    },
  });
}, 400_000);
