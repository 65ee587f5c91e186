/**
 * Disk per sample in each store (npm run bench:storage; issue 25 item 3). The real service (`throughput-child.ts`,
 * ROLE=all, FEED=sim, BENCH_ASSETS synthetic assets at one sample each every BENCH_TICK_MS) runs for BENCH_SECONDS
 * against its own nats-server and PostgreSQL, with its retention pass every minute (packing closed minutes). Then:
 *
 * - JetStream: `PEG_SAMPLES` bytes (nats-server's own accounting) / the samples PostgreSQL stored (recent rows plus
 *   packed), so the figure stays per sample when a message carries many;
 * - PostgreSQL raw: the packed minutes (`sample_minutes` partitions: table, TOAST and indexes) / the samples in them,
 *   with where a packed sample's bytes go (each part of the blocks, and the row, index and TOAST overhead),
 *   which is what a day of history costs; the unpacked minutes (`sample_rows`) are reported apart: they hold only the
 *   last one or two minutes whatever the retention;
 * - rollups: `rollup_minutes` bytes / rows;
 * - retention: the time of a pass at the end (packs what closed), and of a pass a week and a day later (drops every
 *   day partition of raw samples: the cost of expiring a day).
 *
 * Projections at the offered rate and the default retention (raw 7 days + the day a partition may hold on to,
 * rollups 90 + 1, JetStream 24 h): GB written to PostgreSQL per day, and the steady state of all three stores.
 * Prints one JSON line and rewrites the "storage" section of docs/benchmarks.md.
 *
 * Environment: BENCH_ASSETS (10,000), BENCH_SECONDS (600), BENCH_TICK_MS (1,000).
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import pg from "pg";
import { systemClock } from "../src/clock.ts";
import { openStore } from "../src/store/index.ts";
import { blockSections } from "../src/store/sample-block.ts";
import { startNats, type TestNats } from "../test/support/nats.ts";
import { startPostgres, type TestPostgres } from "../test/support/postgres.ts";
import { freePort } from "../test/support/ports.ts";
import { loadAverage } from "./report.ts";
import { projectStorage, writeStorageSection, type StorageMeasure } from "./storage-report.ts";

const int = (name: string, fallback: number): number => {
  const v = Number(process.env[name] ?? String(fallback));
  if (!Number.isInteger(v) || v <= 0) throw new Error(`${name} must be a positive integer`);
  return v;
};
const ASSETS = int("BENCH_ASSETS", 10_000);
const SECONDS = int("BENCH_SECONDS", 600);
const TICK_MS = int("BENCH_TICK_MS", 1000);
/** Assets of the synthetic full day of packed rollups (see packedRollupDay). */
const FULL_DAY_ASSETS = 500;
const CHILD = fileURLToPath(new URL("./throughput-child.ts", import.meta.url));
const DAY_MS = 86_400_000;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

let nats: TestNats | null = null;
let server: TestPostgres | null = null;
let child: ReturnType<typeof spawn> | null = null;
let dataDir: string | null = null;
async function cleanup(): Promise<void> {
  if (child !== null && child.exitCode === null) child.kill("SIGKILL");
  await nats?.dispose().catch(() => {});
  await server?.dispose().catch(() => {});
  if (dataDir !== null) rmSync(dataDir, { recursive: true, force: true });
  nats = server = child = dataDir = null;
}
process.on("SIGINT", () => void cleanup().finally(() => process.exit(130)));

/** Bytes (table, TOAST, indexes) of a partitioned table's partitions, and its row count. */
async function tableBytes(db: pg.Client, parent: string, count: string): Promise<{ bytes: number; rows: number }> {
  const b = await db.query<{ b: string }>(
    `select coalesce(sum(pg_total_relation_size(i.inhrelid)), 0)::bigint as b from pg_inherits i where i.inhparent = '${parent}'::regclass`,
  );
  const n = await db.query<{ n: string }>(`select ${count}::bigint as n from ${parent}`);
  return { bytes: Number(b.rows[0]!.b), rows: Number(n.rows[0]!.n) };
}

/**
 * Packed rollups per minute over a full day. The run's own minutes cover part of one day, whose row per asset-day is
 * mostly header; so a closed day of FULL_DAY_ASSETS assets x 1,440 minutes is written into `rollup_minutes` with the
 * run's shape (34-significant-digit sums, minima and maxima with random digits, which do not compress; the run's
 * samples per minute; last offsets, seqs and states as the projector writes them), packed by a retention pass, and its
 * `rollup_days` partition measured. `partialMinutes`: the run's own minutes packed by the expiry pass, for reference.
 */
async function packedRollupDay(db: pg.Client, store: Awaited<ReturnType<typeof openStore>>, partialMinutes: number) {
  const assets = Math.min(ASSETS, FULL_DAY_ASSETS);
  const day = Math.floor(Date.now() / DAY_MS) * DAY_MS - 2 * DAY_MS;
  const perMinute = Math.max(1, Math.round(60_000 / TICK_MS));
  const from = new Date(day).toISOString();
  const name = `rollup_minutes_d${from.slice(0, 10).replaceAll("-", "")}`;
  await db.query(`create table ${name} partition of rollup_minutes for values from ('${from}') to ('${new Date(day + DAY_MS).toISOString()}')`);
  const digits = (scale: number) => `round((random()::numeric * 0.004 + random()::numeric * 1e-18 + random()::numeric * 1e-34), ${scale})`;
  await db.query(`
    insert into rollup_minutes (asset, minute, samples, last_ms, last_seq, last_state, sum_discount, min_discount, max_discount)
    select a.sample_id, '${from}'::timestamptz + g * interval '1 minute', ${perMinute}, 59000 + floor(random() * 1000)::integer, 1, 0,
           ${digits(37)} * ${perMinute}, ${digits(36)}, ${digits(36)}
    from (select sample_id from assets order by sample_id limit ${assets}) a cross join generate_series(0, 1439) g`);
  const t = performance.now();
  const pass = await store.applyRetention(Date.now());
  const ms = performance.now() - t;
  const b = await db.query<{ b: string; n: string; rows: string }>(`
    select pg_total_relation_size('rollup_days_d${from.slice(0, 10).replaceAll("-", "")}')::bigint as b,
           (select coalesce(sum(n), 0) from rollup_days where day = '${from}')::bigint as n,
           (select count(*) from rollup_days where day = '${from}')::bigint as rows`);
  return { assets, minutes: Number(b.rows[0]!.n), rows: Number(b.rows[0]!.rows), bytes: Number(b.rows[0]!.b), packMs: ms, days: pass.packedRollupDays, partialMinutes };
}

/** Spawns the service and resolves with its `serving` line's instant; lines with `bench` go to `onLine`. */
function spawnService(env: Record<string, string>, onLine: (o: { bench: string; at: number }) => void): Promise<number> {
  const p = spawn(process.execPath, ["--max-semi-space-size=64", "--import", "tsx", CHILD], { env, stdio: ["ignore", "pipe", "pipe"] });
  child = p;
  let tail = "";
  p.stderr!.on("data", (c: Buffer) => void (tail = (tail + c.toString()).slice(-4000)));
  let buf = "";
  return new Promise((resolve, reject) => {
    p.once("exit", (code) => reject(new Error(`the service exited (${code}); stderr: ${tail}`)));
    p.stdout!.on("data", (c: Buffer) => {
      buf += c.toString();
      const parts = buf.split("\n");
      buf = parts.pop()!;
      for (const l of parts) {
        try {
          const o = JSON.parse(l) as { bench: string; at: number };
          onLine(o);
          if (o.bench === "serving") resolve(o.at);
        } catch {
          // not a bench line
        }
      }
    });
  });
}

const loadBefore = loadAverage();
console.log(`storage: ${ASSETS} assets, tick ${TICK_MS} ms, ${SECONDS} s`);
try {
  nats = await startNats();
  server = await startPostgres();
  const dbUrl = await server.createDatabase();
  dataDir = mkdtempSync(join(tmpdir(), "peg-bench-storage-"));
  let closedAt = 0;
  const env: Record<string, string> = {
    PATH: process.env["PATH"] ?? "",
    HOME: process.env["HOME"] ?? "/tmp",
    ROLE: "all",
    FEED: "sim",
    SIM_TICK_MS: String(TICK_MS),
    NATS_URL: nats.url,
    DATABASE_URL: dbUrl,
    SECRETS_KEY: randomBytes(32).toString("base64"),
    DATA_DIR: dataDir,
    HOST: "127.0.0.1",
    PORT: String(await freePort()),
    METRICS_PORT: String(await freePort()),
    LOG_LEVEL: "warn",
    BENCH_ASSETS: String(ASSETS),
  };
  const t0 = await spawnService(env, (o) => void (o.bench === "intake_closed" ? (closedAt = o.at) : undefined));
  const nc = await connect({ servers: nats.url, noAsyncTraces: true });
  const jsm = await jetstreamManager(nc);
  const db = new pg.Client({ connectionString: dbUrl });
  await db.connect();
  for (let next = t0 + 60_000; next < t0 + SECONDS * 1000; next += 60_000) {
    await sleep(next - Date.now());
    const s = await jsm.streams.info("PEG_SAMPLES");
    const packed = await tableBytes(db, "sample_minutes", "coalesce(sum(n), 0)");
    console.log(`storage: +${Math.round((next - t0) / 1000)} s JetStream ${s.state.messages} msgs ${(s.state.bytes / 2 ** 20).toFixed(0)} MiB; packed ${packed.rows} samples ${(packed.bytes / 2 ** 20).toFixed(0)} MiB`);
  }
  await sleep(t0 + SECONDS * 1000 - Date.now());
  child!.kill("SIGUSR2");
  // Drain: nothing pending on the projector's durable twice in a row.
  for (let quiet = 0; quiet < 2; await sleep(1000)) {
    const c = await jsm.consumers.info("PEG_SAMPLES", "projector-sample-batches");
    quiet = c.num_pending + c.num_ack_pending === 0 && closedAt > 0 ? quiet + 1 : 0;
  }
  const stream = (await jsm.streams.info("PEG_SAMPLES")).state;
  child!.kill("SIGTERM");
  await sleep(5_000);
  await nc.close();

  // Retention passes from a store of our own: the minutes that closed, then everything a week and a day later.
  const hot = await tableBytes(db, "sample_rows", "count(*)");
  // The samples PostgreSQL stored (each exactly once: recent rows or packed): what JetStream's bytes are divided by,
  // whatever number of samples a PEG_SAMPLES message carries.
  const stored = hot.rows + (await tableBytes(db, "sample_minutes", "coalesce(sum(n), 0)")).rows;
  const store = await openStore({ kind: "postgres", url: dbUrl, max: 2 }, systemClock);
  let t = performance.now();
  const pass = await store.applyRetention(Date.now() + 120_000);
  const passMs = performance.now() - t;
  // Closed days of rollups are never updated again, so a day partition ends compact; the open day's rows are updated
  // by every batch of their minute and carry dead versions until autovacuum reuses them: rewrite before measuring.
  await db.query("vacuum full rollup_minutes");
  const packed = await tableBytes(db, "sample_minutes", "coalesce(sum(n), 0)");
  // Where a packed sample's bytes go: each part of the blocks (decoded here, from a systematic sample of up to 20,000
  // rows), and the rest (row headers, keys, indexes, TOAST chunks, free space) as `row_and_index`.
  const blocks = await db.query<{ block: Buffer; n: number }>(
    "select block, n from sample_minutes where random() < 20000.0 / greatest((select count(*) from sample_minutes), 1)",
  );
  const sections: Record<string, number> = {};
  let sectionSamples = 0;
  for (const b of blocks.rows) {
    for (const [k, v] of Object.entries(blockSections(b.block))) sections[k] = (sections[k] ?? 0) + v;
    sectionSamples += b.n;
  }
  const perColumn: Record<string, number> = Object.fromEntries(Object.entries(sections).map(([k, v]) => [k, v / Math.max(sectionSamples, 1)]));
  perColumn["row_and_index"] = packed.bytes / Math.max(packed.rows, 1) - Object.values(perColumn).reduce((a, b) => a + b, 0);
  const packedRows = Number((await db.query<{ n: string }>("select count(*)::bigint as n from sample_minutes")).rows[0]!.n);
  const packedDays = await db.query<{ n: string }>("select count(*)::bigint as n from pg_inherits where inhparent = 'sample_minutes'::regclass");
  const rollups = await tableBytes(db, "rollup_minutes", "count(*)");
  t = performance.now();
  const expiry = await store.applyRetention(Date.now() + 8 * DAY_MS);
  const expiryMs = performance.now() - t;
  const rollupDay = await packedRollupDay(db, store, rollups.rows > 0 ? (await tableBytes(db, "rollup_days", "coalesce(sum(n), 0)")).rows : 0);
  await store.close();
  await db.end();

  const measure: StorageMeasure = {
    assets: ASSETS,
    tickMs: TICK_MS,
    seconds: SECONDS,
    offeredPerS: stored / ((closedAt - t0) / 1000),
    jetstream: { messages: stream.messages, bytes: stream.bytes, samples: stored },
    packed: { samples: packed.rows, rows: packedRows, bytes: packed.bytes, days: Number(packedDays.rows[0]!.n), perColumn },
    hot,
    rollups,
    pass: { ms: passMs, minutes: pass.packedMinutes, samples: pass.packedSamples },
    expiry: { ms: expiryMs, rawDays: expiry.rawDays, bytesFreed: expiry.bytesFreed },
    rollupDay,
  };
  const summary = projectStorage(measure);
  console.log(JSON.stringify(summary));
  writeStorageSection(measure, summary, { loadBefore, loadAfter: loadAverage() });
  await cleanup();
  process.exit(0);
} catch (e) {
  console.error(`storage: failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
  await cleanup();
  process.exit(1);
}
