/**
 * What the auth and `/v1/me` routes read and write (issue 6). The service builds it over the store
 * (`createStoreAccountsModel`); route tests build the same one over an in-memory PGlite. Routes never reach the store
 * directly. Every user-scoped call takes the signed-in user's id, so a route cannot read someone else's rows.
 */
import type { EpochMs } from "../methodology/index.ts";
import {
  createSubscription,
  createWebhook,
  deactivateSubscription,
  deliveriesOf,
  insertMagicLink,
  isRevoked,
  magicLinkByHash,
  revokeToken,
  subscriptionsOf,
  updatePreferences,
  updateSubscription,
  updateWebhook,
  upsertTelegramUser,
  useMagicLink,
  userById,
  webhookOf,
  webhooksOf,
  type DeliveryCursor,
  type DeliveryRecord,
  type MagicLinkRecord,
  type NewSubscription,
  type NewWebhook,
  type Preferences,
  type Store,
  type SubscriptionPatch,
  type SubscriptionRecord,
  type UserRecord,
  type WebhookPatch,
  type WebhookRecord,
  type WriteResult,
} from "../store/index.ts";

export interface AccountsModel {
  /** Creates the login widget's user on first login, refreshes the name fields after. */
  loginTelegram(u: { readonly telegram_id: number; readonly username: string | null; readonly first_name: string }, now: EpochMs): Promise<UserRecord>;
  user(id: number): Promise<UserRecord | undefined>;
  updatePreferences(userId: number, patch: Partial<Preferences>): Promise<UserRecord | undefined>;
  /** Whether a session was logged out (checked on every authenticated request). */
  isRevoked(jti: string): Promise<boolean>;
  revoke(jti: string, expiresAt: EpochMs, now: EpochMs): Promise<void>;
  saveMagicLink(link: { readonly tokenHash: string; readonly userId: number; readonly expiresAt: EpochMs }): Promise<void>;
  magicLink(tokenHash: string): Promise<MagicLinkRecord | undefined>;
  /** Marks the link used if it still is usable, atomically; the user id, or null when another exchange won. */
  useMagicLink(tokenHash: string, now: EpochMs): Promise<number | null>;
  subscriptions(userId: number): Promise<SubscriptionRecord[]>;
  createSubscription(userId: number, s: NewSubscription, now: EpochMs): Promise<WriteResult<SubscriptionRecord>>;
  updateSubscription(userId: number, mint: string, patch: SubscriptionPatch): Promise<WriteResult<SubscriptionRecord>>;
  deactivateSubscription(userId: number, mint: string): Promise<boolean>;
  webhooks(userId: number): Promise<WebhookRecord[]>;
  webhook(userId: number, id: string): Promise<WebhookRecord | undefined>;
  createWebhook(userId: number, w: NewWebhook, now: EpochMs): Promise<WriteResult<WebhookRecord>>;
  updateWebhook(userId: number, id: string, patch: WebhookPatch, now: EpochMs): Promise<WriteResult<WebhookRecord>>;
  /** Delivery records of a webhook the caller has already checked is the user's. */
  deliveries(webhookId: string, q: { readonly limit: number; readonly before?: DeliveryCursor }): Promise<DeliveryRecord[]>;
  /**
   * Webhook delivery (the worker's dispatcher); absent when no worker runs in this process, and the test and replay
   * routes answer 503 `not_ready`.
   */
  readonly delivery?: WebhookDeliveryControl;
}

/** What the test and replay routes ask of the delivery worker. */
export interface WebhookDeliveryControl {
  /** Queues a synthetic `test: true` event to the webhook; the delivery id. */
  test(hook: WebhookRecord): Promise<string>;
  /** Queues again every undelivered event of the webhook first scheduled in the window; how many. */
  replay(hook: WebhookRecord, window: { readonly since: EpochMs; readonly until: EpochMs | null }): Promise<number>;
}

export function createStoreAccountsModel(store: Pick<Store, "db">, delivery?: WebhookDeliveryControl): AccountsModel {
  const db = store.db;
  return {
    ...(delivery === undefined ? {} : { delivery }),
    loginTelegram: (u, now) => upsertTelegramUser(db, u, now),
    user: (id) => userById(db, id),
    updatePreferences: (userId, patch) => updatePreferences(db, userId, patch),
    isRevoked: (jti) => isRevoked(db, jti),
    revoke: (jti, expiresAt, now) => revokeToken(db, jti, expiresAt, now),
    saveMagicLink: (link) => insertMagicLink(db, link),
    magicLink: (hash) => magicLinkByHash(db, hash),
    useMagicLink: (hash, now) => useMagicLink(db, hash, now),
    subscriptions: (userId) => subscriptionsOf(db, userId),
    createSubscription: (userId, s, now) => createSubscription(db, userId, s, now),
    updateSubscription: (userId, mint, patch) => updateSubscription(db, userId, mint, patch),
    deactivateSubscription: (userId, mint) => deactivateSubscription(db, userId, mint),
    webhooks: (userId) => webhooksOf(db, userId),
    webhook: (userId, id) => webhookOf(db, userId, id),
    createWebhook: (userId, w, now) => createWebhook(db, userId, w, now),
    updateWebhook: (userId, id, patch, now) => updateWebhook(db, userId, id, patch, now),
    deliveries: (webhookId, q) => deliveriesOf(db, webhookId, q),
  };
}
