/**
 * Webhook receivers that misbehave (issue 8): one USDC webhook per way of failing an event's first attempts: no
 * answer within the 5 s budget, 500, 503, 429 with `Retry-After`, a redirect (never followed), plus one that answers
 * at once. Each event still reaches each receiver with its original event id, and the service stays ready
 * throughout: a receiver's failure is not the service's.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startReceiver, type Receiver } from "../delivery/receiver.ts";
import { startNats, type TestNats } from "../support/nats.ts";
import { freePort } from "../support/ports.ts";
import { runFaultTest } from "./fault-run.ts";
import { HOOK_PATHS } from "./harness.ts";

const dir = mkdtempSync(join(tmpdir(), "peg-faults-rx-"));
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

it("delivers every event through timeouts, 5xx, 429 and redirects, and stays ready", async () => {
  const dataDir = join(dir, "data");
  mkdirSync(dataDir);
  await runFaultTest({
    name: "receivers",
    store: { kind: "pglite", dataDir: join(dataDir, "pg") },
    natsUrl: nats.url,
    dataDir,
    port: await freePort(),
    speed: 40,
    rx,
    hookPaths: Object.values(HOOK_PATHS),
    inject: async () => [],
  });
  // The failures really happened: each misbehaving path failed each of its events as many times as it was told to.
  for (const [path, n] of [[HOOK_PATHS.timeout, 1], [HOOK_PATHS.status500, 2], [HOOK_PATHS.status503, 2], [HOOK_PATHS.tooMany, 2], [HOOK_PATHS.redirect, 2]] as const) {
    const events = new Map<string, number>();
    for (const r of rx.received.filter((x) => x.path === path)) events.set(r.eventId!, (events.get(r.eventId!) ?? 0) + 1);
    expect(events.size, path).toBeGreaterThan(0);
    for (const [id, count] of events) expect(count, `${path} ${id}: failed attempts + the accepted one`).toBeGreaterThanOrEqual(n + 1);
  }
}, 400_000);
