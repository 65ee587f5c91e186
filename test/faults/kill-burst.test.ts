/**
 * Repeated kill -9 of the service during transition bursts, with webhooks (issue 8). `crash.test.ts` checks the
 * acknowledged history against the offline replay after kills on both stores; this test kills the service (on
 * PostgreSQL) three times at random points of the burst while webhook deliveries are being retried, restarts it
 * each time, and then checks every invariant of `invariants.ts`: while the process is gone `/readyz` does not answer
 * (the outage as a client sees it), and the last process's memory is compared with the first one's.
 */
import { expect, it } from "vitest";
import { sleep } from "../support/ports.ts";
import { faultSuite, type Outage } from "./fault-run.ts";
import { HOOK_PATHS } from "./harness.ts";

const KILLS = 3;
const suite = faultSuite("kill", { postgres: {} });

it("kill -9 three times mid-burst: nothing lost or repeated, every event delivered with its original id", async () => {
  await suite.run({
    name: "kill-burst",
    hookPaths: [HOOK_PATHS.ok, HOOK_PATHS.status500, HOOK_PATHS.tooMany],
    inject: async (ctx) => {
      const outages: Outage[] = [];
      for (let k = 0; k < KILLS; k++) {
        if (k > 0) await sleep(2_000 + Math.random() * 6_000);
        const from = Date.now();
        await ctx.service().kill();
        expect(ctx.service().proc.signalCode).toBe("SIGKILL");
        await ctx.restart();
        const to = Date.now();
        outages.push({ what: `kill -9 #${k + 1}`, from, to });
        await ctx.readyAgain(to);
      }
      return outages;
    },
  });
}, 500_000);
