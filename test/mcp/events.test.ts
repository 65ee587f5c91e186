/**
 * The transition cursor of subscribe_peg_events and /x402/events over a real store (PGlite): stream order, nothing
 * skipped at a gap a projection has not filled yet, a gap that stays open passed over after its grace, and a bounded
 * wait that returns as soon as a new transition is stored.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemClock } from "../../src/clock.ts";
import { storeEvents } from "../../src/mcp/events.ts";
import { openStore, type Store } from "../../src/store/index.ts";
import { catalog, runEngine } from "../http/fixtures.ts";
import { sleep } from "../support/ports.ts";

let store: Store;
const receipts = runEngine();
const insert = (i: number, seq: number) =>
  store.insertTransition(receipts[i]!, { seq, monitoringOnly: false, calibration: "calibrated" });

beforeAll(async () => {
  store = await openStore({ kind: "pglite-memory" }, systemClock);
  await store.upsertAssets(catalog.all);
});

afterAll(async () => {
  await store.close();
});

describe("storeEvents", () => {
  it("pages in stream order, holds back at a gap, passes it over after the grace, and wakes a waiting call", async () => {
    expect(receipts.length).toBe(5);
    const events = storeEvents(store.db, systemClock, { pollMs: 20, gapGraceMs: 300 });
    expect(await events.latest()).toBe(0);
    expect(await events.after(0, { limit: 10, waitMs: 0 })).toEqual({ events: [], next_cursor: 0 });

    await insert(1, 2);
    await insert(0, 1);
    await insert(3, 4); // 3 is not projected yet
    const first = await events.after(0, { limit: 10, waitMs: 0 });
    expect(first.events.map((e) => [e.seq, e.id])).toEqual([
      [1, receipts[0]!.alert_id],
      [2, receipts[1]!.alert_id],
    ]);
    expect(first.next_cursor).toBe(2);
    expect(first.events[0]).toMatchObject({ asset: receipts[0]!.asset, to_state: receipts[0]!.to_state, receipt_url: `/v1/audit/${receipts[0]!.alert_id}` });
    expect(await events.after(0, { limit: 1, waitMs: 0 })).toMatchObject({ next_cursor: 1 });

    // Within the grace the gap holds the answer back; once 3 lands it is served in order.
    expect(await events.after(2, { limit: 10, waitMs: 0 })).toEqual({ events: [], next_cursor: 2 });
    await insert(2, 3);
    expect((await events.after(2, { limit: 10, waitMs: 0 })).events.map((e) => e.seq)).toEqual([3, 4]);

    // A waiting call wakes when a transition is stored; this one leaves a gap (5 never comes), which holds it back
    // for the grace and is then passed over.
    expect(await events.latest()).toBe(4);
    const started = Date.now();
    const waiting = events.after(4, { limit: 10, waitMs: 5_000 });
    await sleep(150);
    await insert(4, 6);
    const page = await waiting;
    expect(page).toMatchObject({ next_cursor: 6 });
    expect(page.events.map((e) => e.seq)).toEqual([6]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
    expect(Date.now() - started).toBeLessThan(2_000);
    // And an empty wait ends at its bound, with the cursor unchanged.
    const t = Date.now();
    expect(await events.after(6, { limit: 10, waitMs: 200 })).toEqual({ events: [], next_cursor: 6 });
    expect(Date.now() - t).toBeGreaterThanOrEqual(190);
  });
});
