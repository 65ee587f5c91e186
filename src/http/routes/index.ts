/**
 * The public routes (interface 4.1-4.5, 4.7a): health, assets, feeds, audit, meta and the API description. Every
 * route carries its OpenAPI `spec`; /openapi.json is generated from exactly this list.
 */
import type { EpochMs } from "../../methodology/index.ts";
import { openApiDocument } from "../openapi.ts";
import type { ReadModel } from "../read-model.ts";
import type { ExposureReader } from "../../advisory/index.ts";
import { advisoryRoutes } from "./advisory.ts";
import { assetRoutes } from "./assets.ts";
import { auditRoutes } from "./audit.ts";
import { docsRoutes } from "./docs.ts";
import { feedRoutes } from "./feeds.ts";
import { healthRoutes } from "./health.ts";
import { machineRoutes } from "./machines.ts";
import { streamRoutes } from "./stream.ts";
import { metaRoutes, type MetaRouteOptions } from "./meta.ts";
import type { AccountsModel } from "../accounts-model.ts";
import { processCursorCodec, type CursorCodec } from "../cursor.ts";
import { authRoutes } from "./auth.ts";
import { meRoutes, type MeRouteOptions } from "./me.ts";
import type { DocumentedRoute } from "./spec.ts";

export interface PublicRoutesOptions {
  /** Live WebSocket client count for /v1/stats `ws_clients` (0 when absent). */
  readonly wsClients?: () => number;
  /** Alias of `wsClients`. */
  readonly requestsWsClients?: () => number;
  /** When the webhook IP list was loaded (default: when the routes are built). */
  readonly webhookIpsUpdatedAt?: EpochMs;
  /** The live webhook signing keys (served by /v1/meta/webhook-keys); absent: an empty list. */
  readonly webhookKeys?: MetaRouteOptions["webhookKeys"];
  /**
   * Accounts (login, sessions, `/v1/me/*`). Absent: those routes are not served. Present but JWT_SECRET unset: they
   * are served and answer 503 `not_ready`.
   */
  readonly accounts?: { readonly model: AccountsModel } & MeRouteOptions;
  /**
   * The positions book behind the advisory loop-exposure routes and the peg feed's `systemic` block. Absent: those
   * routes answer 503 `not_ready` and the feed carries no `systemic`.
   */
  readonly advisory?: ExposureReader;
  /**
   * Signs and checks the listings' cursors (`next_before` / `before`) under the deployment's key, so every process
   * of a deployment accepts the others' cursors. Absent: a key of this process's own (its cursors page only here).
   */
  readonly cursors?: CursorCodec;
}

export function publicRoutes(rm: ReadModel, opts: PublicRoutesOptions = {}): DocumentedRoute[] {
  const wsClients = opts.wsClients ?? opts.requestsWsClients;
  const cursors = opts.cursors ?? processCursorCodec();
  const routes: DocumentedRoute[] = [
    ...healthRoutes(rm),
    ...assetRoutes(rm),
    ...advisoryRoutes(rm, opts.advisory),
    ...feedRoutes(rm, { ...(wsClients === undefined ? {} : { wsClients }), ...(opts.advisory === undefined ? {} : { advisory: opts.advisory }) }),
    ...auditRoutes(rm, cursors),
    ...machineRoutes(rm),
    ...streamRoutes(),
    ...metaRoutes(rm, {
      ...(opts.webhookIpsUpdatedAt === undefined ? {} : { webhookIpsUpdatedAt: opts.webhookIpsUpdatedAt }),
      ...(opts.webhookKeys === undefined ? {} : { webhookKeys: opts.webhookKeys }),
    }),
  ];
  if (opts.accounts !== undefined) {
    const { model, ...meOpts } = opts.accounts;
    routes.push(...authRoutes(rm, model), ...meRoutes(rm, model, cursors, meOpts));
  }
  let doc: object | undefined;
  routes.push(...docsRoutes(() => (doc ??= openApiDocument(routes))));
  return routes;
}

export { openApiDocument } from "../openapi.ts";
export type { DocumentedRoute, ResponseEntry, ResponseSpec, RouteSpec } from "./spec.ts";
export type { MeRouteOptions } from "./me.ts";
export { buildAssetCard, buildAssetState, isStale, oracleDegradedOf, publishedOf, STALE_AFTER_MS } from "./asset-card.ts";
export { ASSET_LIST_TTL_MS } from "./assets.ts";
