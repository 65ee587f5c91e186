/**
 * The signed-in user's webhooks (interface 4.7, addendum A) and their delivery history. A webhook URL must pass the
 * destination check (https, public host); `POST /v1/me/webhooks/{id}/test` and `/replay` hand work to the delivery
 * worker.
 */
import { ApiError } from "../errors.ts";
import { listEnvelope } from "../../wire/index.ts";
import {
  DELIVERIES_LIMIT,
  DeliveriesQueryParams,
  DeliveryPage,
  MePathParams,
  Webhook,
  WebhookCreate,
  WebhookList,
  WebhookPatch,
  WebhookReplay,
  WebhookReplayAccepted,
  WebhookTestAccepted,
  parseQuery,
} from "../schemas/index.ts";
import { BEARER_ERRORS, BODY_ERRORS, parseJsonBody } from "./auth.ts";
import { activeAsset } from "./common.ts";
import { deliveryBody, webhookBody } from "./me-bodies.ts";
import { BEARER, defined, formatFor, PRIVATE, written, type MeContext } from "./me-context.ts";
import { jsonResult, type DocumentedRoute } from "./spec.ts";

/** How far back a replay window may start (addendum A). */
export const REPLAY_MAX_AGE_MS = 7 * 86_400_000;

/** The user's webhooks: list, register, change, delete. */
export function meWebhookRoutes(ctx: MeContext): DocumentedRoute[] {
  const { rm, accounts, auth, checkedUrl, ownWebhook } = ctx;
  return [
    {
      method: "GET",
      path: "/v1/me/webhooks",
      handler: async (req) => {
        const { user } = await auth(req);
        return jsonResult(200, listEnvelope((await accounts.webhooks(user.id)).map(webhookBody), rm.clock.now()), PRIVATE);
      },
      spec: { ...BEARER, summary: "Webhooks", description: "Newest first; deleted (inactive) ones included.", responses: { 200: WebhookList }, errors: [...BEARER_ERRORS] },
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
        ...BEARER,
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
        ...BEARER,
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
        ...BEARER,
        summary: "Delete a webhook",
        description: "Soft delete: answers the record with `is_active` false; its delivery history is kept.",
        params: { id: MePathParams.id },
        responses: { 200: Webhook },
        errors: [...BEARER_ERRORS, "not_found"],
      },
    },
  ];
}

/**
 * A webhook's delivery history, and the work handed to the delivery worker: a test event and a replay of undelivered
 * events (503 `not_ready` without a worker).
 */
export function meDeliveryRoutes(ctx: MeContext): DocumentedRoute[] {
  const { rm, accounts, cursors, auth, ownWebhook } = ctx;
  return [
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
        ...BEARER,
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
        ...BEARER,
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
        ...BEARER,
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
