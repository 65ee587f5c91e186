import { createPublicKey, verify, type KeyObject } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  HEADERS,
  KEY_RETIRE_MS,
  MAX_ATTEMPTS,
  RETRY_WAITS_MS,
  TIMESTAMP_TOLERANCE_SECS,
  activeKey,
  assertSigningKey,
  ensureActiveKey,
  generateSigningKey,
  publicKeyList,
  rotate,
  signDelivery,
  verifyDelivery,
  type WebhookSigningKey,
} from "../../src/delivery/index.ts";
import { WebhookKeys } from "../../src/http/schemas/meta.ts";

const T0 = Date.UTC(2026, 5, 12, 10, 0, 0); // epoch ms
const T0_SECS = T0 / 1000;
const DAY = 86_400_000;
const EVENT_ID = "0b9f4a52-6d0e-4c1e-9a8f-3d2b1c0e9f7a";
const DELIVERY_ID = "5e6f7a8b-9c0d-4e1f-8a2b-3c4d5e6f7a8b";
const BODY = JSON.stringify({
  asset: "USDC",
  from_state: "PEGGED",
  to_state: "DEPEG",
  discount_bps: -212,
  ts: "2026-06-12T10:00:00.000Z",
  alert_id: EVENT_ID,
  evidence_url: "https://oracle.example.com/v1/audit/0b9f4a52-6d0e-4c1e-9a8f-3d2b1c0e9f7a",
  evidence_status: "pending",
  calibration: "calibrated",
});

/** Independent of the code under test: raw 32-byte Ed25519 key -> SPKI DER (RFC 8410 prefix) -> KeyObject. */
function spkiKey(rawBase64: string): KeyObject {
  const raw = Buffer.from(rawBase64, "base64");
  expect(raw.length).toBe(32);
  return createPublicKey({ key: Buffer.concat([Buffer.from("302a300506032b6570032100", "hex"), raw]), format: "der", type: "spki" });
}

function sign(key: WebhookSigningKey, over: Partial<{ timestamp: number; body: string; attempt: number; eventId: string }> = {}): Record<string, string> {
  return signDelivery({
    eventId: over.eventId ?? EVENT_ID,
    deliveryId: DELIVERY_ID,
    attempt: over.attempt ?? 1,
    timestamp: over.timestamp ?? T0_SECS,
    body: over.body ?? BODY,
    key,
  });
}

describe("signDelivery", () => {
  const key = generateSigningKey(T0);
  const listed = publicKeyList([key], T0).keys;

  it("signs <event_id>.<timestamp>.<body> so plain node:crypto verifies it against the listed key", () => {
    const h = sign(key);
    expect(h[HEADERS.signature]).toMatch(/^ed25519:[A-Za-z0-9+/]{86}==$/);
    const sig = Buffer.from(h[HEADERS.signature]!.slice("ed25519:".length), "base64");
    expect(sig.length).toBe(64);
    const pub = spkiKey(listed[0]!.public_key);
    expect(verify(null, Buffer.from(`${EVENT_ID}.${T0_SECS}.${BODY}`), pub, sig)).toBe(true);
    expect(verify(null, Buffer.from(`${EVENT_ID}.${T0}.${BODY}`), pub, sig)).toBe(false); // seconds, not ms
    expect(verify(null, Buffer.from(BODY), pub, sig)).toBe(false);
  });

  it("sends the x-svc-* headers of interface 6.2 and addendum F", () => {
    const h = sign(key, { attempt: 3 });
    expect(h).toMatchObject({
      "content-type": "application/json",
      "x-svc-timestamp": String(T0_SECS),
      "x-svc-event-id": EVENT_ID,
      "x-svc-delivery-id": DELIVERY_ID,
      "x-svc-attempt": "3/6",
      "x-svc-key-id": key.kid,
    });
    expect(Number(h["x-svc-timestamp"])).toBe(Math.floor(T0 / 1000));
  });

  it("sends Standard Webhooks headers: webhook-id, webhook-timestamp, webhook-signature `v1a,<base64>`", () => {
    const h = sign(key);
    expect(h["webhook-id"]).toBe(EVENT_ID);
    expect(h["webhook-timestamp"]).toMatch(/^[0-9]+$/);
    expect(h["webhook-timestamp"]).toBe(h["x-svc-timestamp"]);
    // Parse as a Standard Webhooks consumer does: space-delimited `version,base64` entries.
    const entries = h["webhook-signature"]!.split(" ").map((e) => {
      const comma = e.indexOf(",");
      return { version: e.slice(0, comma), sig: Buffer.from(e.slice(comma + 1), "base64") };
    });
    expect(entries.length).toBe(1);
    expect(entries[0]!.version).toBe("v1a");
    expect(entries[0]!.sig.length).toBe(64);
    const content = Buffer.from(`${h["webhook-id"]}.${h["webhook-timestamp"]}.${BODY}`);
    expect(verify(null, content, spkiKey(listed[0]!.public_key), entries[0]!.sig)).toBe(true);
    expect(entries[0]!.sig.toString("base64")).toBe(h["x-svc-signature"]!.slice("ed25519:".length));
  });

  it("signs the exact bytes of a Uint8Array body", () => {
    const bytes = Buffer.from(BODY, "utf8");
    const h = signDelivery({ eventId: EVENT_ID, deliveryId: DELIVERY_ID, attempt: 1, timestamp: T0_SECS, body: bytes, key });
    expect(h[HEADERS.signature]).toBe(sign(key)[HEADERS.signature]);
  });

  it("refuses inputs that would sign the wrong thing", () => {
    const base = { eventId: EVENT_ID, deliveryId: DELIVERY_ID, attempt: 1, timestamp: T0_SECS, body: BODY, key };
    expect(() => signDelivery({ ...base, timestamp: T0 })).toThrow(/Unix seconds/);
    expect(() => signDelivery({ ...base, timestamp: 1.5 })).toThrow(RangeError);
    expect(() => signDelivery({ ...base, eventId: "evt.1" })).toThrow(/UUID/);
    expect(() => signDelivery({ ...base, deliveryId: "" })).toThrow(/UUID/);
    expect(() => signDelivery({ ...base, attempt: 0 })).toThrow(RangeError);
    expect(() => signDelivery({ ...base, attempt: MAX_ATTEMPTS + 1 })).toThrow(RangeError);
    expect(() => signDelivery({ ...base, key: rotate([key], T0)[1]! })).toThrow(/retiring/);
  });
});

describe("verifyDelivery", () => {
  const key = generateSigningKey(T0);
  const other = generateSigningKey(T0);
  const listed = publicKeyList([key], T0).keys;

  it("accepts a genuine delivery and returns the verified event id and key", () => {
    expect(verifyDelivery(sign(key), BODY, listed, T0)).toEqual({ ok: true, eventId: EVENT_ID, timestamp: T0_SECS, kid: key.kid });
  });

  it("accepts Node-style (any case) and fetch-style headers", () => {
    const upper = Object.fromEntries(Object.entries(sign(key)).map(([k, v]) => [k.toUpperCase(), v]));
    expect(verifyDelivery(upper, BODY, listed, T0).ok).toBe(true);
    expect(verifyDelivery(new Headers(sign(key)), BODY, listed, T0).ok).toBe(true);
  });

  it("fails a tampered body, event id, timestamp or signature", () => {
    const h = sign(key);
    expect(verifyDelivery(h, BODY.replace("-212", "-213"), listed, T0)).toMatchObject({ ok: false, reason: "bad_signature" });
    expect(verifyDelivery(h, BODY + " ", listed, T0)).toMatchObject({ ok: false, reason: "bad_signature" });
    const otherId = "1b9f4a52-6d0e-4c1e-9a8f-3d2b1c0e9f7a";
    expect(verifyDelivery({ ...h, "x-svc-event-id": otherId, "webhook-id": otherId }, BODY, listed, T0)).toMatchObject({ ok: false, reason: "bad_signature" });
    const ts = String(T0_SECS + 1);
    expect(verifyDelivery({ ...h, "x-svc-timestamp": ts, "webhook-timestamp": ts }, BODY, listed, T0)).toMatchObject({ ok: false, reason: "bad_signature" });
    const sig = Buffer.from(h["x-svc-signature"]!.slice(8), "base64");
    sig[10]! ^= 1;
    const bad = sig.toString("base64");
    expect(verifyDelivery({ ...h, "x-svc-signature": `ed25519:${bad}` }, BODY, listed, T0)).toMatchObject({ ok: false, reason: "bad_signature" });
    expect(verifyDelivery({ ...h, "webhook-signature": `v1a,${bad}` }, BODY, listed, T0)).toMatchObject({ ok: false, reason: "bad_signature" });
  });

  it("fails a signature by a key that is not listed", () => {
    expect(verifyDelivery(sign(other), BODY, listed, T0)).toMatchObject({ ok: false, reason: "bad_signature" });
    expect(verifyDelivery(sign(key), BODY, [], T0)).toMatchObject({ ok: false, reason: "no_usable_key" });
    expect(verifyDelivery(sign(key), BODY, [{ kid: "x", public_key: "AAAA" }], T0)).toMatchObject({ ok: false, reason: "no_usable_key" });
  });

  it("accepts any listed key", () => {
    const both = publicKeyList([other, { ...key, status: "retiring", retires_at: T0 + DAY }], T0).keys;
    expect(verifyDelivery(sign(key), BODY, both, T0)).toMatchObject({ ok: true, kid: key.kid });
    expect(verifyDelivery(sign(other), BODY, both, T0)).toMatchObject({ ok: true, kid: other.kid });
  });

  it("enforces the timestamp window (default 300 s either way)", () => {
    expect(TIMESTAMP_TOLERANCE_SECS).toBe(300);
    const at = (offsetSecs: number): ReturnType<typeof verifyDelivery> =>
      verifyDelivery(sign(key, { timestamp: T0_SECS + offsetSecs }), BODY, listed, T0);
    expect(at(-300).ok).toBe(true);
    expect(at(300).ok).toBe(true);
    expect(at(-301)).toMatchObject({ ok: false, reason: "timestamp_out_of_window" });
    expect(at(301)).toMatchObject({ ok: false, reason: "timestamp_out_of_window" });
    expect(verifyDelivery(sign(key, { timestamp: T0_SECS - 3600 }), BODY, listed, T0, 7200).ok).toBe(true);
  });

  it("verifies either header set alone, and refuses sets that disagree", () => {
    const h = sign(key);
    const xOnly = Object.fromEntries(Object.entries(h).filter(([k]) => !k.startsWith("webhook-")));
    const whOnly = Object.fromEntries(Object.entries(h).filter(([k]) => !k.startsWith("x-svc-")));
    expect(verifyDelivery(xOnly, BODY, listed, T0)).toMatchObject({ ok: true });
    expect(verifyDelivery(whOnly, BODY, listed, T0)).toMatchObject({ ok: true });
    expect(verifyDelivery({ ...h, "webhook-timestamp": String(T0_SECS + 1) }, BODY, listed, T0)).toMatchObject({ ok: false, reason: "header_mismatch" });
    expect(verifyDelivery({ ...h, "webhook-id": "1b9f4a52-6d0e-4c1e-9a8f-3d2b1c0e9f7a" }, BODY, listed, T0)).toMatchObject({ ok: false, reason: "header_mismatch" });
    // Both present: both must verify.
    const foreign = sign(other)["webhook-signature"]!;
    expect(verifyDelivery({ ...h, "webhook-signature": foreign }, BODY, publicKeyList([key], T0).keys, T0)).toMatchObject({ ok: false, reason: "bad_signature" });
  });

  it("reads a Standard Webhooks signature list: skips other versions, any v1a entry may match", () => {
    const h = sign(key);
    const mine = h["webhook-signature"]!;
    const theirs = sign(other)["webhook-signature"]!;
    const whOnly = Object.fromEntries(Object.entries(h).filter(([k]) => !k.startsWith("x-svc-")));
    const list = `v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4= ${theirs} ${mine}`;
    expect(verifyDelivery({ ...whOnly, "webhook-signature": list }, BODY, listed, T0)).toMatchObject({ ok: true });
    expect(verifyDelivery({ ...whOnly, "webhook-signature": "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=" }, BODY, listed, T0)).toMatchObject({
      ok: false,
      reason: "malformed_headers",
    });
  });

  it("refuses missing, malformed and repeated headers", () => {
    const h = sign(key);
    expect(verifyDelivery({}, BODY, listed, T0)).toMatchObject({ ok: false, reason: "missing_headers" });
    const { "x-svc-timestamp": _t, "webhook-timestamp": _w, ...noTs } = h;
    expect(verifyDelivery(noTs, BODY, listed, T0)).toMatchObject({ ok: false, reason: "missing_headers" });
    expect(verifyDelivery({ ...h, "x-svc-signature": h["x-svc-signature"]!.slice(8) }, BODY, listed, T0)).toMatchObject({ ok: false, reason: "malformed_headers" });
    const ms = String(T0);
    expect(verifyDelivery({ ...h, "x-svc-timestamp": ms, "webhook-timestamp": ms }, BODY, listed, T0)).toMatchObject({ ok: false, reason: "malformed_headers" });
    expect(verifyDelivery({ ...h, "x-svc-timestamp": "1e9", "webhook-timestamp": "1e9" }, BODY, listed, T0)).toMatchObject({ ok: false, reason: "malformed_headers" });
    expect(verifyDelivery({ ...h, "x-svc-signature": [h["x-svc-signature"]!, h["x-svc-signature"]!] }, BODY, listed, T0)).toMatchObject({
      ok: false,
      reason: "malformed_headers",
    });
  });
});

describe("signing keys", () => {
  it("generates an active Ed25519 key with a raw base64 public key and a kid derived from it", () => {
    const key = generateSigningKey(T0);
    expect(key).toMatchObject({ alg: "Ed25519", status: "active", created_at: T0, retires_at: null });
    expect(key.kid).toMatch(/^[0-9a-f]{16}$/);
    expect(Buffer.from(key.public_key, "base64").length).toBe(32);
    expect(key.private_key).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
    expect(() => assertSigningKey(key)).not.toThrow();
    expect(() => assertSigningKey({ ...key, public_key: generateSigningKey(T0).public_key })).toThrow(/does not match/);
    expect(() => assertSigningKey({ ...key, kid: "0000000000000000" })).toThrow(/kid/);
    expect(() => assertSigningKey({ ...key, retires_at: T0 })).toThrow(/disagree/);
    expect(JSON.parse(JSON.stringify(key))).toEqual(key); // storable as JSON
  });

  it("lists keys in the shape /v1/meta/webhook-keys documents", () => {
    const key = generateSigningKey(T0);
    const list = publicKeyList([key], T0);
    expect(list).toEqual({ keys: [{ kid: key.kid, alg: "Ed25519", public_key: key.public_key, created_at: "2026-06-12T10:00:00.000Z", status: "active" }] });
    expect(() => WebhookKeys.parse(list)).not.toThrow();
    expect(JSON.stringify(list)).not.toContain("PRIVATE");
  });

  it("ensureActiveKey creates a key on first start and keeps an existing one", () => {
    const first = ensureActiveKey([], T0);
    expect(first.length).toBe(1);
    expect(ensureActiveKey(first, T0 + DAY)).toEqual(first);
    expect(() => activeKey([])).toThrow(/exactly one active/);
  });

  it("rotation keeps the old key retiring for 7 days: it verifies until then and is unlisted after", () => {
    const k1 = generateSigningKey(T0 - DAY);
    const signedBefore = sign(k1); // a delivery signed at T0 by the then-active key
    const rotatedAt = T0 + 1000;
    const keys = rotate([k1], rotatedAt);
    expect(keys.length).toBe(2);
    const [k2, old] = keys as [WebhookSigningKey, WebhookSigningKey];
    expect(k2).toMatchObject({ status: "active", created_at: rotatedAt, retires_at: null });
    expect(old).toMatchObject({ kid: k1.kid, status: "retiring", retires_at: rotatedAt + 7 * DAY });
    expect(KEY_RETIRE_MS).toBe(7 * DAY);
    expect(activeKey(keys).kid).toBe(k2.kid);

    const listAt = (t: number): string[] => publicKeyList(keys, t).keys.map((k) => `${k.kid}:${k.status}`);
    expect(listAt(rotatedAt)).toEqual([`${k2.kid}:active`, `${k1.kid}:retiring`]);
    expect(listAt(rotatedAt + 7 * DAY - 1)).toEqual([`${k2.kid}:active`, `${k1.kid}:retiring`]);
    expect(listAt(rotatedAt + 7 * DAY)).toEqual([`${k2.kid}:active`]);
    expect(() => WebhookKeys.parse(publicKeyList(keys, rotatedAt))).not.toThrow();

    // The receiver's clock is T0 (inside the timestamp window); only the key list it fetched differs.
    expect(verifyDelivery(signedBefore, BODY, publicKeyList(keys, rotatedAt + 6 * DAY).keys, T0)).toMatchObject({ ok: true, kid: k1.kid });
    expect(verifyDelivery(signedBefore, BODY, publicKeyList(keys, rotatedAt + 7 * DAY).keys, T0)).toMatchObject({ ok: false, reason: "bad_signature" });
    // New deliveries are signed by the new key and verify against the same list.
    expect(verifyDelivery(sign(k2), BODY, publicKeyList(keys, rotatedAt).keys, T0)).toMatchObject({ ok: true, kid: k2.kid });
  });

  it("a second rotation keeps each retiring key's own deadline and drops expired ones", () => {
    const k1 = generateSigningKey(T0);
    const r1 = rotate([k1], T0);
    const r2 = rotate(r1, T0 + 2 * DAY);
    expect(r2.map((k) => [k.status, k.retires_at])).toEqual([
      ["active", null],
      ["retiring", T0 + 2 * DAY + 7 * DAY],
      ["retiring", T0 + 7 * DAY],
    ]);
    const r3 = rotate(r2, T0 + 8 * DAY);
    expect(r3.map((k) => k.kid)).toEqual([r3[0]!.kid, r2[0]!.kid, r2[1]!.kid]);
    expect(r3.some((k) => k.kid === k1.kid)).toBe(false);
    expect(r3.filter((k) => k.status === "active").length).toBe(1);
  });
});

describe("delivery policy", () => {
  it("has the retry waits of interface 6.4", () => {
    expect(MAX_ATTEMPTS).toBe(6);
    expect(RETRY_WAITS_MS.length).toBe(MAX_ATTEMPTS);
    expect(RETRY_WAITS_MS.reduce((a, b) => a + b, 0)).toBe(((2 * 60 + 35) * 60 + 35) * 1000); // about 2 h 35 min
  });
});
