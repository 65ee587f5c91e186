/**
 * Webhook signatures (interface 6.2, addendum F). The signing input is the bytes of `<event_id>.<timestamp>.` followed
 * by the raw body, with `timestamp` in Unix seconds; the Ed25519 signature goes out twice, as
 * `x-svc-signature: ed25519:<base64>` and as the Standard Webhooks `webhook-signature: v1a,<base64>` (the asymmetric
 * scheme's identifier), next to `webhook-id` (= the event id) and `webhook-timestamp` (= `x-svc-timestamp`).
 */
import { createPrivateKey, sign, verify, type KeyObject } from "node:crypto";
import type { EpochMs } from "../methodology/index.ts";
import { MAX_ATTEMPTS, TIMESTAMP_TOLERANCE_SECS } from "./policy.ts";
import { publicKeyFromBase64, type WebhookSigningKey } from "./signing-keys.ts";

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
/** Base64 of exactly 64 bytes: 86 characters and `==`. */
const SIG64 = /^[A-Za-z0-9+/]{86}==$/;

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

/** The bytes that are signed: `<event_id>.<timestamp>.<raw body>` (addendum F). */
export function signingInput(eventId: string, timestamp: number, body: string | Uint8Array): Buffer {
  const bodyBytes = typeof body === "string" ? Buffer.from(body, "utf8") : body;
  return Buffer.concat([Buffer.from(`${eventId}.${timestamp}.`, "utf8"), bodyBytes]);
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
export type IncomingHeaders = Readonly<Record<string, string | readonly string[] | undefined>> | { get(name: string): string | null };

/** A listed public key (an element of `keys` in `/v1/meta/webhook-keys`). */
export interface ListedKey {
  readonly kid: string;
  readonly public_key: string;
}

export type VerifyFailure =
  | "missing_headers"
  | "malformed_headers"
  | "header_mismatch"
  | "timestamp_out_of_window"
  | "no_usable_key"
  | "bad_signature";

export type VerifyResult =
  | { readonly ok: true; readonly eventId: string; readonly timestamp: number; readonly kid: string }
  | { readonly ok: false; readonly reason: VerifyFailure; readonly message: string };

function header(headers: IncomingHeaders, name: string): string | undefined | null {
  if (typeof headers.get === "function") return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  const rec = headers as Readonly<Record<string, string | readonly string[] | undefined>>;
  for (const [k, v] of Object.entries(rec)) {
    if (k.toLowerCase() !== name) continue;
    if (v === undefined) return undefined;
    // A repeated signature header is ambiguous: refuse rather than pick one.
    return typeof v === "string" ? v : v.length === 1 ? v[0]! : null;
  }
  return undefined;
}

const fail = (reason: VerifyFailure, message: string): VerifyResult => ({ ok: false, reason, message });

/**
 * Verifies a received delivery the way interface 6.3.4 tells receivers to: the signature against any listed key,
 * then the timestamp within `toleranceSecs` of `now`. Reads the `x-svc-*` headers, the Standard Webhooks headers, or
 * both (then they must carry the same id and timestamp and both signatures must verify). On success returns the
 * verified event id to de-duplicate on.
 */
export function verifyDelivery(
  headers: IncomingHeaders,
  body: string | Uint8Array,
  publicKeys: readonly ListedKey[],
  now: EpochMs,
  toleranceSecs: number = TIMESTAMP_TOLERANCE_SECS,
): VerifyResult {
  let repeated = false;
  const h = (name: string): string | undefined => {
    const v = header(headers, name);
    if (v === null) repeated = true;
    return v ?? undefined;
  };
  const x = { id: h(HEADERS.eventId), ts: h(HEADERS.timestamp), sig: h(HEADERS.signature) };
  const w = { id: h(HEADERS.webhookId), ts: h(HEADERS.webhookTimestamp), sig: h(HEADERS.webhookSignature) };
  if (repeated) return fail("malformed_headers", "a signature header is repeated");
  const schemes = [x, w].filter((s) => s.sig !== undefined) as { id: string | undefined; ts: string | undefined; sig: string }[];
  if (schemes.length === 0) return fail("missing_headers", "no x-svc-signature or webhook-signature header");
  const first = schemes[0]!;
  if (schemes.some((s) => s.id === undefined || s.ts === undefined)) return fail("missing_headers", "event id or timestamp header missing");
  if (schemes.some((s) => s.id !== first.id || s.ts !== first.ts)) return fail("header_mismatch", "x-svc-* and webhook-* headers disagree");
  const eventId = first.id!;
  if (!UUID.test(eventId)) return fail("malformed_headers", "the event id is not a UUID");
  if (!/^[0-9]{1,11}$/.test(first.ts!)) return fail("malformed_headers", "the timestamp is not integer Unix seconds");
  const timestamp = Number(first.ts);

  // Each present scheme contributes its candidate signatures; every scheme must have one that verifies.
  const candidates: Buffer[][] = [];
  if (x.sig !== undefined) {
    const m = /^ed25519:(.*)$/.exec(x.sig);
    if (!m || !SIG64.test(m[1]!)) return fail("malformed_headers", "x-svc-signature is not ed25519:<base64 of 64 bytes>");
    candidates.push([Buffer.from(m[1]!, "base64")]);
  }
  if (w.sig !== undefined) {
    // Space-delimited `version,signature` entries; unknown versions are ignored (Standard Webhooks).
    const entries = w.sig.split(" ").filter((e) => e !== "").slice(0, 16);
    const v1a = entries.filter((e) => e.startsWith("v1a,")).map((e) => e.slice(4));
    if (v1a.length === 0 || v1a.some((s) => !SIG64.test(s))) return fail("malformed_headers", "webhook-signature has no valid v1a entry");
    candidates.push(v1a.map((s) => Buffer.from(s, "base64")));
  }

  const keys: { kid: string; key: KeyObject }[] = [];
  for (const k of publicKeys) {
    try {
      keys.push({ kid: k.kid, key: publicKeyFromBase64(k.public_key) });
    } catch {
      // A malformed listed key cannot verify anything; the others still can.
    }
  }
  if (keys.length === 0) return fail("no_usable_key", "no valid Ed25519 public key was given");

  const data = signingInput(eventId, timestamp, body);
  let kid: string | undefined;
  for (const sigs of candidates) {
    const match = keys.find((k) => sigs.some((s) => verify(null, data, k.key, s)));
    if (match === undefined) return fail("bad_signature", "no listed key verifies the signature");
    kid ??= match.kid;
  }
  if (Math.abs(now - timestamp * 1000) > toleranceSecs * 1000) {
    return fail("timestamp_out_of_window", `timestamp ${timestamp} is more than ${toleranceSecs} s from now`);
  }
  return { ok: true, eventId, timestamp, kid: kid! };
}
