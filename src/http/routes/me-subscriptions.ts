/** The signed-in user's alert subscriptions (interface 4.7) and the alerts of the subscribed assets. */
import { listEnvelope } from "../../wire/index.ts";
import { notFound } from "../errors.ts";
import {
  ALERTS_LIMIT,
  ALERTS_OFFSET,
  AlertList,
  AlertsQueryParams,
  MePathParams,
  SubscriptionCreate,
  SubscriptionList,
  SubscriptionPatch,
  Subscription,
  parseQuery,
} from "../schemas/index.ts";
import { BEARER_ERRORS, BODY_ERRORS, parseJsonBody } from "./auth.ts";
import { activeAsset } from "./common.ts";
import { alertRow } from "./feeds.ts";
import { subscriptionBody } from "./me-bodies.ts";
import { BEARER, defined, PRIVATE, written, type MeContext } from "./me-context.ts";
import { jsonResult, type DocumentedRoute } from "./spec.ts";

/** The user's alert subscriptions: list, subscribe, change, unsubscribe. */
export function meSubscriptionRoutes(ctx: MeContext): DocumentedRoute[] {
  const { rm, accounts, auth, knownAsset } = ctx;
  return [
    {
      method: "GET",
      path: "/v1/me/subs",
      handler: async (req) => {
        const { user } = await auth(req);
        return jsonResult(200, (await accounts.subscriptions(user.id)).map(subscriptionBody), PRIVATE);
      },
      spec: { ...BEARER, summary: "Alert subscriptions", description: "A bare array, active subscriptions first.", responses: { 200: SubscriptionList }, errors: [...BEARER_ERRORS] },
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
        ...BEARER,
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
        ...BEARER,
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
        ...BEARER,
        summary: "Unsubscribe",
        description: "Soft delete: the subscription stays listed with `is_active` false.",
        params: { asset: MePathParams.asset },
        responses: { 204: null },
        errors: [...BEARER_ERRORS, "asset_not_found", "not_found"],
      },
    },
  ];
}

/** The transitions of the assets the user has an active subscription to. */
export function meAlertRoutes(ctx: MeContext): DocumentedRoute[] {
  const { rm, accounts, auth } = ctx;
  return [
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
        ...BEARER,
        summary: "Transitions of the subscribed assets",
        description: "Alert rows (as /v1/alerts) of the assets with an active subscription, newest first. Walk with `since`, `limit` and `offset`.",
        query: AlertsQueryParams,
        responses: { 200: AlertList },
        errors: [...BEARER_ERRORS, "invalid_query"],
      },
    },
  ];
}
