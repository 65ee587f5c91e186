import { createHash, randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { buildEvent, eventIdFor, evidenceUrl, serialiseEvent, type EventInput } from "../../src/delivery/payload.ts";
import { generateSigningKey, publicKeyList, signDelivery, verifyDelivery } from "../../src/delivery/index.ts";

const T0 = Date.UTC(2026, 5, 12, 10, 0, 0);
const ALERT = "0b9f4a52-6d0e-4c1e-9a8f-3d2b1c0e9f7a";
const BASE = "https://oracle.example.com";
const input = (over: Partial<EventInput> = {}): EventInput => ({
  asset: "USDC",
  from_state: "PEGGED",
  to_state: "DEPEG",
  discount_bps: -212,
  ts: T0,
  alert_id: ALERT,
  evidence_status: "pending",
  calibration: "calibrated",
  ...over,
});
const UUID_V8 = /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe("buildEvent / serialiseEvent (interface 6.1)", () => {
  it("has exactly the nine fields of 6.1, in order, every one present", () => {
    const body = serialiseEvent(buildEvent(input(), BASE));
    expect(body).toBe(
      '{"asset":"USDC","from_state":"PEGGED","to_state":"DEPEG","discount_bps":-212,"ts":"2026-06-12T10:00:00.000Z",' +
        `"alert_id":"${ALERT}","evidence_url":"https://oracle.example.com/v1/audit/${ALERT}","evidence_status":"pending","calibration":"calibrated"}`,
    );
    expect(Object.keys(JSON.parse(body) as object)).toEqual([
      "asset", "from_state", "to_state", "discount_bps", "ts", "alert_id", "evidence_url", "evidence_status", "calibration",
    ]);
  });

  it("types: discount_bps an integer, ts RFC 3339 UTC, alert_id a UUID, evidence_url absolute", () => {
    const e = JSON.parse(serialiseEvent(buildEvent(input({ discount_bps: 37, calibration: "provisional", evidence_status: "ready" }), BASE))) as Record<string, unknown>;
    expect(e["discount_bps"]).toBe(37);
    expect(e["ts"]).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(new URL(e["evidence_url"] as string).href).toBe(e["evidence_url"]);
    expect(e["calibration"]).toBe("provisional");
    expect(e["evidence_status"]).toBe("ready");
    expect(e["test"]).toBeUndefined();
  });

  it("adds test: true, last, only for test events", () => {
    const body = serialiseEvent(buildEvent(input({ test: true }), BASE));
    expect(body.endsWith(',"test":true}')).toBe(true);
    expect(serialiseEvent(buildEvent(input({ test: false }), BASE))).not.toContain("test");
  });

  it("takes every evidence status, and refuses bad inputs", () => {
    for (const s of ["ready", "pending", "failed_permanent", "unknown"] as const) expect(buildEvent(input({ evidence_status: s }), BASE).evidence_status).toBe(s);
    expect(() => buildEvent(input({ discount_bps: 1.5 }), BASE)).toThrow(RangeError);
    expect(() => buildEvent(input({ evidence_status: "done" as never }), BASE)).toThrow(TypeError);
    expect(() => buildEvent(input({ calibration: "beta" as never }), BASE)).toThrow(TypeError);
    expect(() => buildEvent(input({ alert_id: "42" }), BASE)).toThrow(TypeError);
    expect(() => buildEvent(input({ ts: 1.5 }), BASE)).toThrow(RangeError);
  });

  it("the serialised string is the signed body: a receiver verifies exactly these bytes", () => {
    const key = generateSigningKey(T0);
    const body = serialiseEvent(buildEvent(input(), BASE));
    const eventId = eventIdFor("wh_1", ALERT);
    const headers = signDelivery({ eventId, deliveryId: randomUUID(), attempt: 1, timestamp: T0 / 1000, body, key });
    expect(verifyDelivery(headers, body, publicKeyList([key], T0).keys, T0)).toMatchObject({ ok: true, eventId });
    expect(verifyDelivery(headers, JSON.stringify(JSON.parse(body), null, 1), publicKeyList([key], T0).keys, T0)).toMatchObject({ ok: false });
  });
});

describe("evidenceUrl", () => {
  it("is the base URL + /v1/audit/<id>, with a base path kept and trailing slashes dropped", () => {
    expect(evidenceUrl("https://oracle.example.com/", ALERT)).toBe(`https://oracle.example.com/v1/audit/${ALERT}`);
    expect(evidenceUrl("https://example.com/peg/", ALERT)).toBe(`https://example.com/peg/v1/audit/${ALERT}`);
    expect(evidenceUrl("http://localhost:8080", ALERT.toUpperCase())).toBe(`http://localhost:8080/v1/audit/${ALERT}`);
  });

  it("refuses a relative or non-http base, a query, and an id that is not a UUID", () => {
    expect(() => evidenceUrl("/v1", ALERT)).toThrow(TypeError);
    expect(() => evidenceUrl("ftp://example.com", ALERT)).toThrow(TypeError);
    expect(() => evidenceUrl("https://example.com/?a=1", ALERT)).toThrow(TypeError);
    expect(() => evidenceUrl(BASE, "../../etc/passwd")).toThrow(TypeError);
  });
});

describe("eventIdFor", () => {
  it("is a UUIDv8 (version 8, RFC 9562 variant), deterministic per (webhook, alert)", () => {
    const id = eventIdFor("wh_1", ALERT);
    expect(id).toMatch(UUID_V8);
    expect(eventIdFor("wh_1", ALERT)).toBe(id);
    expect(eventIdFor("wh_1", ALERT.toUpperCase())).toBe(id);
    expect(eventIdFor("wh_2", ALERT)).not.toBe(id);
    expect(eventIdFor("wh_1", randomUUID())).not.toBe(id);
  });

  it("is SHA-256 of the documented input with the version and variant bits set", () => {
    const h = createHash("sha256").update(`peg-oracle/webhook-event/v1\u0000wh_1\u0000${ALERT}`).digest();
    h[6] = (h[6]! & 0x0f) | 0x80;
    h[8] = (h[8]! & 0x3f) | 0x80;
    expect(eventIdFor("wh_1", ALERT).replace(/-/g, "")).toBe(h.subarray(0, 16).toString("hex"));
  });

  it("keeps the hash input unambiguous: the alert id must be a UUID, the webhook id non-empty", () => {
    expect(() => eventIdFor("a", "b\u0000c")).toThrow(TypeError);
    expect(() => eventIdFor("", ALERT)).toThrow(TypeError);
    expect(eventIdFor(`wh\u0000${ALERT}`, ALERT)).not.toBe(eventIdFor("wh", ALERT));
  });

  it("is accepted by signDelivery as a UUID", () => {
    const key = generateSigningKey(T0);
    expect(() => signDelivery({ eventId: eventIdFor("wh_1", ALERT), deliveryId: randomUUID(), attempt: 1, timestamp: T0 / 1000, body: "{}", key })).not.toThrow();
  });
});
