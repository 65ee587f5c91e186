import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe } from "vitest";
import { freePort, waitFor } from "./ports.ts";

const BIN = "/usr/lib/postgresql/15/bin";

/** A PostgreSQL server that a test started itself (own data directory and port), so it can be stopped and restarted. */
export interface TestPostgres {
  readonly url: string;
  readonly port: number;
  /** Fast shutdown; data kept. */
  stop(): Promise<void>;
  /** Immediate shutdown, as a crash. */
  kill(): Promise<void>;
  start(): Promise<void>;
  /** A fresh empty database on this server; returns its URL. */
  createDatabase(name?: string): Promise<string>;
  dispose(): Promise<void>;
}

const isRoot = typeof process.getuid === "function" && process.getuid() === 0;

/** Runs a PostgreSQL binary as the `postgres` user when we are root (initdb refuses root). */
function pgBin(cmd: string, args: string[]): void {
  const full = join(BIN, cmd);
  const r = isRoot
    ? spawnSync("runuser", ["-u", "postgres", "--", full, ...args], { encoding: "utf8" })
    : spawnSync(full, args, { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`${cmd} failed (${r.status}): ${r.stderr || r.stdout}`);
}

async function canConnect(url: string): Promise<boolean> {
  const c = new pg.Client({ connectionString: url });
  try {
    await c.connect();
    await c.query("select 1");
    return true;
  } finally {
    await c.end().catch(() => {});
  }
}

export interface TestPostgresOptions {
  /**
   * Keep PostgreSQL's crash-safe defaults (fsync, synchronous_commit, full_page_writes on). Default false: the test
   * server runs with them off, which is faster but may lose the last commits on an immediate shutdown (`kill`).
   */
  readonly durable?: boolean;
}

export async function startPostgres(options: TestPostgresOptions = {}): Promise<TestPostgres> {
  if (!existsSync(join(BIN, "initdb"))) throw new Error(`PostgreSQL binaries not found in ${BIN}`);
  const port = await freePort();
  const root = mkdtempSync(join(tmpdir(), "peg-pg-"));
  chmodSync(root, 0o777);
  if (isRoot) execFileSync("chown", ["postgres", root]);
  const data = join(root, "data");
  pgBin("initdb", ["-D", data, "-A", "trust", "-U", "postgres", "--no-sync"]);
  const url = `postgresql://postgres@127.0.0.1:${port}/postgres`;
  const fast = options.durable === true ? "" : " -c fsync=off -c synchronous_commit=off -c full_page_writes=off";
  const opts = `-p ${port} -k ${root} -c listen_addresses=127.0.0.1${fast}`;
  const start = async () => {
    pgBin("pg_ctl", ["-D", data, "-o", opts, "-l", join(root, "log"), "-w", "-t", "60", "start"]);
    await waitFor(() => canConnect(url), 30_000, `postgres on ${port}`);
  };
  const stop = async (mode: "fast" | "immediate") => {
    try {
      pgBin("pg_ctl", ["-D", data, "-m", mode, "-w", "stop"]);
    } catch (e) {
      if (!String(e).includes("Is server running?")) throw e;
    }
  };
  await start();
  let n = 0;
  return {
    url,
    port,
    stop: () => stop("fast"),
    kill: () => stop("immediate"),
    start,
    createDatabase: async (name) => {
      const db = name ?? `t${process.pid}_${Date.now()}_${n++}`;
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      try {
        await c.query(`CREATE DATABASE "${db}"`);
      } finally {
        await c.end();
      }
      return `postgresql://postgres@127.0.0.1:${port}/${db}`;
    },
    dispose: async () => {
      await stop("immediate");
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/**
 * A describe block with a PostgreSQL of its own: started (with one fresh database) before the block's tests,
 * disposed after them. `body` gets the database URL as a getter, read when the tests run.
 */
export function describeWithPostgres(name: string, body: (url: () => string) => void): void {
  describe(name, () => {
    let server: TestPostgres | undefined;
    let url = "";
    beforeAll(async () => {
      server = await startPostgres();
      url = await server.createDatabase();
    }, 120_000);
    afterAll(async () => {
      await server?.dispose();
    });
    body(() => url);
  });
}
