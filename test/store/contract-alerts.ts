/** Store contract, part 2: transitions (alert + receipt), alert queries. */
import { describe, expect, test } from "vitest";
import { parseTimestamp, type Receipt } from "../../src/methodology/index.ts";
import { alertById, insertTransition, type Store } from "../../src/store/index.ts";
import type { ContractContext } from "./contract.ts";
import { USDC, runEngine } from "./fixtures.ts";

const meta = { seq: null, monitoringOnly: false, calibration: "calibrated" } as const;

async function count(store: Store, table: "alerts" | "receipts"): Promise<number> {
  const r = await store.db.selectFrom(table).select((eb) => eb.fn.countAll().as("n")).executeTakeFirstOrThrow();
  return Number(r.n);
}

export function alertContract(ctx: ContractContext): void {
  describe("transitions", () => {
    const { receipts } = runEngine();
    const [depeg, repeg] = receipts as [Receipt, Receipt];

    test("the engine fixture yields PEGGED -> DEPEG -> PEGGED", () => {
      expect(receipts.map((r) => `${r.from_state}->${r.to_state}`)).toEqual(["PEGGED->DEPEG", "DEPEG->PEGGED"]);
    });

    test("insert is idempotent by alert id: true, then false; one alert, one receipt", async () => {
      await ctx.store.upsertAssets([USDC]);
      expect(await ctx.store.insertTransition(depeg, meta)).toBe(true);
      expect(await ctx.store.insertTransition(depeg, { ...meta, seq: 99 })).toBe(false);
      expect(await count(ctx.store, "alerts")).toBe(1);
      expect(await count(ctx.store, "receipts")).toBe(1);
      expect((await ctx.store.alertById(depeg.alert_id))!.seq).toBeNull();
    });

    test("the stored receipt is the built receipt, member for member, and its hash column matches", async () => {
      await ctx.store.upsertAssets([USDC]);
      await ctx.store.insertTransition(depeg, meta);
      await ctx.store.insertTransition(repeg, { ...meta, monitoringOnly: true, calibration: "provisional" });
      const a = (await ctx.store.receiptById(depeg.alert_id))!;
      expect(a.receipt).toEqual(depeg);
      expect(JSON.stringify(a.receipt)).toBe(JSON.stringify(depeg));
      expect(a.receipt_sha256).toBe(depeg.receipt_sha256);
      expect(a.commit_status).toBe("not_committed_yet");
      expect(a.monitoring_only).toBe(false);
      const b = (await ctx.store.receiptById(repeg.alert_id))!;
      expect(JSON.stringify(b.receipt)).toBe(JSON.stringify(repeg));
      expect(b.commit_status).toBe("not_applicable");
      expect(b.monitoring_only).toBe(true);
    });

    test("alert rows carry exact decimals, epoch-ms instants and int8 sequences as numbers", async () => {
      await ctx.store.upsertAssets([USDC]);
      const seq = 2 ** 40 + 3;
      await ctx.store.insertTransition(repeg, { ...meta, seq });
      const a = (await ctx.store.alertById(repeg.alert_id))!;
      expect(a).toEqual({
        id: repeg.alert_id,
        asset: "USDC",
        mint: USDC.mint,
        class: "stable_fiat",
        from_state: "DEPEG",
        to_state: "PEGGED",
        discount: repeg.discount,
        discount_bps: repeg.discount_bps,
        state_reason: null,
        detected_at: parseTimestamp(repeg.detected_at),
        dispatched_at: null,
        methodology_version: repeg.methodology_version,
        monitoring_only: false,
        calibration: "calibrated",
        receipt_sha256: repeg.receipt_sha256,
        seq,
      });
      // A 50-digit fraction survives exactly: numeric, never a float.
      expect(repeg.discount.length).toBeGreaterThan(40);
      expect(typeof a.discount).toBe("string");
      expect(typeof a.detected_at).toBe("number");
    });

    test("markDispatched stamps once", async () => {
      await ctx.store.upsertAssets([USDC]);
      await ctx.store.insertTransition(depeg, meta);
      const at = ctx.clock.now() + 1_234;
      expect(await ctx.store.markDispatched(depeg.alert_id, at)).toBe(true);
      expect(await ctx.store.markDispatched(depeg.alert_id, at + 1)).toBe(false);
      expect((await ctx.store.alertById(depeg.alert_id))!.dispatched_at).toBe(at);
    });

    test("feeds are newest first with limit, offset and an inclusive since; counts agree", async () => {
      await ctx.store.upsertAssets([USDC]);
      await ctx.store.insertTransition(depeg, meta);
      await ctx.store.insertTransition(repeg, meta);
      const ids = (rows: { id: string }[]) => rows.map((r) => r.id);
      expect(ids(await ctx.store.alerts({ limit: 10, offset: 0 }))).toEqual([repeg.alert_id, depeg.alert_id]);
      expect(ids(await ctx.store.alerts({ limit: 1, offset: 1 }))).toEqual([depeg.alert_id]);
      const repegAt = parseTimestamp(repeg.detected_at)!;
      expect(ids(await ctx.store.alerts({ since: repegAt, limit: 10, offset: 0 }))).toEqual([repeg.alert_id]);
      expect(ids(await ctx.store.alerts({ mint: "other", limit: 10, offset: 0 }))).toEqual([]);
      expect(await ctx.store.countAlertsSince(repegAt)).toBe(1);
      expect(await ctx.store.countAlertsSince(repegAt + 1)).toBe(0);
      expect(await ctx.store.countAlertsSince(0)).toBe(2);
    });

    test("unknown and malformed ids are simply absent", async () => {
      expect(await ctx.store.alertById("00000000-0000-8000-8000-000000000000")).toBeUndefined();
      expect(await ctx.store.receiptById("not-a-uuid")).toBeUndefined();
      expect(await ctx.store.alertById("'; drop table alerts; --")).toBeUndefined();
    });

    test("inside a caller's transaction the write commits or rolls back with it", async () => {
      await ctx.store.upsertAssets([USDC]);
      await expect(
        ctx.store.db.transaction().execute(async (trx) => {
          expect(await insertTransition(trx, depeg, meta)).toBe(true);
          expect(await alertById(trx, depeg.alert_id)).toBeDefined();
          throw new Error("rollback");
        }),
      ).rejects.toThrow("rollback");
      expect(await count(ctx.store, "alerts")).toBe(0);
      expect(await count(ctx.store, "receipts")).toBe(0);
    });

    test("an alert for an asset the store does not know is refused, atomically", async () => {
      await expect(ctx.store.insertTransition(depeg, meta)).rejects.toThrow();
      expect(await count(ctx.store, "alerts")).toBe(0);
    });
  });
}
