/**
 * The packers racing late inserts (issue 25): batches of samples of closed minutes, each delivered twice, from
 * several connections at once, while retention passes pack every closed minute over and over (recreated minutes
 * included: each late sample recreates its minute's partition, which the next pass merges into the packed block), and
 * yesterday's rollups into day rows (a later sample of yesterday is then merged into them).
 * Whatever the interleaving, every sample ends up stored exactly once: the inserts report each as newly stored once
 * in all, the raw history holds each (ts, seq) once with its own values, the rollups count each once, and nothing is
 * left unpacked. On PostgreSQL (real concurrency, 4 connections) and on PGlite (statements interleave, one connection).
 */
import { sql } from "kysely";
import { describe, expect, test } from "vitest";
import { SimulatedClock } from "../../src/clock.ts";
import { openStore, type SampleRow, type Store } from "../../src/store/index.ts";
import { describeWithPostgres } from "../support/postgres.ts";
import { MIN, catalog, sample } from "./fixtures.ts";

const ASSETS = catalog.active.slice(0, 4);
const NOW = Date.UTC(2026, 10, 27, 12, 0, 0);
/** Minutes of yesterday (whose rollups a pass packs into a day row) and of today (closed, so their samples are packed). */
const MINUTES = [NOW - 1_440 * MIN - 6 * MIN, NOW - 1_440 * MIN - 5 * MIN, NOW - 6 * MIN, NOW - 5 * MIN, NOW - 4 * MIN, NOW - 3 * MIN];

/** A small deterministic generator, so a failing seed can be replayed. */
function rng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

async function race(store: Store, seed: number): Promise<void> {
  const rand = rng(seed);
  await store.upsertAssets(ASSETS);
  const all: SampleRow[] = [];
  for (const m of MINUTES) {
    for (const [i, a] of ASSETS.entries()) {
      for (let k = 0; k < 10; k++) {
        const ts = m + Math.floor(rand() * 60_000);
        all.push(sample(a.mint, ts, `0.00${i}${k}${Math.floor(rand() * 1e9)}1234567890123456789012`, { seq: k }));
      }
    }
  }
  // Random batches, each delivered twice in a random order, over 4 writers; a packer passes as long as they write.
  const shuffled = [...all, ...all].sort(() => rand() - 0.5);
  const batches: SampleRow[][] = [];
  for (let i = 0; i < shuffled.length; ) {
    const n = 1 + Math.floor(rand() * 15);
    batches.push(shuffled.slice(i, i + n));
    i += n;
  }
  let inserted = 0;
  let writing = 4;
  const writer = async (w: number) => {
    for (let b = w; b < batches.length; b += 4) {
      const r = await store.insertSamples(batches[b]!);
      inserted += r.inserted;
    }
    writing--;
  };
  const packer = async () => {
    let passes = 0;
    while (writing > 0 || passes === 0) {
      await store.applyRetention(NOW);
      passes++;
    }
  };
  await Promise.all([writer(0), writer(1), writer(2), writer(3), packer()]);
  await store.applyRetention(NOW);

  expect(inserted).toBe(all.length);
  const unpacked = await sql<{ n: number | string }>`select count(*) as n from sample_rows`.execute(store.db);
  expect(Number(unpacked.rows[0]!.n)).toBe(0);
  for (const a of ASSETS) {
    const mine = all.filter((r) => r.mint === a.mint).sort((x, y) => y.ts - x.ts || y.seq - x.seq);
    const raw = await store.history(a.mint, { bucket: "raw", from: 0, to: NOW, limit: 10_000 });
    expect(raw.map((r) => [r.ts, r.discount])).toEqual(mine.map((r) => [r.ts, r.discount]));
    const minutes = await store.history(a.mint, { bucket: "1m", from: 0, to: NOW, limit: 10_000 });
    expect(minutes.map((m) => m.samples)).toEqual(MINUTES.map(() => 10));
    const sums = await sql<{ n: number | string }>`select count(*) as n from rollup_days`.execute(store.db);
    expect(Number(sums.rows[0]!.n)).toBe(ASSETS.length);
  }
}

const SEED = Number(process.env["RACE_SEED"] ?? Date.now() % 1_000_000);

describe("packing races late inserts (PGlite)", () => {
  test(`each sample exactly once (seed ${SEED})`, { timeout: 120_000 }, async () => {
    const store = await openStore({ kind: "pglite-memory" }, new SimulatedClock(NOW));
    try {
      await race(store, SEED);
    } finally {
      await store.close();
    }
  });
});

describeWithPostgres("packing races late inserts (PostgreSQL)", (url) => {
  test(`each sample exactly once (seed ${SEED})`, { timeout: 120_000 }, async () => {
    const store = await openStore({ kind: "postgres", url: url(), max: 4 }, new SimulatedClock(NOW));
    try {
      await race(store, SEED);
    } finally {
      await store.close();
    }
  });
});
