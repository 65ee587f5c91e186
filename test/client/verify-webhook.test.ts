/**
 * `verifyWebhook` (browser-safe: @noble/ed25519; src/wire/webhook-signature.ts) against the service's own signing
 * code (`signDelivery`): it accepts what the service signs and refuses every kind of tampering, replay and
 * malformation with its reason. The service's `verifyDelivery` is the same function (one verifier); what is checked
 * against an independent implementation is the Ed25519 itself: @noble/ed25519 under RFC 8032 rules accepts exactly
 * the signatures OpenSSL (node:crypto) accepts, malleated ones included. A real delivery from a running service:
 * test/client/service.test.ts.
 */
import { createPublicKey, randomUUID, verify, type KeyObject } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { verifyWebhook, WEBHOOK_TOLERANCE_SECS, type WebhookHeaders } from "@peg-oracle/client";
import { generateSigningKey, signDelivery, verifyDelivery, type WebhookSigningKey } from "../../src/delivery/index.ts";

const NOW = Date.UTC(2026, 10, 21, 12, 0, 0);
const key = generateSigningKey(NOW - 86_400_000);
const other = generateSigningKey(NOW);
const listed = (...keys: WebhookSigningKey[]) => keys.map((k) => ({ kid: k.kid, alg: "Ed25519", public_key: k.public_key, created_at: new Date(k.created_at).toISOString(), status: k.status }));
const body = JSON.stringify({ event: "peg.transition", asset: "USDC", from_state: "PEGGED", to_state: "DEPEG", discount: "0.00534463705121415", note: "çà ✓" });

function delivery(opts: { key?: WebhookSigningKey; at?: number; body?: string } = {}) {
  const timestamp = Math.floor((opts.at ?? NOW) / 1000);
  const headers = signDelivery({ eventId: randomUUID(), deliveryId: randomUUID(), attempt: 2, timestamp, body: opts.body ?? body, key: opts.key ?? key });
  return { headers, body: opts.body ?? body, timestamp };
}

const only = (h: Record<string, string>, prefix: string) => Object.fromEntries(Object.entries(h).filter(([k]) => !k.startsWith(prefix)));

describe("verifyWebhook accepts what the service signs", () => {
  it("with both header sets, either alone, any header container, and a byte body", () => {
    const d = delivery();
    const keys = listed(key);
    const want = { ok: true, eventId: d.headers["x-svc-event-id"], timestamp: d.timestamp, kid: key.kid };
    expect(verifyWebhook(d.headers, d.body, keys, NOW)).toEqual(want);
    expect(verifyWebhook(d.headers, d.body, { keys }, NOW)).toEqual(want);
    expect(verifyWebhook(only(d.headers, "webhook-"), d.body, keys, NOW)).toEqual(want); // x-svc-* only
    expect(verifyWebhook(only(d.headers, "x-svc-"), d.body, keys, NOW)).toEqual(want); // Standard Webhooks only
    expect(verifyWebhook(new Headers(d.headers), d.body, keys, NOW)).toEqual(want);
    const shouting = Object.fromEntries(Object.entries(d.headers).map(([k, v]) => [k.toUpperCase(), v]));
    expect(verifyWebhook(shouting, d.body, keys, NOW)).toEqual(want);
    expect(verifyWebhook(d.headers, new TextEncoder().encode(d.body), keys, NOW)).toEqual(want);
  });

  it("with any listed key (a rotation leaves the previous one retiring), within 300 s either way", () => {
    const d = delivery({ key: other });
    expect(verifyWebhook(d.headers, d.body, listed(key, { ...other, status: "retiring" }), NOW)).toMatchObject({ ok: true, kid: other.kid });
    expect(WEBHOOK_TOLERANCE_SECS).toBe(300);
    expect(verifyWebhook(d.headers, d.body, listed(other), NOW + 300_000).ok).toBe(true);
    expect(verifyWebhook(d.headers, d.body, listed(other), NOW - 300_000).ok).toBe(true);
    // A Standard Webhooks header may list several signatures; one of them must verify.
    const many = { ...only(d.headers, "x-svc-"), "webhook-signature": `v1,bm90IHRoaXM= v1a,${"A".repeat(86)}== ${d.headers["webhook-signature"]}` };
    expect(verifyWebhook(many, d.body, listed(other), NOW).ok).toBe(true);
  });
});

describe("verifyWebhook refuses", () => {
  const d = delivery();
  const keys = listed(key);
  const reason = (h: WebhookHeaders, b: string | Uint8Array = d.body, k: Parameters<typeof verifyWebhook>[2] = keys, now = NOW) => {
    const v = verifyWebhook(h, b, k, now);
    return v.ok ? "ok" : v.reason;
  };

  it("a tampered body or header (bad_signature), and a key it was not signed with", () => {
    expect(reason(d.headers, d.body.replace("DEPEG", "PEGGED"))).toBe("bad_signature");
    expect(reason(d.headers, `${d.body} `)).toBe("bad_signature");
    const otherId = randomUUID();
    expect(reason({ ...d.headers, "x-svc-event-id": otherId, "webhook-id": otherId })).toBe("bad_signature");
    const ts = String(d.timestamp - 1);
    expect(reason({ ...d.headers, "x-svc-timestamp": ts, "webhook-timestamp": ts })).toBe("bad_signature");
    expect(reason(d.headers, d.body, listed(other))).toBe("bad_signature");
    // One valid and one forged signature: both present schemes must verify.
    const forged = delivery({ key: other });
    expect(reason({ ...d.headers, "webhook-signature": forged.headers["webhook-signature"]! })).toBe("bad_signature");
  });

  it("a stale or future delivery (timestamp_out_of_window): a replay", () => {
    expect(reason(d.headers, d.body, keys, NOW + 301_000)).toBe("timestamp_out_of_window");
    expect(reason(d.headers, d.body, keys, NOW - 301_000)).toBe("timestamp_out_of_window");
    expect(verifyWebhook(d.headers, d.body, keys, NOW + 301_000, { toleranceSecs: 600 }).ok).toBe(true);
    expect(reason(d.headers, d.body, keys, Number.NaN)).toBe("timestamp_out_of_window");
  });

  it("an unsigned delivery, missing or disagreeing headers, malformed values, no usable key", () => {
    expect(reason({ "content-type": "application/json" })).toBe("missing_headers");
    expect(reason(only(only(d.headers, "x-svc-signature"), "webhook-signature"))).toBe("missing_headers");
    expect(reason(only(d.headers, "x-svc-timestamp"))).toBe("missing_headers");
    expect(reason({ ...d.headers, "webhook-id": randomUUID() })).toBe("header_mismatch");
    expect(reason({ ...d.headers, "x-svc-event-id": "not-a-uuid", "webhook-id": "not-a-uuid" })).toBe("malformed_headers");
    expect(reason({ ...d.headers, "x-svc-timestamp": `${d.timestamp}000`, "webhook-timestamp": `${d.timestamp}000` })).toBe("malformed_headers");
    expect(reason({ ...d.headers, "x-svc-signature": "rsa:abc" })).toBe("malformed_headers");
    expect(reason({ ...d.headers, "webhook-signature": "v1,abc" })).toBe("malformed_headers");
    expect(reason({ ...d.headers, "x-svc-signature": [d.headers["x-svc-signature"]!, d.headers["x-svc-signature"]!] })).toBe("malformed_headers");
    expect(reason(d.headers, d.body, [])).toBe("no_usable_key");
    expect(reason(d.headers, d.body, [{ kid: "k", public_key: "AAAA" }])).toBe("no_usable_key");
  });
});

describe("verifyWebhook is the service's verifier, and its Ed25519 agrees with OpenSSL", () => {
  const sig = (h: Record<string, string>) => h["x-svc-signature"]!.slice("ed25519:".length);
  const flipBase64 = (s: string, i: number) => {
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const at = i % 86;
    return s.slice(0, at) + alphabet[(alphabet.indexOf(s[at]!) + 1) % 64] + s.slice(at + 1);
  };
  /** S + L: the same signature with a non-canonical scalar (malleability); RFC 8032 verifiers refuse it. */
  const malleate = (b64: string) => {
    const bytes = Buffer.from(b64, "base64");
    const L = 2n ** 252n + 27742317777372353535851937790883648493n;
    let s = 0n;
    for (let i = 63; i >= 32; i--) s = (s << 8n) | BigInt(bytes[i]!);
    s += L;
    for (let i = 32; i < 64; i++) {
      bytes[i] = Number(s & 0xffn);
      s >>= 8n;
    }
    return bytes.toString("base64");
  };
  /** OpenSSL's key object for a listed key, built here from the raw bytes (independent of the code under test). */
  const openssl = (publicKey: string): KeyObject =>
    createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: Buffer.from(publicKey, "base64").toString("base64url") }, format: "jwk" });
  type SigMutation = (signature: string, d: ReturnType<typeof delivery>) => string;
  const sigMutation: fc.Arbitrary<SigMutation> = fc.oneof(
    fc.constant<SigMutation>((s) => s),
    fc.nat().map<SigMutation>((i) => (s) => flipBase64(s, i)),
    fc.constant<SigMutation>((s) => malleate(s)),
    fc.constant<SigMutation>((_s, d) => sig(signDelivery({ eventId: d.headers["x-svc-event-id"]!, deliveryId: randomUUID(), attempt: 1, timestamp: d.timestamp, body: d.body, key: other }))),
  );

  it("the service's verifyDelivery is this verifier (one implementation)", () => {
    const d = delivery();
    const keys = listed(key);
    for (const [h, now] of [
      [d.headers, NOW],
      [d.headers, NOW + 301_000],
      [{ ...d.headers, "webhook-id": randomUUID() }, NOW],
      [{}, NOW],
    ] as const) {
      expect(verifyDelivery(h, d.body, keys, now)).toEqual(verifyWebhook(h, d.body, keys, now));
    }
  });

  it("accepts exactly the signatures OpenSSL accepts: valid, tampered, malleated, another key's, over any body", () => {
    fc.assert(
      fc.property(sigMutation, fc.boolean(), fc.constantFrom("current", "other", "both"), fc.string({ maxLength: 200 }), (mutate, tamperBody, keySet, text) => {
        const d = delivery({ body: text });
        const signature = mutate(sig(d.headers), d);
        const b = tamperBody ? `${d.body}x` : d.body;
        const headers = { ...d.headers, "x-svc-signature": `ed25519:${signature}`, "webhook-signature": `v1a,${signature}` };
        const keys = keySet === "both" ? listed(other, key) : keySet === "current" ? listed(key) : listed(other);
        const data = Buffer.concat([Buffer.from(`${d.headers["x-svc-event-id"]}.${d.timestamp}.`, "utf8"), Buffer.from(b, "utf8")]);
        const byOpenssl = keys.some((k) => verify(null, data, openssl(k.public_key), Buffer.from(signature, "base64")));
        const v = verifyWebhook(headers, b, keys, NOW);
        expect(v.ok ? "ok" : v.reason).toBe(byOpenssl ? "ok" : "bad_signature");
      }),
      { numRuns: 400 },
    );
  });
});
