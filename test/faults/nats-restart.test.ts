/**
 * nats-server restarts under the service (issue 8): mid-burst, the test's nats-server is killed (SIGKILL) and kept
 * down for 4 s, then later stopped gracefully (SIGTERM) and kept down for 3 s; both times it comes back on the same
 * port and store. The service (PGlite) reconnects on its own; transitions decided meanwhile are published once it
 * is back. Afterwards the invariants of `invariants.ts` hold, and `/readyz` answered 503 while NATS was down.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, it } from "vitest";
import { startReceiver, type Receiver } from "../delivery/receiver.ts";
import { startNats, type TestNats } from "../support/nats.ts";
import { freePort, sleep } from "../support/ports.ts";
import { outage, runFaultTest } from "./fault-run.ts";
import { HOOK_PATHS } from "./harness.ts";

const dir = mkdtempSync(join(tmpdir(), "peg-faults-nats-"));
let nats: TestNats;
let rx: Receiver;

beforeAll(async () => {
  nats = await startNats();
  rx = await startReceiver();
});
afterAll(async () => {
  await rx?.close();
  await nats?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

it("survives nats-server being killed and restarted mid-burst", async () => {
  const dataDir = join(dir, "data");
  mkdirSync(dataDir);
  await runFaultTest({
    name: "nats-restart",
    store: { kind: "pglite", dataDir: join(dataDir, "pg") },
    natsUrl: nats.url,
    dataDir,
    port: await freePort(),
    speed: 40,
    rx,
    hookPaths: [HOOK_PATHS.ok, HOOK_PATHS.status500],
    inject: async (ctx) => {
      const restart = () => nats.start();
      const first = await outage(ctx, "nats-server killed", () => nats.kill(), 4_000, restart);
      await sleep(3_000);
      return [first, await outage(ctx, "nats-server stopped", () => nats.stop(), 3_000, restart)];
    },
  });
}, 400_000);
