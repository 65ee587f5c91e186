/**
 * `@peg-oracle/client`: the peg-risk oracle for programs, in Node (>= 20) and in browsers.
 *
 * - `PegClient`: the REST API, typed from the service's OpenAPI document; failures throw `ApiError`; idempotent calls
 *   are retried; `alerts()` and `auditLog()` walk the list endpoints page by page.
 * - `PegStream`: the live stream (`/v1/ws`): every transition exactly once, in order, across reconnects and restarts.
 * - `verifyReceipt`: re-derives a receipt offline with the methodology itself (what `peg-oracle verify` runs).
 * - `verifyWebhook`: checks a webhook delivery's Ed25519 signature and timestamp.
 * - `parseDecimal`: wire decimal strings to exact decimals.
 *
 * Quick starts for each: packages/client/README.md; runnable programs: examples/client-*.ts.
 */
export { PegClient, type CallOptions, type PegClientOptions, type PathsWith, type Success } from "./rest.ts";
export type { RetryInfo, RetryOptions, RetryStatus } from "./retry.ts";
export type { AlertFilters, AlertRow, AuditFilters, AuditRow, PageOptions } from "./paginate.ts";
export { ApiError, SERVER_ERROR_CODES, isServerErrorCode, type ApiErrorCode, type ClientErrorCode, type ServerErrorCode } from "./errors.ts";
export { parseDecimal, type Decimal } from "./decimal.ts";
export { PegStream } from "./peg-stream.ts";
export {
  PegStreamError,
  streamUrl,
  type PegStreamEvents,
  type PegStreamOptions,
  type PegStreamStats,
  type StatusChange,
  type StreamErrorCode,
  type StreamEvent,
  type StreamStatus,
  type StreamTimers,
  type WebSocketConstructor,
  type WebSocketLike,
} from "./stream-options.ts";
export type { Subscription } from "./subscription-set.ts";
export { backoffDelay, type BackoffOptions } from "./backoff.ts";
export type {
  AssetStateMessage,
  HelloMessage,
  PegState,
  ServerErrorMessage,
  SnapshotMessage,
  StateMessage,
  StreamServerErrorCode,
  TransitionMessage,
} from "./stream-messages.ts";
export { verifyReceipt, type ReceiptVerdict, type ReplayBundle } from "./verify-receipt.ts";
export {
  verifyWebhook,
  WEBHOOK_TOLERANCE_SECS,
  type VerifyWebhookOptions,
  type WebhookFailure,
  type WebhookHeaders,
  type WebhookKey,
  type WebhookVerdict,
} from "./verify-webhook.ts";
export type { components, paths, operations } from "./generated/schema.ts";

import type { components } from "./generated/schema.ts";
/** The API's schemas by name, e.g. `Schemas["AssetCard"]`, `Schemas["Receipt"]`. */
export type Schemas = components["schemas"];
