/**
 * Accounts (interface 2.9-2.11, 4.6, 4.7; addendum A): request bodies and responses of the auth and `/v1/me` routes.
 * Request bodies are strict objects: an unknown key is a 400 `invalid_body` (addendum A, preferences), and the same
 * schemas document the bodies in the OpenAPI document.
 */
import { z } from "zod";
import { DELIVERY_ERRORS, DELIVERY_STATUSES, MIN_SEVERITIES, SUBSCRIPTION_CHANNELS, WEBHOOK_FORMATS, WEBHOOK_STATUSES } from "../../store/index.ts";
import { Count, Int64, Timestamp, Uuid, component, listEnvelopeOf } from "./common.ts";
import { beforeParam, cursorText, intParam, type PathParam, type QueryParam } from "./query.ts";

// ---------------------------------------------------------------------------------------------------------------
// Auth.

export const MessengerLogin = component(
  "MessengerLogin",
  z.looseObject({
    id: z.int().min(1).meta({ description: "The identity provider's user id." }),
    first_name: z.string(),
    last_name: z.string().optional(),
    username: z.string().optional(),
    photo_url: z.string().optional(),
    auth_date: z.int().min(1).meta({ description: "Unix seconds at which the widget signed the payload; at most 24 h old." }),
    hash: z.string().regex(/^[0-9a-f]{64}$/).meta({ description: "Hex HMAC-SHA256 of the data-check-string, keyed by SHA-256(bot token)." }),
  }),
  "The login widget's signed payload, passed on unchanged: every field it sent is covered by `hash`.",
);

export const MagicConsume = component("MagicConsume", z.strictObject({ token: z.string().max(128) }), "A magic-link token to exchange.");

export const LoginResponse = component(
  "LoginResponse",
  z.strictObject({
    token: z.string().meta({ description: "Session JWT (HS256), sent as `Authorization: Bearer <token>`." }),
    expires_at: Timestamp,
    user: z.strictObject({
      telegram_id: Int64,
      username: z.string().meta({ description: "Empty when the account has no public user name." }),
      locale: z.string(),
    }),
  }),
  "A new session (interface 2.11).",
);

export const MagicLink = component(
  "MagicLink",
  z.strictObject({
    token: z.string().meta({ description: "Single-use, 10 minutes; only its SHA-256 is stored." }),
    url: z.string().meta({ description: "Sign-in link relative to the service base address; the token is in the fragment, so it never reaches logs." }),
    expires_at: Timestamp,
  }),
  "A single-use sign-in link.",
);

// ---------------------------------------------------------------------------------------------------------------
// User and preferences.

const HHMM = z.string().regex(/^(?:[01]\d|2[0-3]):[0-5]\d$/, "must be HH:MM (24-hour)");

/** An IANA zone name the runtime knows (`UTC`, `Europe/Berlin`). */
const TimeZone = z
  .string()
  .max(64)
  .refine((tz) => {
    try {
      new Intl.DateTimeFormat("en", { timeZone: tz });
      return true;
    } catch {
      return false;
    }
  }, "must be an IANA time zone such as Europe/Berlin");

const Locale = z.string().regex(/^[a-z]{2,3}(?:-[A-Za-z0-9]{2,8}){0,3}$/, "must be a BCP 47 language tag such as en or pt-BR");

export const Preferences = component(
  "Preferences",
  z.strictObject({
    locale: Locale,
    timezone: TimeZone.meta({ description: "IANA time zone." }),
    quiet_hours: z.strictObject({ start: HHMM, end: HHMM }).nullable().meta({ description: "No Telegram messages between start and end (local time); null: none." }),
    digest: z.enum(["off", "daily"]),
    min_severity: z.enum(MIN_SEVERITIES).meta({ description: "Least severe state that sends a message." }),
  }),
  "Notification preferences.",
);

export const PreferencesPatch = component("PreferencesPatch", Preferences.partial(), "Any subset of Preferences; unknown keys are a 400.");

export const User = component(
  "User",
  z.strictObject({
    id: Int64,
    telegram_id: Int64,
    username: z.string().meta({ description: "Empty when the account has no public user name." }),
    first_name: z.string(),
    locale: z.string(),
    created_at: Timestamp,
    preferences: Preferences,
  }),
  "The signed-in user.",
);

// ---------------------------------------------------------------------------------------------------------------
// Subscriptions.

const ThresholdBps = z.int().min(0).max(10_000).meta({ description: "Minimum |discount| in basis points that fires, 0-10000." });
const Channel = z.enum(SUBSCRIPTION_CHANNELS);

export const Subscription = component(
  "Subscription",
  z.strictObject({
    id: Int64,
    asset: z.string(),
    channel: Channel,
    created_at: Timestamp,
    is_active: z.boolean(),
    threshold_bps: ThresholdBps,
    last_fired_at: Timestamp.optional().meta({ description: "Absent until it has fired." }),
  }),
  "An alert subscription (interface 2.9).",
);

export const SubscriptionList = component("SubscriptionList", z.array(Subscription), "The user's subscriptions, active ones first (a bare array).");

export const SubscriptionCreate = component(
  "SubscriptionCreate",
  z.strictObject({ asset: z.string().min(1).max(64), channel: Channel, threshold_bps: ThresholdBps }),
  "A new subscription; a second active one for the same asset is a 409.",
);

export const SubscriptionPatch = component(
  "SubscriptionPatch",
  z.strictObject({ threshold_bps: ThresholdBps.optional(), channel: Channel.optional(), is_active: z.boolean().optional() }),
  "Changes to a subscription.",
);

// ---------------------------------------------------------------------------------------------------------------
// Webhooks and deliveries.

const HookUrl = z.string().min(1).max(2048).meta({ description: "https URL of a public host (private, loopback and metadata addresses are refused)." });

export const Webhook = component(
  "Webhook",
  z.strictObject({
    id: Uuid,
    url: z.string(),
    asset: z.string(),
    threshold_bps: ThresholdBps,
    is_active: z.boolean(),
    created_at: Timestamp,
    updated_at: Timestamp,
    last_delivery_at: Timestamp.nullable(),
    last_status: z.enum(WEBHOOK_STATUSES).nullable(),
    consecutive_failures: Count,
    format: z.enum(WEBHOOK_FORMATS).meta({ description: "`signed` (Ed25519-signed JSON) or `chat` (an unsigned chat message for chat hosts)." }),
  }),
  "A webhook registration (addendum A).",
);

export const WebhookList = component("WebhookList", listEnvelopeOf(Webhook), "The user's webhooks, newest first, deleted ones included.");

export const WebhookCreate = component(
  "WebhookCreate",
  z.strictObject({ url: HookUrl, asset: z.string().min(1).max(64), threshold_bps: ThresholdBps }),
  "A new webhook (interface 4.7).",
);

export const WebhookPatch = component(
  "WebhookPatch",
  z.strictObject({ url: HookUrl.optional(), threshold_bps: ThresholdBps.optional(), is_active: z.boolean().optional() }),
  "Changes to a webhook; a new URL is checked again.",
);

export const Delivery = component(
  "Delivery",
  z.strictObject({
    id: Uuid,
    event_id: Uuid,
    alert_id: Uuid.nullable(),
    attempt: z.int().min(1),
    max_attempts: z.int().min(1),
    status: z.enum(DELIVERY_STATUSES),
    response_status: z.int().nullable(),
    error: z.enum(DELIVERY_ERRORS).nullable(),
    duration_ms: z.int().min(0).nullable(),
    request_headers: z.record(z.string(), z.string()).nullable(),
    response_body_excerpt: z.string().nullable().meta({ description: "At most 1 KiB." }),
    scheduled_at: Timestamp,
    sent_at: Timestamp.nullable(),
    next_attempt_at: Timestamp.nullable(),
  }),
  "One delivery attempt (addendum A).",
);

export const DeliveryPage = component(
  "DeliveryPage",
  z.strictObject({
    ok: z.boolean(),
    generated_at: Timestamp,
    count: Count,
    data: z.array(Delivery),
    next_before: cursorText.nullable().meta({ description: "Cursor for the next (older) page as `before`; null on the last page." }),
  }),
  "A page of a webhook's delivery history, newest first.",
);

// ---------------------------------------------------------------------------------------------------------------
// Parameters.

export const DELIVERIES_LIMIT = { min: 1, max: 100, default: 50 } as const;

export const DeliveriesQueryParams = {
  before: beforeParam,
  limit: { schema: intParam(DELIVERIES_LIMIT), description: "Page size; out of range is a 400.", default: DELIVERIES_LIMIT.default },
} satisfies Record<string, QueryParam<unknown>>;

export const MePathParams = {
  asset: { schema: z.string(), description: "Exact, case-sensitive asset symbol, percent-encoded." },
  id: { schema: z.string().meta({ format: "uuid" }), description: "Webhook id (UUID). Unknown, malformed or someone else's: 404." },
} satisfies Record<string, PathParam>;

export const WebhookReplay = component(
  "WebhookReplay",
  z.strictObject({
    since: Timestamp.meta({ description: "Start of the window (inclusive), at most 7 days back." }),
    until: Timestamp.optional().meta({ description: "End of the window (inclusive); default: now." }),
  }),
  "A replay window: every event of the webhook first scheduled in it that was not delivered is sent again.",
);

export const WebhookTestAccepted = component(
  "WebhookTestAccepted",
  z.strictObject({ delivery_id: Uuid }),
  "The queued test delivery; follow it in the webhook's delivery history.",
);

export const WebhookReplayAccepted = component(
  "WebhookReplayAccepted",
  z.strictObject({ queued: Count }),
  "How many undelivered events were queued again.",
);
