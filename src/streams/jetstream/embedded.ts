import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { connect as tcpConnect, createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { ownerOnlyDir, tightenTree, writeOwnerOnlyFile } from "../../owner-only.ts";

/** The repository's nats.conf: the embedded server's configuration. */
export const NATS_CONF = fileURLToPath(new URL("../../../nats.conf", import.meta.url));

/** The nats-server binary is not installed. The message says what to install. */
export class NatsServerMissingError extends Error {
  readonly code = "nats_server_missing";
  constructor() {
    super(
      "nats-server is not installed (needed when NATS_URL is unset): install the Debian package `nats-server` " +
        "(apt-get install nats-server) or set NATS_URL to an existing server with JetStream enabled",
    );
    this.name = "NatsServerMissingError";
  }
}

/** A nats-server process the service started and owns. */
export interface EmbeddedNats {
  readonly url: string;
  readonly port: number;
  /** Stops the server (SIGTERM, then SIGKILL after `graceMs`). Idempotent. */
  stop(graceMs?: number): Promise<void>;
}

/**
 * A previous run killed with -9 leaves its detached nats-server running on our store: stop it (it holds the store
 * directory) before starting a new one. Only a process whose command line is a nats-server is touched.
 */
async function reapOrphan(pidFile: string): Promise<void> {
  if (!existsSync(pidFile)) return;
  const pid = Number.parseInt(readFileSync(pidFile, "utf8"), 10);
  rmSync(pidFile, { force: true });
  if (!Number.isInteger(pid) || pid <= 1) return;
  let cmdline = "";
  try {
    cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
  } catch {
    return; // not running
  }
  if (!cmdline.includes("nats-server")) return;
  process.kill(pid, "SIGTERM");
  for (let i = 0; i < 100; i++) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  process.kill(pid, "SIGKILL");
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const a = srv.address();
      const port = typeof a === "object" && a !== null ? a.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = tcpConnect(port, "127.0.0.1");
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });
}

/** The file beside the store directory holding the running embedded server's URL (removed when it stops). */
export function embeddedNatsUrlFile(storeDir: string): string {
  return join(dirname(storeDir), "nats.url");
}

/**
 * Starts `nats-server -c nats.conf` with JetStream stored in `storeDir`, on a free loopback port (the machine may
 * already run a server on 4222). Resolves once the port accepts connections. The store directory is made owner-only
 * (0700, what is in it 0600/0700); the server creates its files under the process umask, which the service restricts
 * to 077 at start (src/owner-only.ts `restrictUmask`). Its URL and pid files are 0600.
 */
export async function startEmbeddedNats(storeDir: string, opts: { binary?: string; timeoutMs?: number } = {}): Promise<EmbeddedNats> {
  ownerOnlyDir(storeDir);
  tightenTree(storeDir);
  const pidFile = join(dirname(storeDir), "nats-server.pid");
  await reapOrphan(pidFile);
  const port = await freePort();
  const binary = opts.binary ?? "nats-server";
  // Its own process group: a Ctrl-C in the terminal reaches the service only, which stops this server last, after
  // flushing to it (docs/lifecycle.md).
  const proc: ChildProcess = spawn(binary, ["-c", NATS_CONF, "-a", "127.0.0.1", "-p", String(port), "-sd", storeDir], {
    stdio: ["ignore", "ignore", "pipe"],
    detached: true,
  });
  proc.unref();
  if (proc.pid !== undefined) writeOwnerOnlyFile(pidFile, String(proc.pid));
  let stderr = "";
  proc.stderr?.on("data", (c: Buffer) => (stderr = (stderr + c.toString()).slice(-4000)));
  const failed = new Promise<never>((_, reject) => {
    proc.once("error", (e: NodeJS.ErrnoException) => reject(e.code === "ENOENT" ? new NatsServerMissingError() : e));
    proc.once("exit", (code) => reject(new Error(`nats-server exited with code ${code}: ${stderr.trim()}`)));
  });
  failed.catch(() => {});
  const deadline = performance.now() + (opts.timeoutMs ?? 15_000);
  for (;;) {
    const up = await Promise.race([portOpen(port), failed]);
    if (up) break;
    if (performance.now() > deadline) {
      proc.kill("SIGKILL");
      throw new Error(`nats-server did not accept connections on port ${port}: ${stderr.trim()}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  // Where local tools (`peg-oracle webhook-keys`) find this server: the port is chosen at random.
  const urlFile = embeddedNatsUrlFile(storeDir);
  writeOwnerOnlyFile(urlFile, `nats://127.0.0.1:${port}\n`);
  let stopped: Promise<void> | null = null;
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    stop: (graceMs = 5_000) => {
      if (stopped !== null) return stopped;
      stopped = new Promise<void>((resolve) => {
        if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
        const timer = setTimeout(() => proc.kill("SIGKILL"), graceMs);
        proc.once("exit", () => {
          clearTimeout(timer);
          rmSync(pidFile, { force: true });
          rmSync(urlFile, { force: true });
          resolve();
        });
        proc.kill("SIGTERM");
      });
      return stopped;
    },
  };
}
