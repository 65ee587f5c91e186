/**
 * Webhook delivery building blocks (issue 6): the SSRF guard with resolution pinning, the pinned request options,
 * Ed25519 delivery signatures with the `x-svc-*` and Standard Webhooks headers, and the signing-key model.
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
