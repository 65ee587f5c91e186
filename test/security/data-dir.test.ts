/**
 * Issue 14 item 6, secrets at rest: on the embedded default (PGlite in DATA_DIR/pg, its own nats-server with its
 * store in DATA_DIR/nats) everything under DATA_DIR is owner-only, directories 0700 and files 0600: right after a
 * start, after writes that create new relation files and WAL segments (PGlite's Emscripten filesystem chmods its files
 * to 0666 whatever the umask), after a restart (which rewrites pg_internal.init), and after a restart on a DATA_DIR
 * an earlier build left loose.
 */
import { chmodSync, lstatSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { sql } from "kysely";
import { afterAll, describe, expect, it } from "vitest";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import { startService, type Service } from "../../src/cli/service.ts";
import { parseConfig } from "../../src/config.ts";
import { freePort, waitFor } from "../support/ports.ts";

const catalog = loadShippedCatalog();
const root = mkdtempSync(join(tmpdir(), "peg-data-dir-"));
const dataDir = join(root, "data");
let service: Service | null = null;

afterAll(async () => {
  await service?.stop();
  rmSync(root, { recursive: true, force: true });
});

/** Every entry under `dir` (itself included) with its permission bits, symbolic links left out. */
function modes(dir: string): Map<string, number> {
  const out = new Map<string, number>();
  const visit = (p: string): void => {
    const st = lstatSync(p);
    if (st.isSymbolicLink()) return;
    out.set(relative(root, p), st.mode & 0o7777);
    if (st.isDirectory()) for (const name of readdirSync(p)) visit(join(p, name));
  };
  visit(dir);
  return out;
}

/** The entries whose mode is not 0700 (directories) or 0600 (files), as `path mode` lines. */
function notOwnerOnly(dir: string): string[] {
  const wrong: string[] = [];
  for (const [path, mode] of modes(dir)) {
    const isDir = lstatSync(join(root, path)).isDirectory();
    if (mode !== (isDir ? 0o700 : 0o600)) wrong.push(`${path} ${mode.toString(8)}`);
  }
  return wrong;
}

async function start(): Promise<Service> {
  // No DATABASE_URL and no NATS_URL: `npm start`'s embedded default.
  const config = parseConfig({ PORT: String(await freePort()), METRICS_PORT: "0", HOST: "127.0.0.1", DATA_DIR: dataDir, SIM_TICK_MS: "100" });
  return startService(config, catalog, { log: () => {} });
}

const walSegments = (): string[] => readdirSync(join(dataDir, "pg", "pg_wal")).filter((f) => /^[0-9A-F]{24}$/.test(f));

describe("DATA_DIR on the embedded default", () => {
  it("is owner-only after the first start: PGlite's files and WAL, the JetStream store, the secrets key, nats.url", async () => {
    service = await start();
    const all = modes(dataDir);
    // The test looks where it matters: the database, its WAL, the JetStream store and the service's own files.
    for (const p of ["data/pg/PG_VERSION", "data/pg/pg_wal", "data/pg/global/pg_control", "data/nats/jetstream", "data/secrets.key", "data/nats.url", "data/nats-server.pid"]) {
      expect(all.has(p), p).toBe(true);
    }
    expect(walSegments().length).toBeGreaterThan(0);
    expect(notOwnerOnly(dataDir)).toEqual([]);
  }, 120_000);

  it("stays owner-only after writes: new tables, new WAL segments, projected samples, JetStream messages", async () => {
    const s = service!;
    const before = new Set(walSegments());
    await sql`create table owner_only_probe (x text)`.execute(s.store.db);
    for (let i = 0; i < 3; i++) {
      await sql`insert into owner_only_probe select repeat('x', 2000) from generate_series(1, 200)`.execute(s.store.db);
      await sql`select pg_switch_wal()`.execute(s.store.db);
    }
    await sql`checkpoint`.execute(s.store.db);
    // The simulated market (100 ms ticks) has been publishing to JetStream and projecting samples meanwhile.
    await waitFor(async () => (await s.store.lastSampleAt()) !== null, 30_000, "a projected sample");
    expect(walSegments().filter((f) => !before.has(f)).length, "new WAL segments").toBeGreaterThan(0);
    expect(notOwnerOnly(dataDir)).toEqual([]);
  }, 60_000);

  it("stays owner-only across a restart, and a restart tightens a DATA_DIR left loose by an earlier build", async () => {
    await service!.stop();
    service = null;
    // What an earlier build left behind: world-readable and -writable files and directories.
    const loosened = ["data", "data/pg", "data/pg/PG_VERSION", "data/pg/pg_wal", "data/nats", "data/nats/jetstream", "data/secrets.key"];
    for (const p of loosened) chmodSync(join(root, p), lstatSync(join(root, p)).isDirectory() ? 0o777 : 0o666);
    for (const p of loosened) expect(lstatSync(join(root, p)).mode & 0o077, p).not.toBe(0);
    service = await start();
    await sql`select 1`.execute(service.store.db);
    expect(notOwnerOnly(dataDir)).toEqual([]);
  }, 120_000);
});
