/**
 * Webhook signatures (interface 6.2, addendum F). The signing input is the bytes of `<event_id>.<timestamp>.` followed
 * by the raw body, with `timestamp` in Unix seconds; the Ed25519 signature goes out twice, as
 * `x-svc-signature: ed25519:<base64>` and as the Standard Webhooks `webhook-signature: v1a,<base64>` (the asymmetric
 * scheme's identifier), next to `webhook-id` (= the event id) and `webhook-timestamp` (= `x-svc-timestamp`).
 * Signing is node:crypto's; verifying (and the signed bytes) is src/wire/webhook-signature.ts's, the browser-safe
 * verifier the client package exports as `verifyWebhook`.
 */
import { createPrivateKey, sign, type KeyObject } from "node:crypto";
import type { EpochMs } from "../methodology/index.ts";
import {
  verifyWebhook,
  webhookSigningInput,
  type WebhookFailure,
  type WebhookHeaders,
  type WebhookKey,
  type WebhookVerdict,
} from "../wire/index.ts";
import { MAX_ATTEMPTS, TIMESTAMP_TOLERANCE_SECS } from "./policy.ts";
import type { WebhookSigningKey } from "./signing-keys.ts";

/** Header names, lower case (the `x-svc-` prefix stands for the brand segment, interface 6.2). */
export const HEADERS = {
  timestamp: "x-svc-timestamp",
  signature: "x-svc-signature",
  eventId: "x-svc-event-id",
  deliveryId: "x-svc-delivery-id",
  attempt: "x-svc-attempt",
  keyId: "x-svc-key-id",
  webhookId: "webhook-id",
  webhookTimestamp: "webhook-timestamp",
  webhookSignature: "webhook-signature",
} as const;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface SignDeliveryInput {
  /** UUID of the event; the same on every attempt and on replays (the receiver's idempotency key). */
  readonly eventId: string;
  /** UUID of this delivery attempt. */
  readonly deliveryId: string;
  /** 1-based attempt number, at most `maxAttempts`. */
  readonly attempt: number;
  /** Default 6 (interface 6.4). */
  readonly maxAttempts?: number;
  /** Unix seconds (not milliseconds) of this attempt. */
  readonly timestamp: number;
  /** The exact bytes sent as the request body (a string is sent as UTF-8). */
  readonly body: string | Uint8Array;
  /** The active signing key. */
  readonly key: WebhookSigningKey;
}

/** The bytes that are signed: `<event_id>.<timestamp>.<raw body>` (addendum F), exactly as the verifier reads them. */
export function signingInput(eventId: string, timestamp: number, body: string | Uint8Array): Buffer {
  const bytes = webhookSigningInput(eventId, timestamp, body);
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

const privateKeys = new WeakMap<WebhookSigningKey, KeyObject>();

function privateKeyOf(key: WebhookSigningKey): KeyObject {
  let obj = privateKeys.get(key);
  if (obj === undefined) {
    obj = createPrivateKey(key.private_key);
    privateKeys.set(key, obj);
  }
  return obj;
}

/** Unix seconds of an epoch-millisecond instant (floor). */
export function unixSeconds(ms: EpochMs): number {
  return Math.floor(ms / 1000);
}

/**
 * Signs one delivery attempt and returns every request header it needs: `content-type`, the `x-svc-*` headers and
 * the Standard Webhooks headers. Throws on an input that would produce an ambiguous or wrong signature (an id that is
 * not a UUID, a timestamp in milliseconds, a key that is not active).
 */
export function signDelivery(input: SignDeliveryInput): Record<string, string> {
  const { eventId, deliveryId, attempt, timestamp, body, key } = input;
  const maxAttempts = input.maxAttempts ?? MAX_ATTEMPTS;
  if (!UUID.test(eventId)) throw new TypeError(`eventId must be a UUID, got ${JSON.stringify(eventId)}`);
  if (!UUID.test(deliveryId)) throw new TypeError(`deliveryId must be a UUID, got ${JSON.stringify(deliveryId)}`);
  // 1e11 s is the year 5138; anything that large is milliseconds passed by mistake.
  if (!Number.isSafeInteger(timestamp) || timestamp < 0 || timestamp >= 1e11) {
    throw new RangeError(`timestamp must be integer Unix seconds, got ${timestamp}`);
  }
  if (!Number.isInteger(attempt) || attempt < 1 || attempt > maxAttempts) {
    throw new RangeError(`attempt must be 1..${maxAttempts}, got ${attempt}`);
  }
  if (key.status !== "active") throw new Error(`key ${key.kid} is ${key.status}; only the active key signs`);
  const signature = sign(null, signingInput(eventId, timestamp, body), privateKeyOf(key)).toString("base64");
  return {
    "content-type": "application/json",
    [HEADERS.timestamp]: String(timestamp),
    [HEADERS.signature]: `ed25519:${signature}`,
    [HEADERS.eventId]: eventId,
    [HEADERS.deliveryId]: deliveryId,
    [HEADERS.attempt]: `${attempt}/${maxAttempts}`,
    [HEADERS.keyId]: key.kid,
    [HEADERS.webhookId]: eventId,
    [HEADERS.webhookTimestamp]: String(timestamp),
    [HEADERS.webhookSignature]: `v1a,${signature}`,
  };
}

/** Request headers as Node (`IncomingHttpHeaders`) or fetch (`Headers`) give them. */
export type IncomingHeaders = WebhookHeaders;

/** A listed public key (an element of `keys` in `/v1/meta/webhook-keys`). */
export type ListedKey = WebhookKey;

export type VerifyFailure = WebhookFailure;

export type VerifyResult = WebhookVerdict;

/**
 * Verifies a received delivery the way interface 6.3.4 tells receivers to: the signature against any listed key,
 * then the timestamp within `toleranceSecs` of `now`. Reads the `x-svc-*` headers, the Standard Webhooks headers, or
 * both (then they must carry the same id and timestamp and both signatures must verify). On success returns the
 * verified event id to de-duplicate on. It is `verifyWebhook` of src/wire/webhook-signature.ts, the verifier the
 * client package exports: one implementation for the service's tests and for consumers.
 */
export function verifyDelivery(
  headers: IncomingHeaders,
  body: string | Uint8Array,
  publicKeys: readonly ListedKey[],
  now: EpochMs,
  toleranceSecs: number = TIMESTAMP_TOLERANCE_SECS,
): VerifyResult {
  return verifyWebhook(headers, body, publicKeys, now, { toleranceSecs });
}
