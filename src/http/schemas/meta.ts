/** Health, readiness and meta resources (addendum A). */
import { z } from "zod";
import { Int64, Timestamp, component } from "./common.ts";

export const Health = component("Health", z.strictObject({ ok: z.literal(true) }), "The process is alive.");

export const Readiness = component(
  "Readiness",
  z.strictObject({
    ok: z.boolean(),
    checks: z.strictObject({
      database: z.boolean(),
      nats: z.boolean(),
      snapshot_age_secs: Int64.min(0).nullable().meta({ description: "Age of the newest asset snapshot; null when there is none." }),
      engine: z.boolean(),
    }),
    error: z.literal("not_ready").optional().meta({ description: "Present (with message) when not ready." }),
    message: z.string().optional(),
  }),
  "Readiness: not ready when a dependency is down or the newest snapshot is missing or older than 15 minutes.",
);

export const WebhookIps = component(
  "WebhookIps",
  z.strictObject({
    ips: z.array(z.string()).meta({ description: "Source IP addresses of webhook deliveries (deployment configuration)." }),
    updated_at: Timestamp.meta({ description: "When this list was loaded." }),
  }),
  "Allowlist hint for webhook receivers.",
);

export const WebhookKey = component(
  "WebhookKey",
  z.strictObject({
    kid: z.string(),
    alg: z.literal("Ed25519"),
    public_key: z.string().meta({ description: "Base64 of the 32-byte Ed25519 public key." }),
    created_at: Timestamp,
    status: z.enum(["active", "retiring"]),
  }),
  "One webhook signing key.",
);

export const WebhookKeys = component(
  "WebhookKeys",
  z.strictObject({ keys: z.array(WebhookKey) }),
  "Active Ed25519 webhook signing keys. Empty until webhook delivery is enabled on this deployment.",
);

export const OpenApiDocumentSchema = component(
  "OpenApiDocument",
  z.looseObject({
    openapi: z.string(),
    info: z.looseObject({ title: z.string(), version: z.string() }),
    paths: z.record(z.string(), z.unknown()),
  }),
  "An OpenAPI 3.1 document.",
);
