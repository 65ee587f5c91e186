/**
 * The signed-in user's routes (interface 4.7, addendum A): profile, preferences, subscriptions, the alerts of the
 * subscribed assets, webhooks and their delivery history. Every route authenticates the bearer session first
 * (revocation included); every lookup is scoped to that user, so someone else's resource is a plain 404.
 * `POST /v1/me/webhooks/{id}/test` and `/replay` hand work to the delivery worker (503 `not_ready` without one).
 */
import { detectChatHost } from "../../delivery/chat.ts";
import { checkDestination, systemResolve, type Resolve } from "../../delivery/index.ts";
import { timestampToWire, type EpochMs } from "../../methodology/index.ts";
import type { DeliveryRecord, SubscriptionRecord, UserRecord, WebhookFormat, WebhookRecord, WriteResult } from "../../store/index.ts";
import { listEnvelope } from "../../wire/index.ts";
import type { AccountsModel } from "../accounts-model.ts";
import type { CursorCodec } from "../cursor.ts";
import { ApiError, assetNotFound, notFound } from "../errors.ts";
import type { ReadModel } from "../read-model.ts";
import {
  ALERTS_LIMIT,
  ALERTS_OFFSET,
  AlertList,
  AlertsQueryParams,
  DELIVERIES_LIMIT,
  DeliveriesQueryParams,
  DeliveryPage,
  MePathParams,
  PreferencesPatch,
  SubscriptionCreate,
  SubscriptionList,
  SubscriptionPatch,
  Subscription,
  User,
  Webhook,
  WebhookCreate,
  WebhookList,
  WebhookPatch,
  WebhookReplay,
  WebhookReplayAccepted,
  WebhookTestAccepted,
  parseQuery,
} from "../schemas/index.ts";
import { alertRow } from "./feeds.ts";
import { authenticate, BEARER_ERRORS, BODY_ERRORS, parseJsonBody } from "./auth.ts";
import { activeAsset } from "./common.ts";
import { jsonResult, type DocumentedRoute } from "./spec.ts";

export interface MeRouteOptions {
  /** DNS resolution for the webhook destination check (default: the system resolver). Tests pass a fake. */
  readonly resolve?: Resolve;
  /** Tests only: accept loopback destinations (a receiver on this machine). Default false. */
  readonly allowLoopbackForTests?: boolean;
  /** Destination ports webhook URLs may use besides 443 (WEBHOOK_ALLOWED_PORTS). Default none. */
  readonly allowedPorts?: readonly number[];
}

const ts = (ms: EpochMs): string => timestampToWire(ms);
const tsOrNull = (ms: EpochMs | null): string | null => (ms === null ? null : timestampToWire(ms));

export function userBody(u: UserRecord) {
  return {
    id: u.id,
    telegram_id: u.telegram_id,
    username: u.username ?? "",
    first_name: u.first_name,
    locale: u.locale,
    created_at: ts(u.created_at),
    preferences: u.preferences,
  };
}

export function subscriptionBody(s: SubscriptionRecord) {
  return {
    id: s.id,
    asset: s.asset,
    channel: s.channel,
    created_at: ts(s.created_at),
    is_active: s.is_active,
    threshold_bps: s.threshold_bps,
    ...(s.last_fired_at === null ? {} : { last_fired_at: ts(s.last_fired_at) }),
  };
}

export function webhookBody(w: WebhookRecord) {
  return {
    id: w.id,
    url: w.url,
    asset: w.asset,
    threshold_bps: w.threshold_bps,
    is_active: w.is_active,
    created_at: ts(w.created_at),
    updated_at: ts(w.updated_at),
    last_delivery_at: tsOrNull(w.last_delivery_at),
    last_status: w.last_status,
    consecutive_failures: w.consecutive_failures,
    format: w.format,
  };
}

export function deliveryBody(d: DeliveryRecord) {
  return {
    id: d.id,
    event_id: d.event_id,
    alert_id: d.alert_id,
    attempt: d.attempt,
    max_attempts: d.max_attempts,
    status: d.status,
    response_status: d.response_status,
    error: d.error,
    duration_ms: d.duration_ms,
    request_headers: d.request_headers,
    response_body_excerpt: d.response_body_excerpt,
    scheduled_at: ts(d.scheduled_at),
    sent_at: tsOrNull(d.sent_at),
    next_attempt_at: tsOrNull(d.next_attempt_at),
  };
}

/** The value of a write, or its refusal as an ApiError. */
function written<T>(r: WriteResult<T>, what: string, cap: string): T {
  switch (r.kind) {
    case "ok":
      return r.value;
    case "not_found":
      throw notFound(`no such ${what}`);
    case "conflict":
      throw new ApiError("conflict", r.reason === "limit" ? `at most ${cap} per user` : `an active ${what} for this asset already exists; PATCH or DELETE it`);
  }
}

/** A chat service gets an unsigned chat message (it cannot verify our signature); any other host signed JSON. */
const formatFor = (url: string): WebhookFormat => (detectChatHost(url) === null ? "signed" : "chat");

type Defined<T> = { [K in keyof T]?: Exclude<T[K], undefined> };

/** A parsed patch without its absent members (zod types them `T | undefined`; the repositories take `T?`). */
function defined<T extends object>(o: T): Defined<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Defined<T>;
}

const PRIVATE = { "cache-control": "no-store" } as const;

/** How far back a replay window may start (addendum A). */
export const REPLAY_MAX_AGE_MS = 7 * 86_400_000;

/** `cursors` signs and checks the deliveries listing's `next_before` / `before` (one listing per webhook). */
export function meRoutes(rm: ReadModel, accounts: AccountsModel, cursors: CursorCodec, opts: MeRouteOptions = {}): DocumentedRoute[] {
  const resolve = opts.resolve ?? systemResolve;
  const auth = (req: Parameters<typeof authenticate>[2]) => authenticate(rm, accounts, req);

  /** The catalog entry of a symbol in a path (inactive assets too, so old subscriptions can be changed). */
  const knownAsset = (symbol: string) => {
    const a = rm.catalog.bySymbol(symbol);
    if (a === undefined) throw assetNotFound(symbol);
    return a;
  };

  const checkedUrl = async (url: string): Promise<string> => {
    const c = await checkDestination(url, {
      resolve,
      allowLoopbackForTests: opts.allowLoopbackForTests === true,
      ...(opts.allowedPorts === undefined ? {} : { allowedPorts: opts.allowedPorts }),
    });
    if (!c.ok) throw new ApiError(c.apiError, `url: ${c.message}`);
    return c.url;
  };

  const ownWebhook = async (userId: number, id: string): Promise<WebhookRecord> => {
    const w = await accounts.webhook(userId, id);
    if (w === undefined) throw notFound("no such webhook");
    return w;
  };

  const bearer = { tags: ["me"], security: "bearer" } as const;

  return [
    {
      method: "GET",
      path: "/v1/me",
      handler: async (req) => jsonResult(200, userBody((await auth(req)).user), PRIVATE),
      spec: { ...bearer, summary: "The signed-in user", responses: { 200: User }, errors: [...BEARER_ERRORS] },
    },
    {
      method: "PATCH",
      path: "/v1/me/preferences",
      handler: async (req) => {
        const { user } = await auth(req);
        const patch = defined(parseJsonBody(req, PreferencesPatch));
        const updated = await accounts.updatePreferences(user.id, patch);
        if (updated === undefined) throw new ApiError("invalid_token", "the session's user does not exist");
        return jsonResult(200, userBody(updated), PRIVATE);
      },
      spec: {
        ...bearer,
        summary: "Update preferences",
        description: "Any subset of the preferences; the others keep their values. Answers the updated user.",
        requestBody: { schema: PreferencesPatch },
        responses: { 200: User },
        errors: [...BEARER_ERRORS, ...BODY_ERRORS],
      },
    },
    {
      method: "GET",
      path: "/v1/me/subs",
      handler: async (req) => {
        const { user } = await auth(req);
        return jsonResult(200, (await accounts.subscriptions(user.id)).map(subscriptionBody), PRIVATE);
      },
      spec: { ...bearer, summary: "Alert subscriptions", description: "A bare array, active subscriptions first.", responses: { 200: SubscriptionList }, errors: [...BEARER_ERRORS] },
    },
    {
      method: "POST",
      path: "/v1/me/subs",
      handler: async (req) => {
        const { user } = await auth(req);
        const body = parseJsonBody(req, SubscriptionCreate);
        const asset = activeAsset(rm, body.asset);
        const sub = written(
          await accounts.createSubscription(user.id, { asset: asset.symbol, mint: asset.mint, channel: body.channel, threshold_bps: body.threshold_bps }, rm.clock.now()),
          "subscription",
          "50 active subscriptions",
        );
        return jsonResult(201, subscriptionBody(sub), PRIVATE);
      },
      spec: {
        ...bearer,
        summary: "Subscribe to an asset",
        description: "At most one active subscription per asset and 50 per user (409 `conflict`). An unknown or inactive asset is `asset_not_found`.",
        requestBody: { schema: SubscriptionCreate },
        responses: { 201: Subscription },
        errors: [...BEARER_ERRORS, ...BODY_ERRORS, "asset_not_found", "conflict"],
      },
    },
    {
      method: "PATCH",
      path: "/v1/me/subs/{asset}",
      handler: async (req) => {
        const { user } = await auth(req);
        const asset = knownAsset(req.params["asset"]!);
        const patch = defined(parseJsonBody(req, SubscriptionPatch));
        const sub = written(await accounts.updateSubscription(user.id, asset.mint, patch), "subscription", "50 active subscriptions");
        return jsonResult(200, subscriptionBody(sub), PRIVATE);
      },
      spec: {
        ...bearer,
        summary: "Change a subscription",
        description: "Changes the active subscription to the asset, or re-activates the latest one (`is_active: true`, within the cap of 50).",
        params: { asset: MePathParams.asset },
        requestBody: { schema: SubscriptionPatch },
        responses: { 200: Subscription },
        errors: [...BEARER_ERRORS, ...BODY_ERRORS, "asset_not_found", "not_found", "conflict"],
      },
    },
    {
      method: "DELETE",
      path: "/v1/me/subs/{asset}",
      handler: async (req) => {
        const { user } = await auth(req);
        const asset = knownAsset(req.params["asset"]!);
        if (!(await accounts.deactivateSubscription(user.id, asset.mint))) throw notFound("no active subscription to this asset");
        return { status: 204 };
      },
      spec: {
        ...bearer,
        summary: "Unsubscribe",
        description: "Soft delete: the subscription stays listed with `is_active` false.",
        params: { asset: MePathParams.asset },
        responses: { 204: null },
        errors: [...BEARER_ERRORS, "asset_not_found", "not_found"],
      },
    },
    {
      method: "GET",
      path: "/v1/me/alerts",
      handler: async (req) => {
        const { user } = await auth(req);
        const q = parseQuery(req.query, AlertsQueryParams);
        const limit = q.limit ?? ALERTS_LIMIT.default;
        const offset = q.offset ?? ALERTS_OFFSET.default;
        const mints = [...new Set((await accounts.subscriptions(user.id)).filter((s) => s.is_active).map((s) => s.mint))];
        // One newest-first query per subscribed asset (at most 50), merged: each needs only its first offset+limit rows.
        const pages = await Promise.all(
          mints.map((mint) => rm.alerts({ ...(q.since === undefined ? {} : { since: q.since }), mint, limit: offset + limit, offset: 0 })),
        );
        const rows = pages
          .flat()
          .sort((a, b) => b.detected_at - a.detected_at || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))
          .slice(offset, offset + limit);
        return jsonResult(200, listEnvelope(rows.map(alertRow), rm.clock.now()), PRIVATE);
      },
      spec: {
        ...bearer,
        summary: "Transitions of the subscribed assets",
        description: "Alert rows (as /v1/alerts) of the assets with an active subscription, newest first. Walk with `since`, `limit` and `offset`.",
        query: AlertsQueryParams,
        responses: { 200: AlertList },
        errors: [...BEARER_ERRORS, "invalid_query"],
      },
    },
    {
      method: "GET",
      path: "/v1/me/webhooks",
      handler: async (req) => {
        const { user } = await auth(req);
        return jsonResult(200, listEnvelope((await accounts.webhooks(user.id)).map(webhookBody), rm.clock.now()), PRIVATE);
      },
      spec: { ...bearer, summary: "Webhooks", description: "Newest first; deleted (inactive) ones included.", responses: { 200: WebhookList }, errors: [...BEARER_ERRORS] },
    },
    {
      method: "POST",
      path: "/v1/me/webhooks",
      handler: async (req) => {
        const { user } = await auth(req);
        const body = parseJsonBody(req, WebhookCreate);
        const asset = activeAsset(rm, body.asset);
        const url = await checkedUrl(body.url);
        const hook = written(
          await accounts.createWebhook(user.id, { url, asset: asset.symbol, mint: asset.mint, threshold_bps: body.threshold_bps, format: formatFor(url) }, rm.clock.now()),
          "webhook",
          "10 active webhooks",
        );
        return jsonResult(201, webhookBody(hook), PRIVATE);
      },
      spec: {
        ...bearer,
        summary: "Register a webhook",
        description:
          "The URL must be https on a public host: private, loopback, link-local and metadata addresses (in any notation, or behind a name that resolves to one) are refused with `invalid_body`. At most 10 active webhooks per user (409 `conflict`).",
        requestBody: { schema: WebhookCreate },
        responses: { 201: Webhook },
        errors: [...BEARER_ERRORS, ...BODY_ERRORS, "asset_not_found", "conflict"],
      },
    },
    {
      method: "PATCH",
      path: "/v1/me/webhooks/{id}",
      handler: async (req) => {
        const { user } = await auth(req);
        const patch = defined(parseJsonBody(req, WebhookPatch));
        await ownWebhook(user.id, req.params["id"]!);
        const url = patch.url === undefined ? undefined : await checkedUrl(patch.url);
        const hook = written(
          await accounts.updateWebhook(
            user.id,
            req.params["id"]!,
            { ...patch, ...(url === undefined ? {} : { url, format: formatFor(url) }) },
            rm.clock.now(),
          ),
          "webhook",
          "10 active webhooks",
        );
        return jsonResult(200, webhookBody(hook), PRIVATE);
      },
      spec: {
        ...bearer,
        summary: "Change a webhook",
        description: "A new URL is checked like a new registration. Re-activating counts against the cap of 10.",
        params: { id: MePathParams.id },
        requestBody: { schema: WebhookPatch },
        responses: { 200: Webhook },
        errors: [...BEARER_ERRORS, ...BODY_ERRORS, "not_found", "conflict"],
      },
    },
    {
      method: "DELETE",
      path: "/v1/me/webhooks/{id}",
      handler: async (req) => {
        const { user } = await auth(req);
        const hook = written(await accounts.updateWebhook(user.id, req.params["id"]!, { is_active: false }, rm.clock.now()), "webhook", "10 active webhooks");
        return jsonResult(200, webhookBody(hook), PRIVATE);
      },
      spec: {
        ...bearer,
        summary: "Delete a webhook",
        description: "Soft delete: answers the record with `is_active` false; its delivery history is kept.",
        params: { id: MePathParams.id },
        responses: { 200: Webhook },
        errors: [...BEARER_ERRORS, "not_found"],
      },
    },
    {
      method: "GET",
      path: "/v1/me/webhooks/{id}/deliveries",
      handler: async (req) => {
        const { user } = await auth(req);
        const q = parseQuery(req.query, DeliveriesQueryParams);
        const hook = await ownWebhook(user.id, req.params["id"]!);
        const limit = q.limit ?? DELIVERIES_LIMIT.default;
        const listing = `deliveries:${hook.id}`;
        const before = q.before === undefined ? undefined : cursors.verify(listing, q.before);
        const rows = await accounts.deliveries(hook.id, {
          limit,
          ...(before === undefined ? {} : { before: { scheduled_at: before.detected_at, id: before.id } }),
        });
        const last = rows.at(-1);
        const next = rows.length === limit && last !== undefined ? cursors.encode(listing, { detected_at: last.scheduled_at, id: last.id }) : null;
        return jsonResult(200, { ...listEnvelope(rows.map(deliveryBody), rm.clock.now()), next_before: next }, PRIVATE);
      },
      spec: {
        ...bearer,
        summary: "Delivery history",
        description: "Every delivery attempt of the webhook, newest first; page with `before` (the previous page's `next_before`).",
        params: { id: MePathParams.id },
        query: DeliveriesQueryParams,
        responses: { 200: DeliveryPage },
        errors: [...BEARER_ERRORS, "invalid_query", "invalid_cursor", "not_found"],
      },
    },
    {
      method: "POST",
      path: "/v1/me/webhooks/{id}/test",
      handler: async (req) => {
        const { user } = await auth(req);
        const hook = await ownWebhook(user.id, req.params["id"]!);
        if (accounts.delivery === undefined) throw new ApiError("not_ready", "webhook delivery is not running");
        return jsonResult(202, { delivery_id: await accounts.delivery.test(hook) }, PRIVATE);
      },
      spec: {
        ...bearer,
        summary: "Send a test event",
        description:
          "Queues a synthetic transition, marked `test: true` in the payload, to the webhook: signed (or chat-formatted) and retried exactly as real events are. Follow it in the delivery history.",
        params: { id: MePathParams.id },
        responses: { 202: WebhookTestAccepted },
        errors: [...BEARER_ERRORS, "not_found", "not_ready"],
      },
    },
    {
      method: "POST",
      path: "/v1/me/webhooks/{id}/replay",
      handler: async (req) => {
        const { user } = await auth(req);
        const body = parseJsonBody(req, WebhookReplay);
        const hook = await ownWebhook(user.id, req.params["id"]!);
        const now = rm.clock.now();
        const since = Date.parse(body.since);
        const until = body.until === undefined ? null : Date.parse(body.until);
        if (since < now - REPLAY_MAX_AGE_MS) throw new ApiError("invalid_body", "since: at most 7 days back");
        if (until !== null && until < since) throw new ApiError("invalid_body", "until: before since");
        if (accounts.delivery === undefined) throw new ApiError("not_ready", "webhook delivery is not running");
        return jsonResult(202, { queued: await accounts.delivery.replay(hook, { since, until }) }, PRIVATE);
      },
      spec: {
        ...bearer,
        summary: "Replay undelivered events",
        description:
          "Sends again every event of this webhook first scheduled in `[since, until]` that no attempt delivered (and none is still being retried), each with its original event id, so receivers de-duplicate them. `since` at most 7 days back.",
        params: { id: MePathParams.id },
        requestBody: { schema: WebhookReplay },
        responses: { 202: WebhookReplayAccepted },
        errors: [...BEARER_ERRORS, ...BODY_ERRORS, "not_found", "not_ready"],
      },
    },
  ];
}
