/**
 * The Telegram channel and chat-host webhooks end to end (issue 6): the running service, fed by the two-dip USDC
 * scenario, sends each qualifying transition to subscribers with channel `telegram` through a local server that
 * speaks the Bot API, honouring each user's preferences, and posts chat-formatted, unsigned messages to a Slack
 * webhook (its host name resolved, in the test, to a loopback receiver whose certificate names it).
 *
 * Users (each signs in through the login widget route and subscribes through the API):
 * - `plain`: default preferences: every qualifying transition arrives once, in its own chat;
 * - `limited`: the Bot API answers 429 (retry_after) twice before accepting: each message arrives on attempt 3;
 * - `severe`: minimum severity CRITICAL: the DEPEG and the recovery from it are suppressed, the CRITICAL is sent
 *   (the recovery from the CRITICAL is inside the 30-minute floor of the first recovery, so it goes to no one);
 * - `asleep`: quiet hours around now: nothing is sent; each notification waits for the end of the quiet hours;
 * - `blocked`: the user blocked the bot (403): dead-lettered after one attempt, not retried;
 * - `watcher`: channel `dashboard`: `last_fired_at` is stamped and no message is sent.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import type { Service } from "../../src/cli/service.ts";
import { decideTelegram } from "../../src/delivery/index.ts";
import { notificationsOfSubscription, type NotificationRecord } from "../../src/store/index.ts";
import { BOT_TOKEN, JWT_SECRET, widgetPayload } from "../http/helpers.ts";
import { CHAT_NAMES, NAME, startReceiver, type Receiver } from "../delivery/receiver.ts";
import { startBotApi, type BotApi } from "../support/bot-api.ts";
import { waitFor } from "../support/ports.ts";
import { qualifyingAlerts, writeWebhookScenario } from "./scenario.ts";
import { startTestService, type TestService } from "../support/service.ts";

type Obj = Record<string, unknown>;

const catalog = loadShippedCatalog();
const USDC = catalog.bySymbol("USDC")!;
const dir = mkdtempSync(join(tmpdir(), "peg-telegram-"));
const TIME_SCALE = "0.0005";

const USERS = { plain: 7001, limited: 7002, severe: 7003, asleep: 7004, blocked: 7005, watcher: 7006 } as const;
type Who = keyof typeof USERS;

let running: TestService;
let bot: BotApi;
let rx: Receiver;
let service: Service;
let base: string;
const tokens = new Map<Who, string>();
const subs = new Map<Who, number>();
let quiet: { start: string; end: string };

async function api(who: Who, method: string, path: string, body?: unknown): Promise<{ status: number; body: Obj }> {
  const res = await fetch(base + path, {
    method,
    headers: { authorization: `Bearer ${tokens.get(who)!}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text === "" ? {} : (JSON.parse(text) as Obj) };
}

const hhmm = (h: number): string => `${String(((h % 24) + 24) % 24).padStart(2, "0")}:00`;

beforeAll(async () => {
  bot = await startBotApi(BOT_TOKEN);
  bot.script(USERS.limited, { rateLimitedFirst: 2, retryAfterSecs: 1 });
  bot.script(USERS.blocked, "blocked");
  rx = await startReceiver();
  const startedAt = Math.floor(Date.now() / 10_000) * 10_000;
  const env = {
    FEED: `scenario:${writeWebhookScenario(dir, startedAt)}`,
    SCENARIO_SPEED: "60",
    JWT_SECRET,
    TELEGRAM_BOT_TOKEN: BOT_TOKEN,
    TELEGRAM_API_URL: bot.url,
    WEBHOOK_TIME_SCALE: TIME_SCALE,
    WEBHOOK_ALLOWED_PORTS: String(rx.port),
  };
  const names = new Set<string>([NAME, ...CHAT_NAMES]);
  const webhookTestOnly = { resolve: async (host: string) => (names.has(host) ? ["127.0.0.1"] : []), ca: rx.ca, allowLoopback: true };
  running = await startTestService({ env, dataDir: dir, catalog, io: { webhookTestOnly } });
  ({ service, base } = running);

  const hour = new Date().getUTCHours();
  quiet = { start: hhmm(hour - 1), end: hhmm(hour + 3) };
  for (const [who, id] of Object.entries(USERS) as [Who, number][]) {
    const login = await fetch(`${base}/v1/auth/messenger`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(widgetPayload({ id, first_name: who, username: who }, Date.now())),
    });
    expect(login.status).toBe(200);
    tokens.set(who, ((await login.json()) as { token: string }).token);
    if (who === "severe") expect((await api(who, "PATCH", "/v1/me/preferences", { min_severity: "CRITICAL" })).status).toBe(200);
    if (who === "asleep") expect((await api(who, "PATCH", "/v1/me/preferences", { timezone: "UTC", quiet_hours: quiet })).status).toBe(200);
    const sub = await api(who, "POST", "/v1/me/subs", { asset: "USDC", channel: who === "watcher" ? "dashboard" : "telegram", threshold_bps: 10 });
    expect(sub.status, JSON.stringify(sub.body)).toBe(201);
    subs.set(who, sub.body["id"] as number);
  }
  const slack = await api("plain", "POST", "/v1/me/webhooks", { url: `https://hooks.slack.com:${rx.port}/services/T000/B000/XXXX`, asset: "USDC", threshold_bps: 10 });
  expect(slack.status, JSON.stringify(slack.body)).toBe(201);
  expect(slack.body["format"]).toBe("chat");
  // The first transition is ~8.5 s in: everything above exists before it.
  expect(await service.store.alerts({ limit: 1, offset: 0 })).toHaveLength(0);

  await running.scenarioDone(5);
}, 120_000);

afterAll(async () => {
  await running?.stop();
  await bot?.close();
  await rx?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The transitions the dispatch rules send to a target with threshold 10 bps, oldest first. */
const qualifying = () => qualifyingAlerts(service, USDC.mint, USDC.calibration);

const notifications = (who: Who): Promise<NotificationRecord[]> => notificationsOfSubscription(service.store.db, subs.get(who)!);
const messagesTo = (who: Who) => bot.messages.filter((m) => m.chat_id === USERS[who]);

describe("the Telegram channel through the running service", () => {
  it("sends every qualifying transition once to a subscriber with default preferences, in their own chat", async () => {
    const expected = await qualifying();
    expect(expected.length).toBeGreaterThanOrEqual(3);
    await waitFor(() => messagesTo("plain").length >= expected.length, 20_000, "plain's messages");
    await new Promise((r) => setTimeout(r, 500)); // nothing more arrives
    const got = messagesTo("plain");
    expect(got).toHaveLength(expected.length);
    for (const [i, q] of expected.entries()) {
      expect(got[i]!.text).toContain("USDC");
      expect(got[i]!.text).toContain(q.to_state);
      expect(got[i]!.text).toContain(`/v1/audit/${q.id}`);
    }
    const rows = await notifications("plain");
    expect(rows.map((n) => n.alert_id).sort()).toEqual(expected.map((q) => q.id).sort());
    expect(rows.every((n) => n.status === "delivered" && n.attempts === 1 && n.message_id !== null && !n.held_for_quiet_hours)).toBe(true);
    const mine = ((await api("plain", "GET", "/v1/me/subs")).body as unknown as Obj[])[0]!;
    expect(mine["last_fired_at"]).toEqual(expect.any(String));
  });

  it("retries a 429 after its retry_after and delivers on the third attempt", async () => {
    const expected = await qualifying();
    await waitFor(async () => (await notifications("limited")).filter((n) => n.status === "delivered").length === expected.length, 20_000, "limited's messages");
    const rows = await notifications("limited");
    expect(rows.every((n) => n.attempts === 3)).toBe(true);
    expect(messagesTo("limited")).toHaveLength(expected.length);
    const calls = bot.calls.filter((c) => c.chat_id === USERS.limited);
    expect(calls.filter((c) => c.status === 429)).toHaveLength(2 * expected.length);
  });

  it("suppresses transitions below the user's minimum severity, recoveries from them included", async () => {
    const expected = await qualifying();
    const prefs = { timezone: "UTC", quiet_hours: null, min_severity: "CRITICAL" as const };
    const sent = expected.filter((q) => decideTelegram(q, prefs, Date.now()).send);
    expect(expected.map((q) => q.to_state)).toEqual(["DEPEG", "PEGGED", "CRITICAL"]);
    expect(sent.map((q) => q.to_state)).toEqual(["CRITICAL"]);
    await waitFor(() => messagesTo("severe").length >= sent.length, 20_000, "severe's messages");
    expect(messagesTo("severe").map((m) => m.text.includes("CRITICAL"))).toEqual([true]);
    const rows = await notifications("severe");
    expect(rows.filter((n) => n.status === "suppressed").map((n) => n.error)).toEqual(expected.filter((q) => !sent.includes(q)).map(() => "below_min_severity"));
    expect(rows.filter((n) => n.status === "delivered")).toHaveLength(sent.length);
  });

  it("holds notifications during quiet hours until they end", async () => {
    const expected = await qualifying();
    await waitFor(async () => (await notifications("asleep")).length === expected.length, 20_000, "asleep's notifications");
    const rows = await notifications("asleep");
    const now = new Date();
    const endToday = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate(), Number(quiet.end.slice(0, 2)));
    const end = endToday > now.getTime() ? endToday : endToday + 86_400_000;
    for (const n of rows) expect(n).toMatchObject({ status: "pending", attempts: 0, held_for_quiet_hours: true, due_at: end });
    expect(messagesTo("asleep")).toHaveLength(0);
  });

  it("dead-letters a chat that blocked the bot after one attempt", async () => {
    const expected = await qualifying();
    await waitFor(async () => (await notifications("blocked")).filter((n) => n.status === "dead_lettered").length === expected.length, 20_000, "blocked's notifications");
    for (const n of await notifications("blocked")) expect(n).toMatchObject({ attempts: 1, response_status: 403, error: expect.stringContaining("blocked") });
    expect(bot.calls.filter((c) => c.chat_id === USERS.blocked)).toHaveLength(expected.length);
  });

  it("a dashboard subscription records that it fired and sends nothing", async () => {
    const mine = ((await api("watcher", "GET", "/v1/me/subs")).body as unknown as Obj[])[0]!;
    expect(mine).toMatchObject({ channel: "dashboard", last_fired_at: expect.any(String) });
    expect(await notifications("watcher")).toHaveLength(0);
    expect(bot.calls.filter((c) => c.chat_id === USERS.watcher)).toHaveLength(0);
  });

  it("marks each alert as fanned out (dispatched_at)", async () => {
    await waitFor(async () => (await service.store.alerts({ limit: 50, offset: 0 })).every((a) => a.dispatched_at !== null), 10_000, "every alert dispatched");
  });
});

describe("a chat-host webhook", () => {
  it("gets one unsigned, chat-formatted message per qualifying transition", async () => {
    const expected = await qualifying();
    await waitFor(() => rx.received.filter((r) => r.path.startsWith("/services/")).length >= expected.length, 20_000, "slack messages");
    const got = rx.received.filter((r) => r.path.startsWith("/services/"));
    expect(got).toHaveLength(expected.length);
    for (const [i, r] of got.entries()) {
      expect(r.headers["x-svc-signature"]).toBeUndefined();
      expect(r.headers["webhook-signature"]).toBeUndefined();
      const body = JSON.parse(r.body) as Obj;
      expect(Object.keys(body)).toEqual(["text"]);
      expect(body["text"]).toContain("USDC");
      expect(body["text"]).toContain(expected[i]!.to_state);
    }
  });
});
