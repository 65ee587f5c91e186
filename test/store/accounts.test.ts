/**
 * The account repositories as a contract: the same suite on PGlite (in memory) and on a real PostgreSQL this test
 * starts itself, so int8 ids, timestamps and the conditional updates behave the same on both drivers.
 */
import { sql } from "kysely";
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "vitest";
import { SimulatedClock } from "../../src/clock.ts";
import {
  createSubscription,
  createWebhook,
  deactivateSubscription,
  deliveriesOf,
  insertDelivery,
  insertMagicLink,
  isRevoked,
  loadSigningKeys,
  magicLinkByHash,
  openStore,
  purgeExpiredAuth,
  revokeToken,
  saveSigningKeys,
  subscriptionsOf,
  updatePreferences,
  updateSubscription,
  updateWebhook,
  upsertTelegramUser,
  useMagicLink,
  userById,
  webhookOf,
  webhooksOf,
  type Executor,
  type NewDelivery,
  type Store,
} from "../../src/store/index.ts";
import { describeWithPostgres } from "../support/postgres.ts";
import { T0, USDC, USDT, catalog } from "./fixtures.ts";

const HASH = "a".repeat(64);

function accountsContract(name: string, open: (clock: SimulatedClock) => Promise<Store>): void {
  describe(`accounts contract: ${name}`, () => {
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
      await sql`truncate deliveries, webhooks, subscriptions, magic_links, revoked_tokens, users, signing_keys restart identity cascade`.execute(db());
    });

    const user = (telegram_id = 12345678901) => upsertTelegramUser(db(), { telegram_id, username: "alice", first_name: "Alice" }, T0);

    test("users: created once by telegram_id, names refreshed, ids and instants normalised", async () => {
      const a = await user();
      expect(a).toEqual({
        id: 1,
        telegram_id: 12345678901,
        username: "alice",
        first_name: "Alice",
        locale: "en",
        preferences: { locale: "en", timezone: "UTC", quiet_hours: null, digest: "off", min_severity: "DRIFT" },
        created_at: T0,
      });
      const again = await upsertTelegramUser(db(), { telegram_id: 12345678901, username: null, first_name: "Al" }, T0 + 1000);
      expect(again).toMatchObject({ id: 1, username: null, first_name: "Al", created_at: T0 });
      expect(await userById(db(), 1)).toEqual(again);
      expect(await userById(db(), 2)).toBeUndefined();
      expect(await userById(db(), -1)).toBeUndefined();
    });

    test("preferences: a patch merges, the locale follows into the user", async () => {
      const a = await user();
      const b = await updatePreferences(db(), a.id, { locale: "de", quiet_hours: { start: "22:00", end: "07:00" } });
      expect(b!.locale).toBe("de");
      expect(b!.preferences).toEqual({ locale: "de", timezone: "UTC", quiet_hours: { start: "22:00", end: "07:00" }, digest: "off", min_severity: "DRIFT" });
      const c = await updatePreferences(db(), a.id, { min_severity: "DEPEG" });
      expect(c!.preferences).toMatchObject({ locale: "de", quiet_hours: { start: "22:00", end: "07:00" }, min_severity: "DEPEG" });
      expect(await updatePreferences(db(), 999, { digest: "daily" })).toBeUndefined();
    });

    test("revocation is idempotent and purged once the token has expired", async () => {
      expect(await isRevoked(db(), "jti-1234567890abcdef")).toBe(false);
      await revokeToken(db(), "jti-1234567890abcdef", T0 + 1000, T0);
      await revokeToken(db(), "jti-1234567890abcdef", T0 + 1000, T0);
      expect(await isRevoked(db(), "jti-1234567890abcdef")).toBe(true);
      expect(await purgeExpiredAuth(db(), T0 + 999)).toEqual({ revoked: 0, magic: 0 });
      expect(await purgeExpiredAuth(db(), T0 + 1000)).toEqual({ revoked: 1, magic: 0 });
      expect(await isRevoked(db(), "jti-1234567890abcdef")).toBe(false);
    });

    test("a magic link is used once, even by concurrent exchanges, and never after it expires", async () => {
      const a = await user();
      await insertMagicLink(db(), { tokenHash: HASH, userId: a.id, expiresAt: T0 + 600_000 });
      expect(await magicLinkByHash(db(), HASH)).toEqual({ tokenHash: HASH, userId: a.id, expiresAt: T0 + 600_000, usedAt: null });
      const tries = await Promise.all([1, 2, 3, 4].map(() => useMagicLink(db(), HASH, T0 + 1)));
      expect(tries.filter((t) => t === a.id)).toHaveLength(1);
      expect(tries.filter((t) => t === null)).toHaveLength(3);
      expect((await magicLinkByHash(db(), HASH))!.usedAt).toBe(T0 + 1);

      const other = "b".repeat(64);
      await insertMagicLink(db(), { tokenHash: other, userId: a.id, expiresAt: T0 + 600_000 });
      expect(await useMagicLink(db(), other, T0 + 600_000)).toBeNull();
      expect(await useMagicLink(db(), "c".repeat(64), T0)).toBeNull();
      expect(await purgeExpiredAuth(db(), T0 + 600_000)).toEqual({ revoked: 0, magic: 2 });
    });

    test("subscriptions: one active per asset, active first, soft delete, the cap, re-activation", async () => {
      const a = await user();
      const s = { asset: "USDC", mint: USDC.mint, channel: "webhook" as const, threshold_bps: 50 };
      const first = await createSubscription(db(), a.id, s, T0);
      expect(first).toEqual({
        kind: "ok",
        value: { id: 1, user_id: a.id, ...s, is_active: true, created_at: T0, last_fired_at: null },
      });
      expect(await createSubscription(db(), a.id, s, T0)).toEqual({ kind: "conflict", reason: "duplicate" });
      await createSubscription(db(), a.id, { ...s, asset: "USDT", mint: USDT.mint }, T0 + 1);
      expect(await deactivateSubscription(db(), a.id, USDC.mint)).toBe(true);
      expect(await deactivateSubscription(db(), a.id, USDC.mint)).toBe(false);
      const list = await subscriptionsOf(db(), a.id);
      expect(list.map((x) => [x.asset, x.is_active])).toEqual([["USDT", true], ["USDC", false]]);

      const patched = await updateSubscription(db(), a.id, USDT.mint, { threshold_bps: 75, channel: "dashboard" });
      expect(patched).toMatchObject({ kind: "ok", value: { threshold_bps: 75, channel: "dashboard", is_active: true } });
      expect(await updateSubscription(db(), a.id, "nope", { threshold_bps: 1 })).toEqual({ kind: "not_found" });

      // The cap: USDT is active, so with a cap of 1 neither a new one nor re-activating USDC fits.
      expect(await createSubscription(db(), a.id, { ...s, asset: "X", mint: "X" }, T0, 1)).toEqual({ kind: "conflict", reason: "limit" });
      expect(await updateSubscription(db(), a.id, USDC.mint, { is_active: true }, 1)).toEqual({ kind: "conflict", reason: "limit" });
      expect(await updateSubscription(db(), a.id, USDC.mint, { is_active: true })).toMatchObject({ kind: "ok", value: { is_active: true, asset: "USDC" } });

      // Someone else's subscriptions are invisible.
      const b = await user(42);
      expect(await subscriptionsOf(db(), b.id)).toEqual([]);
      expect(await updateSubscription(db(), b.id, USDT.mint, { threshold_bps: 1 })).toEqual({ kind: "not_found" });
      expect(await createSubscription(db(), 999, s, T0)).toEqual({ kind: "not_found" });
    });

    test("concurrent creates for one asset: exactly one wins", async () => {
      const a = await user();
      const s = { asset: "USDC", mint: USDC.mint, channel: "webhook" as const, threshold_bps: 50 };
      const r = await Promise.all([1, 2, 3].map(() => createSubscription(db(), a.id, s, T0)));
      expect(r.filter((x) => x.kind === "ok")).toHaveLength(1);
      expect(r.filter((x) => x.kind === "conflict")).toHaveLength(2);
    });

    test("webhooks: owned, capped, updated with updated_at, soft-deleted", async () => {
      const a = await user();
      const b = await user(42);
      const w = { url: "https://hooks.example.com/peg", asset: "USDC", mint: USDC.mint, threshold_bps: 25, format: "signed" as const };
      const created = await createWebhook(db(), a.id, w, T0);
      if (created.kind !== "ok") throw new Error("not created");
      expect(created.value).toMatchObject({ ...w, user_id: a.id, is_active: true, created_at: T0, updated_at: T0, last_delivery_at: null, last_status: null, consecutive_failures: 0 });
      const id = created.value.id;
      expect(await webhookOf(db(), a.id, id)).toEqual(created.value);
      expect(await webhookOf(db(), a.id, id.toUpperCase())).toEqual(created.value);
      expect(await webhookOf(db(), b.id, id)).toBeUndefined();
      expect(await webhookOf(db(), a.id, "not-a-uuid")).toBeUndefined();
      expect(await createWebhook(db(), a.id, w, T0, 1)).toEqual({ kind: "conflict", reason: "limit" });

      const off = await updateWebhook(db(), a.id, id, { is_active: false }, T0 + 5);
      expect(off).toMatchObject({ kind: "ok", value: { is_active: false, updated_at: T0 + 5, created_at: T0 } });
      expect(await updateWebhook(db(), b.id, id, { threshold_bps: 1 }, T0)).toEqual({ kind: "not_found" });
      await createWebhook(db(), a.id, { ...w, asset: "USDT", mint: USDT.mint }, T0 + 10, 1);
      expect(await updateWebhook(db(), a.id, id, { is_active: true }, T0 + 11, 1)).toEqual({ kind: "conflict", reason: "limit" });
      expect((await webhooksOf(db(), a.id)).map((x) => x.asset)).toEqual(["USDT", "USDC"]);
      expect(await webhooksOf(db(), b.id)).toEqual([]);
    });

    test("delivery records: newest first, keyset pages, every column round-trips", async () => {
      const a = await user();
      const created = await createWebhook(db(), a.id, { url: "https://h.example.com/", asset: "USDC", mint: USDC.mint, threshold_bps: 0, format: "signed" }, T0);
      if (created.kind !== "ok") throw new Error("not created");
      const base: NewDelivery = {
        webhook_id: created.value.id,
        event_id: "0b9c3c52-1a2b-4c3d-8e4f-5a6b7c8d9e0f",
        alert_id: null,
        attempt: 1,
        max_attempts: 6,
        status: "failed",
        response_status: 503,
        error: "http_status",
        duration_ms: 120,
        request_headers: { "x-svc-event-id": "0b9c3c52-1a2b-4c3d-8e4f-5a6b7c8d9e0f" },
        response_body_excerpt: "busy",
        scheduled_at: T0,
        sent_at: T0 + 1,
        next_attempt_at: T0 + 5000,
      };
      const rows = [];
      for (let i = 0; i < 5; i++) rows.push(await insertDelivery(db(), { ...base, attempt: i + 1, scheduled_at: T0 + (i < 2 ? 0 : i) * 1000 }));
      expect(rows[0]).toEqual({ ...base, id: rows[0]!.id, test: false });
      const page1 = await deliveriesOf(db(), created.value.id, { limit: 3 });
      expect(page1.map((d) => d.attempt)).toEqual([5, 4, 3]);
      const last = page1.at(-1)!;
      const page2 = await deliveriesOf(db(), created.value.id, { limit: 3, before: { scheduled_at: last.scheduled_at, id: last.id } });
      expect(page2.map((d) => d.attempt).sort()).toEqual([1, 2]);
      const tie = page2[0]!;
      const page3 = await deliveriesOf(db(), created.value.id, { limit: 3, before: { scheduled_at: tie.scheduled_at, id: tie.id } });
      expect(page3.map((d) => d.id)).toEqual([page2[1]!.id]);
      expect(await deliveriesOf(db(), "bad", { limit: 3 })).toEqual([]);
    });

    test("signing keys: saved, updated in place, removed when dropped from the set", async () => {
      const k = { kid: "0123456789abcdef", alg: "Ed25519" as const, status: "active" as const, created_at: T0, retires_at: null, public_key: "cHVi", private_key: "-----PEM-----" };
      await saveSigningKeys(db(), [k]);
      expect(await loadSigningKeys(db())).toEqual([k]);
      const k2 = { ...k, kid: "fedcba9876543210", created_at: T0 + 1 };
      const retiring = { ...k, status: "retiring" as const, retires_at: T0 + 7 * 86_400_000 };
      await saveSigningKeys(db(), [retiring, k2]);
      expect(await loadSigningKeys(db())).toEqual([retiring, k2]);
      await saveSigningKeys(db(), [k2]);
      expect(await loadSigningKeys(db())).toEqual([k2]);
    });

    test("the catalog is untouched by accounts (no foreign key on assets)", async () => {
      await store!.upsertAssets([USDC]);
      await sql`truncate receipts, alerts, rollup_minutes, sample_rows, sample_minutes, asset_snapshots, assets`.execute(db());
      expect(catalog.bySymbol("USDC")).toBeDefined();
    });
  });
}

accountsContract("pglite in memory", (clock) => openStore({ kind: "pglite-memory" }, clock));

describeWithPostgres("postgres", (url) => {
  accountsContract("postgres", (clock) => openStore({ kind: "postgres", url: url(), max: 4 }, clock));
});
