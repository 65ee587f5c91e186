/**
 * `npm start` on embedded defaults: no DATABASE_URL and no NATS_URL. The service starts its own nats-server (store in
 * DATA_DIR/nats) and PGlite (DATA_DIR/pg), replays a scenario fast, records its transitions in the store, shuts down
 * by itself when the scenario ends, and leaves no nats-server behind.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { connect as connectTcp } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, expect, it } from "vitest";
import { systemClock } from "../../src/clock.ts";
import { openStore } from "../../src/store/index.ts";
import { freePort } from "../support/ports.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const dataDir = mkdtempSync(join(tmpdir(), "peg-embedded-"));

afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

async function run(env: Record<string, string>): Promise<{ code: number | null; out: string; err: string }> {
  const port = String(await freePort());
  return new Promise((resolve) => {
    const p = spawn(process.execPath, ["--import", "tsx", "src/main.ts", "serve"], {
      cwd: ROOT,
      env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "/tmp", DATA_DIR: dataDir, PORT: port, METRICS_PORT: "0", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    p.stdout.on("data", (c: Buffer) => (out += c.toString()));
    p.stderr.on("data", (c: Buffer) => (err += c.toString()));
    p.once("exit", (code) => resolve({ code, out, err }));
  });
}

it("runs on PGlite and its own nats-server, stores the transitions, and stops cleanly", async () => {
  const r = await run({ FEED: "scenario:oracle-confidence-blowout", SCENARIO_SPEED: "60" });
  expect(r.code, r.err.slice(-2000)).toBe(0);
  expect(r.err).toMatch(/"msg":"started embedded nats-server"/);
  expect(r.err).toMatch(/"store":"pglite"/);
  const printed = r.out.trim().split("\n").map((l) => JSON.parse(l) as { asset: string; to_state: string; alert_id: string });
  expect(printed.map((t) => `${t.asset}->${t.to_state}`)).toEqual(["USDT->UNKNOWN", "USDT->PEGGED"]);

  // The nats-server it started is gone: its pid file was removed and its port no longer accepts connections.
  expect(existsSync(join(dataDir, "nats-server.pid"))).toBe(false);
  const port = Number(/"url":"nats:\/\/127\.0\.0\.1:(\d+)"/.exec(r.err)?.[1]);
  expect(port).toBeGreaterThan(0);
  const open = await new Promise<boolean>((resolve) => {
    const s = connectTcp(port, "127.0.0.1");
    s.once("connect", () => (s.destroy(), resolve(true)));
    s.once("error", () => resolve(false));
  });
  expect(open).toBe(false);

  const store = await openStore({ kind: "pglite", dataDir: join(dataDir, "pg") }, systemClock);
  try {
    const alerts = await store.alerts({ limit: 10, offset: 0 });
    expect(alerts.map((a) => a.id).sort()).toEqual(printed.map((t) => t.alert_id).sort());
    const receipt = await store.receiptById(printed[0]!.alert_id);
    expect(receipt?.receipt.computed.gate).toBe("oracle_confidence");
  } finally {
    await store.close();
  }

  // A second start recovers from the snapshots and JetStream: the finished scenario adds nothing new.
  const again = await run({ FEED: "scenario:oracle-confidence-blowout", SCENARIO_SPEED: "60" });
  expect(again.code, again.err.slice(-2000)).toBe(0);
  expect(again.out.trim()).toBe("");
  expect(again.err).toMatch(/"msg":"recovered actors".*"fromSnapshot":1/);
}, 180_000);

it("refuses to start with a clear message when nats-server is missing", async () => {
  const r = await run({ PATH: "/nonexistent", FEED: "sim" });
  expect(r.code).toBe(1);
  expect(r.err).toMatch(/nats-server is not installed.*apt-get install nats-server/);
}, 60_000);
