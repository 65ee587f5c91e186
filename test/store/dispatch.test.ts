/**
 * The dispatch repositories as a contract, on PGlite (in memory) and on a PostgreSQL this test starts: the dispatch
 * log (idempotent per target and alert, newest first), the active subscriptions of an asset with their users, the
 * fired stamp, and the Telegram notifications whose attempts are recorded by conditional updates (so a redelivered
 * work message can never count an attempt twice or revive a closed notification).
 */
import { randomUUID } from "node:crypto";
import { sql } from "kysely";
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "vitest";
import { SimulatedClock } from "../../src/clock.ts";
import {
  activeSubscriptionsForMint,
  createSubscription,
  deactivateSubscription,
  insertNotificationOnce,
  logSend,
  loggedSends,
  markSubscriptionFired,
  notificationById,
  openStore,
  recordNotificationAttempt,
  subscriptionIsActive,
  subscriptionTarget,
  subscriptionsOf,
  suppressNotification,
  updatePreferences,
  upsertTelegramUser,
  webhookTarget,
  type Executor,
  type Store,
} from "../../src/store/index.ts";
import { describeWithPostgres } from "../support/postgres.ts";
import { MIN, T0, USDC, USDT } from "./fixtures.ts";

function dispatchContract(name: string, open: (clock: SimulatedClock) => Promise<Store>): void {
  describe(`dispatch contract: ${name}`, () => {
    const clock = new SimulatedClock(T0);
    let store: Store | undefined;
    const db = (): Executor => store!.db;
    beforeAll(async () => {
      store = await open(clock);
    });
    afterAll(async () => {
      await store?.close();
    });
    beforeEach(async () => {
      await sql`truncate dispatch_log, notifications, subscriptions, users restart identity cascade`.execute(db());
    });

    const subscriber = async (telegram_id: number, channel: "telegram" | "dashboard" = "telegram") => {
      const u = await upsertTelegramUser(db(), { telegram_id, username: null, first_name: "T" }, T0);
      const s = await createSubscription(db(), u.id, { asset: "USDC", mint: USDC.mint, channel, threshold_bps: 25 }, T0);
      if (s.kind !== "ok") throw new Error(s.kind);
      return { user: u, sub: s.value };
    };

    test("the dispatch log: one entry per (target, alert), newest first, per target", async () => {
      const a1 = randomUUID();
      const a2 = randomUUID();
      const hook = webhookTarget(randomUUID());
      expect(await logSend(db(), hook, { alert_id: a1, asset: "USDC", to_state: "DEPEG", ts: T0 })).toBe(true);
      expect(await logSend(db(), hook, { alert_id: a1, asset: "USDC", to_state: "DEPEG", ts: T0 })).toBe(false);
      expect(await logSend(db(), hook, { alert_id: a2, asset: "USDC", to_state: "PEGGED", ts: T0 + 5 * MIN })).toBe(true);
      expect(await logSend(db(), subscriptionTarget(7), { alert_id: a1, asset: "USDC", to_state: "DEPEG", ts: T0 })).toBe(true);
      expect(await loggedSends(db(), hook)).toEqual([
        { alert_id: a2, asset: "USDC", to_state: "PEGGED", ts: T0 + 5 * MIN },
        { alert_id: a1, asset: "USDC", to_state: "DEPEG", ts: T0 },
      ]);
      expect(await loggedSends(db(), hook, 1)).toHaveLength(1);
      expect(await loggedSends(db(), subscriptionTarget(8))).toEqual([]);
    });

    test("active subscriptions of an asset come with their users' ids and preferences", async () => {
      const a = await subscriber(9_007_199_254_740_000); // a telegram id beyond 32 bits survives int8 on both drivers
      await updatePreferences(db(), a.user.id, { min_severity: "CRITICAL", quiet_hours: { start: "22:00", end: "07:00" }, timezone: "Europe/Berlin" });
      const b = await subscriber(222, "dashboard");
      const gone = await subscriber(333);
      expect(await deactivateSubscription(db(), gone.user.id, USDC.mint)).toBe(true);
      const got = await activeSubscriptionsForMint(db(), USDC.mint);
      expect(got.map((s) => s.subscription.id)).toEqual([a.sub.id, b.sub.id]);
      expect(got[0]!.user).toMatchObject({ id: a.user.id, telegram_id: 9_007_199_254_740_000 });
      expect(got[0]!.user.preferences).toMatchObject({ min_severity: "CRITICAL", timezone: "Europe/Berlin", quiet_hours: { start: "22:00", end: "07:00" } });
      expect(got[1]!.subscription.channel).toBe("dashboard");
      expect(await activeSubscriptionsForMint(db(), USDT.mint)).toEqual([]);
      expect(await subscriptionIsActive(db(), a.sub.id)).toBe(true);
      expect(await subscriptionIsActive(db(), gone.sub.id)).toBe(false);
      expect(await subscriptionIsActive(db(), 999_999)).toBe(false);
    });

    test("last_fired_at only moves forward", async () => {
      const { user, sub } = await subscriber(444);
      await markSubscriptionFired(db(), sub.id, T0 + 10 * MIN);
      await markSubscriptionFired(db(), sub.id, T0 + 5 * MIN); // a redelivered, older transition
      expect((await subscriptionsOf(db(), user.id))[0]!.last_fired_at).toBe(T0 + 10 * MIN);
      await markSubscriptionFired(db(), sub.id, T0 + 20 * MIN);
      expect((await subscriptionsOf(db(), user.id))[0]!.last_fired_at).toBe(T0 + 20 * MIN);
    });

    test("a notification is created once; each attempt is recorded once, in order; closed ones stay closed", async () => {
      const { user, sub } = await subscriber(555);
      const id = randomUUID();
      const alert = randomUUID();
      const n = { id, subscription_id: sub.id, user_id: user.id, alert_id: alert, status: "pending" as const, due_at: T0, held_for_quiet_hours: false, error: null, created_at: T0 };
      expect(await insertNotificationOnce(db(), n)).toBe(true);
      expect(await insertNotificationOnce(db(), { ...n, due_at: T0 + 1 })).toBe(false);
      expect(await notificationById(db(), id)).toMatchObject({ status: "pending", attempts: 0, due_at: T0, message_id: null, sent_at: null });

      const failed = { attempt: 1, status: "pending" as const, response_status: 429, error: "http_status: Too Many Requests", message_id: null, sent_at: T0 + 1000, due_at: T0 + 6000 };
      expect(await recordNotificationAttempt(db(), id, failed)).toBe(true);
      expect(await recordNotificationAttempt(db(), id, failed)).toBe(false); // the same attempt again
      expect(await recordNotificationAttempt(db(), id, { ...failed, attempt: 3 })).toBe(false); // out of order
      expect(await notificationById(db(), id)).toMatchObject({ status: "pending", attempts: 1, response_status: 429, due_at: T0 + 6000 });

      const delivered = { attempt: 2, status: "delivered" as const, response_status: 200, error: null, message_id: 8_000_000_001, sent_at: T0 + 7000, due_at: null };
      expect(await recordNotificationAttempt(db(), id, delivered)).toBe(true);
      expect(await notificationById(db(), id)).toMatchObject({ status: "delivered", attempts: 2, message_id: 8_000_000_001, sent_at: T0 + 7000, due_at: T0 + 6000 });
      expect(await recordNotificationAttempt(db(), id, { ...delivered, attempt: 3 })).toBe(false);
      expect(await suppressNotification(db(), id, "subscription_inactive")).toBe(false);

      const held = randomUUID();
      await insertNotificationOnce(db(), { ...n, id: held, alert_id: randomUUID(), held_for_quiet_hours: true, due_at: T0 + 8 * 3_600_000 });
      expect(await suppressNotification(db(), held, "subscription_inactive")).toBe(true);
      expect(await notificationById(db(), held)).toMatchObject({ status: "suppressed", error: "subscription_inactive", held_for_quiet_hours: true });
      expect(await notificationById(db(), "not-a-uuid")).toBeUndefined();
    });
  });
}

dispatchContract("pglite in memory", (clock) => openStore({ kind: "pglite-memory" }, clock));

describeWithPostgres("postgres", (url) => {
  dispatchContract("postgres", (clock) => openStore({ kind: "postgres", url: url(), max: 4 }, clock));
});
