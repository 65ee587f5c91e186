/** Meta routes (interface 4.5, addendum A). */
import { timestampToWire, type EpochMs } from "../../methodology/index.ts";
import type { WebhookKeyWire } from "../../delivery/index.ts";
import type { ReadModel } from "../read-model.ts";
import { WebhookIps, WebhookKeys } from "../schemas/index.ts";
import { jsonResult, type DocumentedRoute } from "./spec.ts";

export interface MetaRouteOptions {
  /** When the webhook IP list was loaded (default: when the routes were built). */
  readonly webhookIpsUpdatedAt?: EpochMs;
  /**
   * The live webhook signing keys at `now` (the delivery worker's key ring). Absent: webhook delivery is not running
   * in this process and the list is empty.
   */
  readonly webhookKeys?: (now: EpochMs) => { readonly keys: readonly WebhookKeyWire[] };
}

export function metaRoutes(rm: ReadModel, opts: MetaRouteOptions = {}): DocumentedRoute[] {
  const ips = { ips: [...rm.config.webhookIps], updated_at: timestampToWire(opts.webhookIpsUpdatedAt ?? rm.clock.now()) };
  return [
    {
      method: "GET",
      path: "/v1/meta/webhook-ips",
      handler: () => jsonResult(200, ips, { "cache-control": "public, max-age=300" }),
      spec: {
        summary: "Webhook source IPs",
        description: "The source addresses of webhook deliveries, from the deployment configuration (WEBHOOK_IPS).",
        tags: ["meta"],
        responses: { 200: WebhookIps },
        errors: [],
      },
    },
    {
      method: "GET",
      path: "/v1/meta/webhook-keys",
      handler: () => jsonResult(200, { keys: opts.webhookKeys?.(rm.clock.now()).keys ?? [] }, { "cache-control": "public, max-age=300" }),
      spec: {
        summary: "Webhook signing keys",
        description:
          "Active Ed25519 public keys that sign webhook deliveries (`kid`, `alg`, base64 `public_key`, `created_at`, `status` active|retiring): the active key first, then keys retiring within 7 days of a rotation. Verify `x-svc-signature` against the key named by `x-svc-key-id`.",
        tags: ["meta"],
        responses: { 200: WebhookKeys },
        errors: [],
      },
    },
  ];
}
