/**
 * The signed-in user's routes (interface 4.7, addendum A): profile, preferences, subscriptions, the alerts of the
 * subscribed assets, webhooks and their delivery history. Every route authenticates the bearer session first
 * (revocation included); every lookup is scoped to that user, so someone else's resource is a plain 404.
 * `POST /v1/me/webhooks/{id}/test` and `/replay` hand work to the delivery worker (503 `not_ready` without one).
 */
import type { AccountsModel } from "../accounts-model.ts";
import type { CursorCodec } from "../cursor.ts";
import { ApiError } from "../errors.ts";
import type { ReadModel } from "../read-model.ts";
import { PreferencesPatch, User } from "../schemas/index.ts";
import { BEARER_ERRORS, BODY_ERRORS, parseJsonBody } from "./auth.ts";
import { userBody } from "./me-bodies.ts";
import { BEARER, defined, meContext, PRIVATE, type MeContext, type MeRouteOptions } from "./me-context.ts";
import { meAlertRoutes, meSubscriptionRoutes } from "./me-subscriptions.ts";
import { meDeliveryRoutes, meWebhookRoutes } from "./me-webhooks.ts";
import { jsonResult, type DocumentedRoute } from "./spec.ts";

export type { MeRouteOptions } from "./me-context.ts";

/** `cursors` signs and checks the deliveries listing's `next_before` / `before` (one listing per webhook). */
export function meRoutes(rm: ReadModel, accounts: AccountsModel, cursors: CursorCodec, opts: MeRouteOptions = {}): DocumentedRoute[] {
  const ctx = meContext(rm, accounts, cursors, opts);
  return [...meProfileRoutes(ctx), ...meSubscriptionRoutes(ctx), ...meAlertRoutes(ctx), ...meWebhookRoutes(ctx), ...meDeliveryRoutes(ctx)];
}

/** The signed-in user and their preferences. */
export function meProfileRoutes(ctx: MeContext): DocumentedRoute[] {
  const { accounts, auth } = ctx;
  return [
    {
      method: "GET",
      path: "/v1/me",
      handler: async (req) => jsonResult(200, userBody((await auth(req)).user), PRIVATE),
      spec: { ...BEARER, summary: "The signed-in user", responses: { 200: User }, errors: [...BEARER_ERRORS] },
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
        ...BEARER,
        summary: "Update preferences",
        description: "Any subset of the preferences; the others keep their values. Answers the updated user.",
        requestBody: { schema: PreferencesPatch },
        responses: { 200: User },
        errors: [...BEARER_ERRORS, ...BODY_ERRORS],
      },
    },
  ];
}
