/**
 * Repeated kill -9 of the service during transition bursts, with webhooks (issue 8). `crash.test.ts` checks the
 * acknowledged history against the offline replay after kills on both stores; this test kills the service (on
 * PostgreSQL) three times at random points of the burst while webhook deliveries are being retried, restarts it
 * each time, and then checks every invariant of `invariants.ts`: while the process is gone `/readyz` does not answer
 * (the outage as a client sees it), and the last process's memory is compared with the first one's.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startReceiver, type Receiver } from "../delivery/receiver.ts";
import { startNats, type TestNats } from "../support/nats.ts";
import { startPostgres, type TestPostgres } from "../support/postgres.ts";
import { freePort, sleep } from "../support/ports.ts";
import { runFaultTest, type Outage } from "./fault-run.ts";
import { HOOK_PATHS } from "./harness.ts";

const KILLS = 3;
const dir = mkdtempSync(join(tmpdir(), "peg-faults-kill-"));
let nats: TestNats;
let pg: TestPostgres;
let rx: Receiver;

beforeAll(async () => {
  nats = await startNats();
  pg = await startPostgres();
  rx = await startReceiver();
});
afterAll(async () => {
  await rx?.close();
  await nats?.dispose();
  await pg?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

it("kill -9 three times mid-burst: nothing lost or repeated, every event delivered with its original id", async () => {
  const dataDir = join(dir, "data");
  mkdirSync(dataDir);
  await runFaultTest({
    name: "kill-burst",
    store: { kind: "postgres", url: await pg.createDatabase() },
    natsUrl: nats.url,
    dataDir,
    port: await freePort(),
    speed: 40,
    rx,
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
