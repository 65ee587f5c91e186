import { describe, expect, it } from "vitest";
import { attemptId, derivedUuid, parseAnyWork, parseWork, type DeliveryWork, type TelegramWork } from "../../src/delivery/index.ts";

const ROOT = "2b7e1f0a-3c4d-4e5f-8a9b-0c1d2e3f4a5b";
const work: DeliveryWork = {
  v: 1,
  delivery_id: ROOT,
  root_id: ROOT,
  webhook_id: "0d3a9c1e-5b7f-4a2d-9e8c-1f2a3b4c5d6e",
  event_id: "8c41d2e3-f4a5-8b6c-9d7e-0f1a2b3c4d5e",
  alert_id: "05458426-ca37-8426-84c3-f54a1b2c3d4e",
  attempt: 1,
  not_before: 1_763_726_400_000,
  body: '{"asset":"USDC"}',
  test: false,
};
const encode = (x: unknown) => new TextEncoder().encode(JSON.stringify(x));

describe("delivery work messages", () => {
  it("derive later attempts' ids from the first one, deterministically and distinctly", () => {
    expect(attemptId(ROOT, 1)).toBe(ROOT);
    const ids = [2, 3, 4, 5, 6].map((n) => attemptId(ROOT, n));
    expect(new Set([ROOT, ...ids]).size).toBe(6);
    expect([2, 3, 4, 5, 6].map((n) => attemptId(ROOT, n))).toEqual(ids);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(derivedUuid("first", "a", "b")).not.toBe(derivedUuid("first", "a\u0000b"));
  });

  it("parse a well-formed message and refuse anything else", () => {
    expect(parseWork(encode(work))).toEqual(work);
    expect(parseWork(encode({ ...work, alert_id: null, test: true }))).toMatchObject({ alert_id: null, test: true });
    expect(parseWork(new TextEncoder().encode("not json"))).toBeNull();
    expect(parseWork(encode(null))).toBeNull();
    for (const bad of [{ v: 2 }, { attempt: 0 }, { attempt: 1.5 }, { delivery_id: "x" }, { not_before: "soon" }, { body: 1 }, { test: "no" }]) {
      expect(parseWork(encode({ ...work, ...bad })), JSON.stringify(bad)).toBeNull();
    }
  });

  it("tell a Telegram attempt from a webhook attempt (which has no kind, as first shipped), refusing malformed ones", () => {
    const tg: TelegramWork = {
      v: 1,
      kind: "telegram",
      notification_id: ROOT,
      subscription_id: 12,
      chat_id: 9_007_199_254_740_000,
      alert_id: "05458426-ca37-8426-84c3-f54a1b2c3d4e",
      attempt: 2,
      not_before: 1_763_726_400_000,
      body: '{"asset":"USDC"}',
    };
    expect(parseAnyWork(encode(tg))).toEqual({ kind: "telegram", work: tg });
    expect(parseAnyWork(encode(work))).toEqual({ kind: "webhook", work });
    // A Telegram message is never read as webhook work, nor the reverse.
    expect(parseAnyWork(encode({ ...work, kind: "telegram" }))).toBeNull();
    expect(parseAnyWork(encode([tg]))).toBeNull();
    for (const bad of [{ v: 2 }, { notification_id: "x" }, { subscription_id: "12" }, { chat_id: 1.5 }, { alert_id: null }, { attempt: 0 }, { not_before: null }, { body: {} }]) {
      expect(parseAnyWork(encode({ ...tg, ...bad })), JSON.stringify(bad)).toBeNull();
    }
  });
});
