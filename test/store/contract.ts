/**
 * The store contract: one suite, run against every implementation (PGlite in memory, PGlite on disk, a real
 * PostgreSQL). Every test starts from empty tables; the store itself is opened once per suite.
 */
import { sql } from "kysely";
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "vitest";
import { SimulatedClock } from "../../src/clock.ts";
import {
  appliedMigrations,
  knownMigrations,
  latestSnapshots,
  snapshotFromStateEvent,
  type SnapshotRow,
  type Store,
} from "../../src/store/index.ts";
import { alertContract } from "./contract-alerts.ts";
import { sampleContract } from "./contract-samples.ts";
import { T0, USDC, USDT, catalog, runEngine } from "./fixtures.ts";

/** Opens a store on the suite's database (the same one on every call, for the persistent kinds). */
export type OpenStore = (clock: SimulatedClock) => Promise<Store>;

export interface ContractContext {
  readonly store: Store;
  readonly clock: SimulatedClock;
}

export interface ContractOptions {
  /** True when reopening sees the data written before (PostgreSQL, PGlite on disk). */
  readonly persistent: boolean;
}

async function truncateAll(store: Store): Promise<void> {
  await sql`truncate receipts, alerts, rollup_minutes, rollup_days, sample_rows, sample_minutes, asset_snapshots, assets`.execute(store.db);
  await sql`update sample_pack_state set packed_until = 'epoch', rollups_packed_until = 'epoch'`.execute(store.db);
}

export function describeStoreContract(name: string, open: OpenStore, options: ContractOptions): void {
  describe(`store contract: ${name}`, () => {
    const clock = new SimulatedClock(T0);
    let store: Store | undefined;
    const ctx: ContractContext = {
      get store() {
        if (store === undefined) throw new Error("store not open");
        return store;
      },
      clock,
    };

    beforeAll(async () => {
      store = await open(clock);
    });
    afterAll(async () => {
      await store?.close();
    });
    beforeEach(async () => {
      await truncateAll(ctx.store);
    });

    describe("migrations", () => {
      test("open applies every migration; migrating again is a no-op", async () => {
        expect(await appliedMigrations(ctx.store.db)).toEqual(knownMigrations());
        expect(await ctx.store.migrate()).toEqual([]);
      });

      test("reopening the database applies nothing and close() is idempotent", async () => {
        await ctx.store.upsertAssets([USDC]);
        const old = ctx.store;
        await old.close();
        await old.close();
        store = await open(clock);
        expect(await ctx.store.migrate()).toEqual([]);
        expect(await appliedMigrations(ctx.store.db)).toEqual(knownMigrations());
        const mints = await ctx.store.db.selectFrom("assets").select("mint").execute();
        expect(mints.map((r) => r.mint)).toEqual(options.persistent ? [USDC.mint] : []);
      });
    });

    describe("assets", () => {
      test("upsert inserts the catalog once, then only changed rows", async () => {
        const t = clock.now();
        expect(await ctx.store.upsertAssets(catalog.all)).toBe(catalog.all.length);
        expect(await ctx.store.upsertAssets(catalog.all)).toBe(0);
        const row = await ctx.store.db.selectFrom("assets").selectAll().where("mint", "=", USDC.mint).executeTakeFirstOrThrow();
        expect(row).toMatchObject({ symbol: "USDC", class: "stable_fiat", active: true });
        // json keeps the entry exactly as shipped, member order included.
        expect(JSON.stringify(row.entry)).toBe(JSON.stringify(USDC.entry));
        expect((row.updated_at as Date).getTime()).toBe(t);

        clock.increment(5_000);
        expect(await ctx.store.upsertAssets([{ ...USDC, active: false }, USDT])).toBe(1);
        const after = await ctx.store.db.selectFrom("assets").selectAll().where("mint", "=", USDC.mint).executeTakeFirstOrThrow();
        expect(after.active).toBe(false);
        expect((after.updated_at as Date).getTime()).toBe(t + 5_000);
        expect(await ctx.store.upsertAssets([])).toBe(0);
      });
    });

    describe("snapshots", () => {
      const base = (): SnapshotRow => {
        const e = runEngine().states.at(-1)!;
        return snapshotFromStateEvent(e, 7);
      };

      test("round-trips a snapshot from a real state event, exactly", async () => {
        await ctx.store.upsertAssets([USDC]);
        const row = base();
        expect(await ctx.store.upsertSnapshot(row)).toBe(true);
        const [got] = await ctx.store.latestSnapshots();
        expect(got).toEqual(row);
        expect(typeof got!.updated_at).toBe("number");
        expect(typeof got!.version).toBe("number");
        expect(typeof got!.discount).toBe("string");
      });

      test("keeps the newest: an older or equal write changes nothing", async () => {
        await ctx.store.upsertAssets([USDC]);
        const big = 2 ** 40;
        const newer: SnapshotRow = { ...base(), updated_at: T0 + 10_000, version: big, state: "DEPEG", band: "DEPEG" };
        expect(await ctx.store.upsertSnapshot(newer)).toBe(true);
        expect(await ctx.store.upsertSnapshot({ ...newer, updated_at: T0 + 9_999, version: big + 5, state: "PEGGED" })).toBe(false);
        expect(await ctx.store.upsertSnapshot({ ...newer, version: big - 1, state: "PEGGED" })).toBe(false);
        expect(await ctx.store.upsertSnapshot({ ...newer, state: "PEGGED" })).toBe(false);
        expect(await latestSnapshots(ctx.store.db)).toEqual([newer]);

        const tie: SnapshotRow = { ...newer, version: big + 1, state: "CRITICAL", discount: null, confidence: null };
        expect(await ctx.store.upsertSnapshot(tie)).toBe(true);
        const later: SnapshotRow = { ...newer, updated_at: T0 + 10_001, version: 0, state: "UNKNOWN", gate: "oracle_confidence" };
        expect(await ctx.store.upsertSnapshot(later)).toBe(true);
        expect(await ctx.store.latestSnapshots()).toEqual([later]);
      });

      test("many at once: per mint the newest row of the batch, and only where newer than the stored one", async () => {
        await ctx.store.upsertAssets([USDC, USDT]);
        const stored: SnapshotRow = { ...base(), updated_at: T0 + 10_000, version: 50, state: "DEPEG", circulating_supply: "123" };
        expect(await ctx.store.upsertSnapshot(stored)).toBe(true);
        const usdc = (updated_at: number, version: number, state: SnapshotRow["state"]): SnapshotRow => ({ ...stored, updated_at, version, state, circulating_supply: null });
        const usdt: SnapshotRow = { ...base(), mint: USDT.mint, updated_at: T0, version: 3 };
        // USDC: two rows older than the stored one and one newer, out of order; USDT: new.
        const applied = await ctx.store.upsertSnapshots([usdc(T0 + 9_000, 60, "PEGGED"), usdt, usdc(T0 + 11_000, 51, "CRITICAL"), usdc(T0 + 10_000, 49, "DRIFT")]);
        expect(applied).toBe(2);
        const byMint = new Map((await ctx.store.latestSnapshots()).map((r) => [r.mint, r]));
        // The supply observed earlier stays when the newer row carries none.
        expect(byMint.get(USDC.mint)).toEqual({ ...usdc(T0 + 11_000, 51, "CRITICAL"), circulating_supply: "123" });
        expect(byMint.get(USDT.mint)).toEqual(usdt);
        expect(await ctx.store.upsertSnapshots([usdc(T0 + 10_500, 99, "PEGGED")])).toBe(0);
        expect(await ctx.store.upsertSnapshots([])).toBe(0);
      });
    });

    alertContract(ctx);
    sampleContract(ctx);
  });
}
