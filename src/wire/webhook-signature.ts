/**
 * The webhook delivery signature on the receiving side (interface 6.2 and 6.3.4, addendum F, docs/webhooks.md): the
 * one verifier of this repository. The service's `verifyDelivery` (src/delivery/signing.ts) and the client package's
 * `verifyWebhook` (packages/client) are this function, so a delivery the tests accept is one a consumer accepts.
 *
 * The signed bytes are `<event_id>.<timestamp>.<raw body>`; the signature travels in the `x-svc-*` headers
 * (`x-svc-signature: ed25519:<base64>`), the Standard Webhooks headers (`webhook-signature: v1a,<base64>`), or both,
 * and then both must name the same event and instant and both must verify; the timestamp must be within 300 s of the
 * receiver's clock. Browser-safe, like the methodology: Ed25519 from @noble/ed25519 with @noble/hashes' SHA-512
 * under RFC 8032's rules (as OpenSSL applies them: `test/client/verify-webhook.test.ts` checks they agree), no
 * node:crypto, no Buffer.
 */
import * as ed from "@noble/ed25519";
import { sha512 } from "@noble/hashes/sha2.js";
import { concatBytes, utf8ToBytes } from "@noble/hashes/utils.js";

/** Seconds a delivery's timestamp may be away from the receiver's clock (interface 6.3.4). */
export const WEBHOOK_TOLERANCE_SECS = 300;

/** A key as `GET /v1/meta/webhook-keys` lists it (`public_key`: base64 of the raw 32-byte Ed25519 key). */
export interface WebhookKey {
  readonly kid: string;
  readonly public_key: string;
}

/** Request headers as Node (`req.headers`), fetch (`Headers`) or a plain record gives them. */
export type WebhookHeaders = Readonly<Record<string, string | readonly string[] | undefined>> | { get(name: string): string | null };

/**
 * Why a delivery was refused: `missing_headers` (unsigned, or an id or timestamp header absent), `malformed_headers`
 * (not a UUID, not integer seconds, not a 64-byte base64 signature, a repeated header), `header_mismatch` (the two
 * header sets disagree), `timestamp_out_of_window` (stale or from the future: a replay), `no_usable_key` (no valid key
 * given), `bad_signature` (altered body or headers, or signed by a key not given).
 */
export type WebhookFailure =
  | "missing_headers"
  | "malformed_headers"
  | "header_mismatch"
  | "timestamp_out_of_window"
  | "no_usable_key"
  | "bad_signature";

export type WebhookVerdict =
  | {
      readonly ok: true;
      /** The event id: the same on every attempt and replay of one event. De-duplicate on it. */
      readonly eventId: string;
      /** Unix seconds of the attempt. */
      readonly timestamp: number;
      /** The key that verified. */
      readonly kid: string;
    }
  | { readonly ok: false; readonly reason: WebhookFailure; readonly message: string };

export interface VerifyWebhookOptions {
  /** Default 300 s. */
  readonly toleranceSecs?: number;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Base64 of exactly 64 bytes: 86 characters and `==`. */
const SIG64 = /^[A-Za-z0-9+/]{86}==$/;
/** Base64 of exactly 32 bytes. */
const KEY32 = /^[A-Za-z0-9+/]{43}=$/;

/** The bytes a delivery's signature covers: `<event_id>.<timestamp>.<raw body>` (a string body as UTF-8). */
export function webhookSigningInput(eventId: string, timestamp: number, body: string | Uint8Array): Uint8Array {
  return concatBytes(utf8ToBytes(`${eventId}.${timestamp}.`), typeof body === "string" ? utf8ToBytes(body) : body);
}

function base64ToBytes(text: string): Uint8Array {
  const bin = atob(text);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

function bytesToBase64(bytes: Uint8Array): string {
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin);
}

/** A listed key's raw bytes, or null unless it is the canonical base64 of 32 bytes. */
function publicKeyBytes(text: unknown): Uint8Array | null {
  if (typeof text !== "string" || !KEY32.test(text)) return null;
  const raw = base64ToBytes(text);
  return raw.length === 32 && bytesToBase64(raw) === text ? raw : null;
}

/** undefined: absent; null: repeated (ambiguous: refused rather than picking one). */
function header(headers: WebhookHeaders, name: string): string | undefined | null {
  if (typeof (headers as { get?: unknown }).get === "function") return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  for (const [k, v] of Object.entries(headers as Readonly<Record<string, string | readonly string[] | undefined>>)) {
    if (k.toLowerCase() !== name) continue;
    if (v === undefined) return undefined;
    return typeof v === "string" ? v : v.length === 1 ? v[0]! : null;
  }
  return undefined;
}

const fail = (reason: WebhookFailure, message: string): WebhookVerdict => ({ ok: false, reason, message });

let hashReady = false;

/**
 * Verifies one received webhook delivery. `rawBody` must be the exact bytes received (verify before parsing JSON);
 * `keys` is the list `GET /v1/meta/webhook-keys` serves (the response itself or its `keys`); `now` is the
 * receiver's clock in epoch milliseconds.
 *
 * @example
 * ```ts
 * const keys = await client.get("/v1/meta/webhook-keys");      // cache it; fetch again on an unknown kid
 * const v = verifyWebhook(req.headers, rawBody, keys, Date.now());
 * if (!v.ok) return res.writeHead(400).end(v.reason);
 * if (seen.has(v.eventId)) return res.writeHead(200).end();     // a retry of an event already handled
 * ```
 */
export function verifyWebhook(
  headers: WebhookHeaders,
  rawBody: string | Uint8Array,
  keys: readonly WebhookKey[] | { readonly keys: readonly WebhookKey[] },
  now: number,
  options: VerifyWebhookOptions = {},
): WebhookVerdict {
  const toleranceSecs = options.toleranceSecs ?? WEBHOOK_TOLERANCE_SECS;
  let repeated = false;
  const h = (name: string): string | undefined => {
    const v = header(headers, name);
    if (v === null) repeated = true;
    return v ?? undefined;
  };
  const x = { id: h("x-svc-event-id"), ts: h("x-svc-timestamp"), sig: h("x-svc-signature") };
  const w = { id: h("webhook-id"), ts: h("webhook-timestamp"), sig: h("webhook-signature") };
  if (repeated) return fail("malformed_headers", "a signature header is repeated");
  const schemes = [x, w].filter((s) => s.sig !== undefined);
  if (schemes.length === 0) return fail("missing_headers", "no x-svc-signature or webhook-signature header");
  const first = schemes[0]!;
  if (schemes.some((s) => s.id === undefined || s.ts === undefined)) return fail("missing_headers", "event id or timestamp header missing");
  if (schemes.some((s) => s.id !== first.id || s.ts !== first.ts)) return fail("header_mismatch", "x-svc-* and webhook-* headers disagree");
  const eventId = first.id!;
  if (!UUID.test(eventId)) return fail("malformed_headers", "the event id is not a UUID");
  if (!/^[0-9]{1,11}$/.test(first.ts!)) return fail("malformed_headers", "the timestamp is not integer Unix seconds");
  const timestamp = Number(first.ts);

  // Each present scheme contributes its candidate signatures; every present scheme must have one that verifies.
  const candidates: Uint8Array[][] = [];
  if (x.sig !== undefined) {
    const m = /^ed25519:(.*)$/.exec(x.sig);
    if (!m || !SIG64.test(m[1]!)) return fail("malformed_headers", "x-svc-signature is not ed25519:<base64 of 64 bytes>");
    candidates.push([base64ToBytes(m[1]!)]);
  }
  if (w.sig !== undefined) {
    // Space-delimited `version,signature` entries; unknown versions are ignored (Standard Webhooks).
    const entries = w.sig.split(" ").filter((e) => e !== "").slice(0, 16);
    const v1a = entries.filter((e) => e.startsWith("v1a,")).map((e) => e.slice(4));
    if (v1a.length === 0 || v1a.some((s) => !SIG64.test(s))) return fail("malformed_headers", "webhook-signature has no valid v1a entry");
    candidates.push(v1a.map(base64ToBytes));
  }

  const list = Array.isArray(keys) ? (keys as readonly WebhookKey[]) : (keys as { readonly keys: readonly WebhookKey[] }).keys;
  const usable: { kid: string; key: Uint8Array }[] = [];
  for (const k of Array.isArray(list) ? list : []) {
    const key = publicKeyBytes(k?.public_key);
    // A malformed listed key cannot verify anything; the others still can.
    if (key !== null && typeof k.kid === "string") usable.push({ kid: k.kid, key });
  }
  if (usable.length === 0) return fail("no_usable_key", "no valid Ed25519 public key was given");

  if (!hashReady) {
    // @noble/ed25519's synchronous API needs a SHA-512; set once, only where nobody set one.
    if (ed.hashes.sha512 === undefined) ed.hashes.sha512 = sha512;
    hashReady = true;
  }
  const data = webhookSigningInput(eventId, timestamp, rawBody);
  const verifies = (sig: Uint8Array, key: Uint8Array): boolean => {
    try {
      // RFC 8032 rules (not ZIP-215's more permissive ones), as OpenSSL applies them.
      return ed.verify(sig, data, key, { zip215: false });
    } catch {
      return false;
    }
  };
  let kid: string | undefined;
  for (const sigs of candidates) {
    const match = usable.find((k) => sigs.some((s) => verifies(s, k.key)));
    if (match === undefined) return fail("bad_signature", "no listed key verifies the signature");
    kid ??= match.kid;
  }
  if (!Number.isFinite(now) || Math.abs(now - timestamp * 1000) > toleranceSecs * 1000) {
    return fail("timestamp_out_of_window", `timestamp ${timestamp} is more than ${toleranceSecs} s from now`);
  }
  return { ok: true, eventId, timestamp, kid: kid! };
}
