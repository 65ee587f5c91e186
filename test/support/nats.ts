import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { connect as natsConnect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll } from "vitest";
import { freePort, waitFor } from "./ports.ts";

const CONF = fileURLToPath(new URL("../../nats.conf", import.meta.url));

/** A nats-server with JetStream that a test started itself: own port, own temporary store. */
export interface TestNats {
  readonly url: string;
  readonly port: number;
  readonly storeDir: string;
  /** Graceful stop (SIGTERM); the store is kept for a restart. */
  stop(): Promise<void>;
  /** SIGKILL, as a crash. */
  kill(): Promise<void>;
  /** Starts again on the same port and store. */
  start(): Promise<void>;
  /** Stops and deletes the store. */
  dispose(): Promise<void>;
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, "127.0.0.1");
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });
}

export async function startNats(): Promise<TestNats> {
  const port = await freePort();
  const storeDir = mkdtempSync(join(tmpdir(), "peg-nats-"));
  let proc: ChildProcess | null = null;
  const start = async () => {
    const p = spawn("nats-server", ["-c", CONF, "-p", String(port), "-a", "127.0.0.1", "-sd", storeDir], {
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    p.stderr?.on("data", (c: Buffer) => (stderr = (stderr + c.toString()).slice(-4000)));
    proc = p;
    const exited = new Promise<never>((_, reject) =>
      p.once("exit", (code) => reject(new Error(`nats-server exited with ${code}: ${stderr}`))),
    );
    await Promise.race([waitFor(() => portOpen(port), 15_000, `nats-server on ${port}`), exited]);
    exited.catch(() => {});
  };
  const signal = async (sig: NodeJS.Signals) => {
    const p = proc;
    if (p === null || p.exitCode !== null) return;
    const done = new Promise<void>((r) => p.once("exit", () => r()));
    p.kill(sig);
    await done;
    proc = null;
    await waitFor(async () => !(await portOpen(port)), 10_000, "nats-server port to close");
  };
  await start();
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    storeDir,
    stop: () => signal("SIGTERM"),
    kill: () => signal("SIGKILL"),
    start,
    dispose: async () => {
      await signal("SIGTERM");
      rmSync(storeDir, { recursive: true, force: true });
    },
  };
}

/**
 * A nats-server and one connection for a test file: started before its tests, closed and deleted after them. Read
 * `nats` and `nc` inside hooks and tests (they are set once the server runs).
 */
export function natsForSuite(): { readonly nats: TestNats; readonly nc: NatsConnection } {
  const suite = {} as { nats: TestNats; nc: NatsConnection };
  beforeAll(async () => {
    suite.nats = await startNats();
    suite.nc = await natsConnect({ servers: suite.nats.url });
  }, 30_000);
  afterAll(async () => {
    await suite.nc?.close();
    await suite.nats?.dispose();
  });
  return suite;
}
