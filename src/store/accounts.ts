/**
 * Account repositories (issue 6): users (users.ts), revoked sessions and magic links (sessions.ts), subscriptions
 * (subscriptions.ts), webhooks and delivery records (webhooks.ts) and the webhook signing keys (signing-keys.ts); this
 * module is their one entry. Every function takes the executor first (STYLE: kysely example app) and returns epoch-ms
 * instants and safe integers on both drivers (normalise.ts).
 *
 * Invariants kept here rather than in the routes, so two concurrent requests cannot break them:
 * - a magic link is used once: the exchange is one conditional update (`... where used_at is null`);
 * - at most one active subscription per (user, asset): a partial unique index, checked first for a clean answer;
 * - the per-user caps (50 active subscriptions, 10 active webhooks): counted under a row lock on the user, so two
 *   creates of the same user are serialised.
 */
export {
  DEFAULT_LOCALE,
  MIN_SEVERITIES,
  type MinSeverity,
  defaultPreferences,
  type Preferences,
  updatePreferences,
  upsertTelegramUser,
  userById,
  userFromRow,
  type UserRecord,
  type WriteResult,
} from "./users.ts";
export {
  insertMagicLink,
  isRevoked,
  magicLinkByHash,
  type MagicLinkRecord,
  purgeExpiredAuth,
  revokeToken,
  useMagicLink,
} from "./sessions.ts";
export {
  createSubscription,
  deactivateSubscription,
  MAX_ACTIVE_SUBSCRIPTIONS,
  type NewSubscription,
  SUBSCRIPTION_CHANNELS,
  type SubscriptionChannel,
  subscriptionFromRow,
  type SubscriptionPatch,
  type SubscriptionRecord,
  subscriptionsOf,
  updateSubscription,
} from "./subscriptions.ts";
export {
  createWebhook,
  deliveriesOf,
  DELIVERY_ERRORS,
  DELIVERY_STATUSES,
  type DeliveryCursor,
  type DeliveryError,
  deliveryFromRow,
  type DeliveryRecord,
  type DeliveryStatus,
  insertDelivery,
  MAX_ACTIVE_WEBHOOKS,
  type NewDelivery,
  type NewWebhook,
  updateWebhook,
  WEBHOOK_FORMATS,
  WEBHOOK_STATUSES,
  type WebhookFormat,
  webhookFromRow,
  webhookOf,
  type WebhookPatch,
  type WebhookRecord,
  webhooksOf,
  type WebhookStatus,
} from "./webhooks.ts";
export {
  loadSigningKeys,
  saveSigningKeys,
  type SigningKeyRecord,
  withSigningKeysLock,
} from "./signing-keys.ts";
