/**
 * The telegram subscription channel: preference rules (minimum severity, recoveries, quiet hours in the user's time
 * zone across midnight and a daylight-saving change) and the Bot API client against a local server that speaks the
 * Bot API (`/bot<token>/sendMessage`, `{ok, result}` / `{ok: false, error_code, description, parameters}`).
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildEvent } from "../../src/delivery/payload.ts";
import { decideTelegram, sendTelegram, type TelegramPreferences } from "../../src/delivery/telegram.ts";

const TOKEN = "123456:TEST-token_abc";
const event = buildEvent(
  { asset: "USDC", from_state: "PEGGED", to_state: "DEPEG", discount_bps: 120, ts: Date.UTC(2026, 10, 21, 10), alert_id: "0190a3c4-1111-8222-9333-444455556666", evidence_status: "ready", calibration: "calibrated" },
  "https://oracle.example.com",
);
const prefs = (p: Partial<TelegramPreferences> = {}): TelegramPreferences => ({ timezone: "Europe/Berlin", quiet_hours: null, min_severity: "DRIFT", ...p });

describe("who gets what, when", () => {
  it("sends at or above the minimum severity, and the recovery from a state that was", () => {
    const now = Date.UTC(2026, 10, 21, 12);
    expect(decideTelegram({ from_state: "PEGGED", to_state: "DEPEG" }, prefs({ min_severity: "DEPEG" }), now)).toEqual({ send: true, at: now });
    expect(decideTelegram({ from_state: "PEGGED", to_state: "DRIFT" }, prefs({ min_severity: "DEPEG" }), now)).toEqual({ send: false, reason: "below_min_severity" });
    expect(decideTelegram({ from_state: "DEPEG", to_state: "PEGGED" }, prefs({ min_severity: "DEPEG" }), now)).toMatchObject({ send: true });
    expect(decideTelegram({ from_state: "DRIFT", to_state: "PEGGED" }, prefs({ min_severity: "DEPEG" }), now)).toEqual({ send: false, reason: "below_min_severity" });
    expect(decideTelegram({ from_state: "PEGGED", to_state: "UNKNOWN" }, prefs(), now)).toEqual({ send: false, reason: "below_min_severity" });
    expect(decideTelegram({ from_state: "CRITICAL", to_state: "BLACK_SWAN" }, prefs({ min_severity: "BLACK_SWAN" }), now)).toMatchObject({ send: true });
  });

  it("holds an alert during quiet hours (local time, wrapping midnight) until they end", () => {
    const quiet = prefs({ quiet_hours: { start: "22:00", end: "07:00" } });
    // 21:59 Berlin (UTC+1 in November) is before the window: sent at once.
    const before = Date.UTC(2026, 10, 21, 20, 59, 30);
    expect(decideTelegram(event, quiet, before)).toEqual({ send: true, at: before });
    // 23:30 Berlin: held to 07:00 Berlin = 06:00 UTC the next day.
    expect(decideTelegram(event, quiet, Date.UTC(2026, 10, 21, 22, 30))).toEqual({ send: true, at: Date.UTC(2026, 10, 22, 6, 0), heldForQuietHours: true });
    // 06:59 Berlin: one minute left.
    expect(decideTelegram(event, quiet, Date.UTC(2026, 10, 22, 5, 59, 10))).toEqual({ send: true, at: Date.UTC(2026, 10, 22, 6, 0), heldForQuietHours: true });
    // 07:00 Berlin exactly: the window is over.
    const at7 = Date.UTC(2026, 10, 22, 6, 0);
    expect(decideTelegram(event, quiet, at7)).toEqual({ send: true, at: at7 });
  });

  it("follows the time zone across a daylight-saving change", () => {
    // Europe/Berlin leaves summer time on 2026-10-25 at 03:00 local (01:00 UTC). Quiet 01:00-06:00 local.
    const quiet = prefs({ quiet_hours: { start: "01:00", end: "06:00" } });
    // 00:30 UTC = 02:30 CEST: held until 06:00 CET = 05:00 UTC.
    expect(decideTelegram(event, quiet, Date.UTC(2026, 9, 25, 0, 30))).toEqual({ send: true, at: Date.UTC(2026, 9, 25, 5, 0), heldForQuietHours: true });
    // A window in another zone.
    const tokyo = prefs({ timezone: "Asia/Tokyo", quiet_hours: { start: "00:00", end: "08:00" } });
    expect(decideTelegram(event, tokyo, Date.UTC(2026, 10, 21, 16, 0))).toEqual({ send: true, at: Date.UTC(2026, 10, 21, 23, 0), heldForQuietHours: true });
  });

  it("an empty window holds nothing; a malformed one is refused", () => {
    const now = Date.UTC(2026, 10, 21, 12);
    expect(decideTelegram(event, prefs({ quiet_hours: { start: "13:00", end: "13:00" } }), now)).toEqual({ send: true, at: now });
    expect(() => decideTelegram(event, prefs({ quiet_hours: { start: "25:00", end: "07:00" } }), now)).toThrow(/HH:MM/);
  });
});

describe("the Bot API client against a local Bot API server", () => {
  let server: Server;
  let base: string;
  const received: { chat_id: number; text: string }[] = [];
  let mode: "ok" | "flood" | "blocked" | "slow" | "garbage" = "ok";

  beforeAll(async () => {
    server = createServer((req, res) => {
      let raw = "";
      req.on("data", (c: Buffer) => (raw += c.toString()));
      req.on("end", () => {
        const reply = (status: number, body: unknown) => {
          res.writeHead(status, { "content-type": "application/json" });
          res.end(JSON.stringify(body));
        };
        if (req.url !== `/bot${TOKEN}/sendMessage`) return reply(401, { ok: false, error_code: 401, description: "Unauthorized" });
        if (req.method !== "POST" || req.headers["content-type"] !== "application/json") return reply(400, { ok: false, error_code: 400, description: "Bad Request: expected JSON" });
        const msg = JSON.parse(raw) as { chat_id: number; text: string };
        if (typeof msg.chat_id !== "number" || typeof msg.text !== "string" || msg.text === "") return reply(400, { ok: false, error_code: 400, description: "Bad Request: message text is empty" });
        if (mode === "flood") return reply(429, { ok: false, error_code: 429, description: "Too Many Requests: retry after 7", parameters: { retry_after: 7 } });
        if (mode === "blocked") return reply(403, { ok: false, error_code: 403, description: "Forbidden: bot was blocked by the user" });
        if (mode === "garbage") {
          res.writeHead(502);
          return res.end("<html>bad gateway</html>");
        }
        if (mode === "slow") return setTimeout(() => reply(200, { ok: true, result: { message_id: 1 } }), 1_000);
        received.push(msg);
        reply(200, { ok: true, result: { message_id: received.length, chat: { id: msg.chat_id, type: "private" }, date: 0, text: msg.text } });
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it("delivers to the user's chat with the alert text", async () => {
    mode = "ok";
    expect(await sendTelegram(base, TOKEN, 4242, event)).toEqual({ status: "delivered", messageId: 1 });
    expect(received[0]!.chat_id).toBe(4242);
    expect(received[0]!.text).toContain("USDC");
    expect(received[0]!.text).toContain("DEPEG");
    expect(received[0]!.text).toContain("https://oracle.example.com/v1/audit/0190a3c4-1111-8222-9333-444455556666");
  });

  it("reports flood control with its wait, a blocked bot as permanent, a wrong token, a timeout and a non-JSON error", async () => {
    mode = "flood";
    expect(await sendTelegram(base, TOKEN, 1, event)).toMatchObject({ status: "failed", retryAfterMs: 7_000, permanent: false });
    mode = "blocked";
    expect(await sendTelegram(base, TOKEN, 1, event)).toMatchObject({ status: "failed", permanent: true, error: expect.stringContaining("blocked") });
    mode = "ok";
    expect(await sendTelegram(base, "999:wrong", 1, event)).toMatchObject({ status: "failed", permanent: true, error: expect.stringContaining("Unauthorized") });
    mode = "slow";
    expect(await sendTelegram(base, TOKEN, 1, event, { timeoutMs: 100 })).toMatchObject({ status: "failed", error: "timeout", permanent: false });
    mode = "garbage";
    expect(await sendTelegram(base, TOKEN, 1, event)).toMatchObject({ status: "failed", error: "http_status: HTTP 502", permanent: false });
  });
});
