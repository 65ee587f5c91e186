/**
 * Runs the store contract on every implementation: PGlite in memory, PGlite on disk (reopened from its data
 * directory), and a real PostgreSQL this test starts itself (own data directory, free port, fresh database). Also the
 * retention scheduler on its own, with a fake target.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { SimulatedClock } from "../../src/clock.ts";
import { MigrationError, openStore, startRetention, type RetentionResult } from "../../src/store/index.ts";
import { freePort } from "../support/ports.ts";
import { describeWithPostgres } from "../support/postgres.ts";
import { describeStoreContract } from "./contract.ts";

describeStoreContract("pglite in memory", (clock) => openStore({ kind: "pglite-memory" }, clock), { persistent: false });

describe("pglite on disk", () => {
  const root = mkdtempSync(join(tmpdir(), "peg-store-"));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  // A nested path: openStore creates the missing directories.
  const dataDir = join(root, "data", "pg");
  describeStoreContract("pglite data dir", (clock) => openStore({ kind: "pglite", dataDir }, clock), { persistent: true });
});

describeWithPostgres("postgres", (url) => {
  describeStoreContract("postgres", (clock) => openStore({ kind: "postgres", url: url(), max: 4 }, clock), { persistent: true });

  test("an unreachable server fails the open with a named error and leaves nothing open", async () => {
    const dead = `postgresql://postgres@127.0.0.1:${await freePort()}/none`;
    await expect(openStore({ kind: "postgres", url: dead }, new SimulatedClock(0))).rejects.toBeInstanceOf(MigrationError);
  });
});

describe("startRetention", () => {
  const tick = () => new Promise((r) => setTimeout(r, 0));
  const none: RetentionResult = { packedMinutes: 0, packedSamples: 0, packedRollupDays: 0, rawDays: 0, rollupDays: 0, bytesFreed: 0 };

  test("passes at start and every interval after the previous one; a failure does not stop the schedule", async () => {
    const clock = new SimulatedClock(1_000);
    const calls: number[] = [];
    const errors: unknown[] = [];
    const target = {
      applyRetention: (now?: number) => {
        calls.push(now!);
        return calls.length === 2 ? Promise.reject(new Error("db down")) : Promise.resolve(none);
      },
    };
    const stop = startRetention(target, clock, 500, { onError: (e) => errors.push(e) });
    await tick();
    expect(calls).toEqual([1_000]);
    clock.increment(499);
    await tick();
    expect(calls).toEqual([1_000]);
    clock.increment(1);
    await tick();
    clock.increment(500);
    await tick();
    expect(calls).toEqual([1_000, 1_500, 2_000]);
    expect(errors).toHaveLength(1);
    await stop();
    await stop();
    expect(clock.pending).toBe(0);
    clock.increment(5_000);
    await tick();
    expect(calls).toHaveLength(3);
  });

  test("refuses a non-positive interval", () => {
    expect(() => startRetention({ applyRetention: () => Promise.resolve(none) }, new SimulatedClock(0), 0)).toThrow(RangeError);
  });
});
