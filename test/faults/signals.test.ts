/**
 * Shutdown by signal (docs/lifecycle.md): SIGTERM runs the ordered shutdown and exits 0 with every step done; a second
 * signal during shutdown exits at once with 130.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startNats, type TestNats } from "../support/nats.ts";
import { freePort } from "../support/ports.ts";
import { spawnServe, type ServeProcess } from "../support/serve.ts";

let nats: TestNats;
const dirs: string[] = [];

beforeAll(async () => {
  nats = await startNats();
});
afterAll(async () => {
  await nats?.dispose();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function start(): Promise<ServeProcess> {
  const dataDir = mkdtempSync(join(tmpdir(), "peg-signals-"));
  dirs.push(dataDir);
  return spawnServe({ DATA_DIR: dataDir, NATS_URL: nats.url, FEED: "sim", PORT: String(await freePort()) });
}

it("SIGTERM shuts down in order and exits 0", async () => {
  const s = await start();
  await s.serving;
  await new Promise((r) => setTimeout(r, 1500)); // let samples flow
  s.proc.kill("SIGTERM");
  expect(await s.exited, s.stderr().slice(-2000)).toBe(0);
  const msgs = s.stderr().split("\n").filter(Boolean).map((l) => (JSON.parse(l) as { msg: string }).msg);
  const i = msgs.indexOf("shutting down");
  expect(i).toBeGreaterThan(-1);
  expect(msgs.slice(i)).toEqual(["shutting down", "stopped"]);
}, 60_000);

it("a second signal during shutdown exits at once with 130", async () => {
  const s = await start();
  await s.serving;
  // The first signal starts the shutdown; a second one (another signal: identical ones sent back to back may
  // coalesce) arrives while it runs. Waiting for the "shutting down" line instead would race a shutdown that takes
  // only milliseconds.
  s.proc.kill("SIGINT");
  s.proc.kill("SIGTERM");
  expect(await s.exited, s.stderr().slice(-1500)).toBe(130);
  expect(s.stderr()).toMatch(/second signal: exiting at once/);
}, 60_000);
