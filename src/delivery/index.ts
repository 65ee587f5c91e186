/**
 * Webhook delivery building blocks (issue 6): the SSRF guard with resolution pinning, the pinned request options,
 * Ed25519 delivery signatures with the `x-svc-*` and Standard Webhooks headers, the signing-key model, the dispatch
 * rules, the event payload, chat formats, one delivery attempt and the retry schedule.
 */
export * from "./policy.ts";
export { classifyAddress, ipv6Bytes, type AddressVerdict } from "./ip-ranges.ts";
export {
  checkDestination,
  MAX_URL_LENGTH,
  type CheckDestinationOptions,
  type DestinationAccepted,
  type DestinationCheck,
  type DestinationRefused,
  type RefusalReason,
  type Resolve,
} from "./ssrf.ts";
export { pinnedLookup, pinnedRequestOptions, systemResolve, type PinnedRequestOptions } from "./pinned-request.ts";
export {
  activeKey,
  assertSigningKey,
  ensureActiveKey,
  generateSigningKey,
  liveKeys,
  publicKeyFromBase64,
  publicKeyList,
  rawPublicKey,
  rotate,
  type KeyStatus,
  type WebhookKeyWire,
  type WebhookSigningKey,
} from "./signing-keys.ts";
export {
  HEADERS,
  signDelivery,
  signingInput,
  unixSeconds,
  verifyDelivery,
  type IncomingHeaders,
  type ListedKey,
  type SignDeliveryInput,
  type VerifyFailure,
  type VerifyResult,
} from "./signing.ts";
export {
  DISPATCH_FLOOR_MS,
  decideDispatch,
  type DispatchDecision,
  type DispatchTarget,
  type DispatchTransition,
  type PriorSend,
  type SendReason,
  type SkipReason,
} from "./dispatch.ts";
export {
  EVIDENCE_STATUSES,
  buildEvent,
  eventIdFor,
  evidenceUrl,
  serialiseEvent,
  type EventInput,
  type EvidenceStatus,
  type WebhookEvent,
} from "./payload.ts";
export { ChatFormatError, chatMessage, chatText, chatTitle, detectChatHost, type ChatHost, type ChatMessage } from "./chat.ts";
export {
  RESPONSE_EXCERPT_BYTES,
  attemptDelivery,
  parseRetryAfter,
  utf8Excerpt,
  type AttemptError,
  type AttemptInput,
  type AttemptResult,
} from "./attempt.ts";
export { MAX_RETRY_AFTER_MS, firstAttempt, nextAttempt, waitBefore, type NextAttempt, type NextStep } from "./schedule.ts";
export { openKeyRing, type KeyRing } from "./key-ring.ts";
export { Dispatcher, dispatchHandler, type DispatcherOptions, type DispatchLog, type ReplayWindow, type TransitionMessage } from "./dispatcher.ts";
export { startDeliveryWorker, WORKER_DURABLE, type DeliveryWorker, type WorkerOptions } from "./worker.ts";
export { attemptId, derivedUuid, parseWork, publishWork, DELIVERY_SUBJECT_PREFIX, type DeliveryWork } from "./work.ts";
export { decideTelegram, sendTelegram, telegramRequest, SEVERITY_ORDER, type TelegramDecision, type TelegramPreferences, type TelegramResult } from "./telegram.ts";
export { parseAnyWork, publishTelegramWork, TELEGRAM_SUBJECT_PREFIX, type AnyWork, type TelegramWork } from "./work.ts";
export { KEY_ADMIN_SUBJECTS, requestRotation, serveKeyAdmin, type KeyAdmin, type RotateReply } from "./key-admin.ts";
