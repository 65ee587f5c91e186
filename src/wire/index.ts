/** Wire format: the one public entry of src/wire. Route and stream code import from here, never from the files. */
export {
  D,
  decimalToWire,
  parseDecimal,
  parseTimestamp,
  timestampToWire,
  usdAggregateToWire,
  usdAggregateOrNull,
  decimalOrNull,
  timestampOrNull,
  bpsToWireInt,
  type Decimal,
  type EpochMs,
} from "./format.ts";
export { listEnvelope, type ListEnvelope, type ListEnvelopeExtra } from "./envelope.ts";
export {
  verifyWebhook,
  webhookSigningInput,
  WEBHOOK_TOLERANCE_SECS,
  type VerifyWebhookOptions,
  type WebhookFailure,
  type WebhookHeaders,
  type WebhookKey,
  type WebhookVerdict,
} from "./webhook-signature.ts";
