/**
 * Verification of a webhook delivery (docs/webhooks.md), browser-safe: the verifier of `src/wire/webhook-signature.ts`,
 * the one the service's own `verifyDelivery` (src/delivery/signing.ts) is too (one implementation, shared, not a
 * copy). It checks what `signDelivery` produces: Ed25519 over `<event_id>.<timestamp>.<raw body>` in the `x-svc-*`
 * headers, the Standard Webhooks headers or both, with a timestamp within 300 s of `now`; @noble/ed25519 with
 * @noble/hashes' SHA-512, no node:crypto. `test/client/verify-webhook.test.ts` checks it against `signDelivery` and
 * OpenSSL.
 */
export {
  verifyWebhook,
  WEBHOOK_TOLERANCE_SECS,
  type VerifyWebhookOptions,
  type WebhookFailure,
  type WebhookHeaders,
  type WebhookKey,
  type WebhookVerdict,
} from "../../../src/wire/webhook-signature.ts";
