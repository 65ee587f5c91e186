/**
 * Webhook delivery end to end (issue 6): the running service (NATS, PGlite, engine, projectors, dispatcher, delivery
 * worker, uWS API) fed by a small scenario, and a real HTTPS receiver on loopback whose certificate comes from a CA
 * handed to the service as test-only configuration. The receiver verifies every delivery with node:crypto against
 * the keys the service serves at `/v1/meta/webhook-keys`, checks the timestamp window and de-duplicates by event id.
 *
 * A user signs in through the login widget route and registers two webhooks through the API: one whose receiver
 * answers 500 twice and then 200 (each event arrives on attempt 3 with its one event id), one whose receiver always
 * answers 500 (each event is dead-lettered after the sixth attempt; WEBHOOK_TIME_SCALE runs the 2 h 35 min schedule
 * in seconds). Replay then re-sends only the undelivered events, with their original ids.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import type { Service } from "../../src/cli/service.ts";
import { eventIdFor } from "../../src/delivery/index.ts";
import { BOT_TOKEN, JWT_SECRET, widgetPayload } from "../http/helpers.ts";
import { NAME, startReceiver, type Receiver } from "../delivery/receiver.ts";
import { waitFor } from "../support/ports.ts";
import { qualifyingAlerts, writeWebhookScenario } from "./scenario.ts";
import { startTestService, type TestService } from "../support/service.ts";

type Obj = Record<string, unknown>;

const catalog = loadShippedCatalog();
const USDC = catalog.bySymbol("USDC")!;
const dir = mkdtempSync(join(tmpdir(), "peg-webhooks-"));
const SPEED = 60;
/** 0, 2.5 ms, 15 ms, 150 ms, 900 ms, 3.6 s: the whole schedule in under 5 s. */
const TIME_SCALE = "0.0005";

let running: TestService;
let rx: Receiver;
let service: Service;
let base: string;
let token: string;
let startedAt: number;

async function api(method: string, path: string, body?: unknown): Promise<{ status: number; body: Obj }> {
  const res = await fetch(base + path, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text === "" ? {} : (JSON.parse(text) as Obj) };
}

interface DeliveryRow {
  id: string;
  event_id: string;
  alert_id: string | null;
  attempt: number;
  status: string;
  response_status: number | null;
  error: string | null;
  next_attempt_at: string | null;
  request_headers: Record<string, string> | null;
}

async function deliveries(hookId: string): Promise<DeliveryRow[]> {
  const a = await api("GET", `/v1/me/webhooks/${hookId}/deliveries?limit=100`);
  expect(a.status).toBe(200);
  return a.body["data"] as DeliveryRow[];
}

let flaky: Obj;
let failing: Obj;

beforeAll(async () => {
  rx = await startReceiver();
  startedAt = Math.floor(Date.now() / 10_000) * 10_000;
  const scenario = writeWebhookScenario(dir, startedAt);
  const env = { FEED: `scenario:${scenario}`, SCENARIO_SPEED: String(SPEED), JWT_SECRET, TELEGRAM_BOT_TOKEN: BOT_TOKEN, WEBHOOK_TIME_SCALE: TIME_SCALE, WEBHOOK_ALLOWED_PORTS: String(rx.port) };
  const webhookTestOnly = { resolve: async (host: string) => (host === NAME ? ["127.0.0.1"] : []), ca: rx.ca, allowLoopback: true };
  running = await startTestService({ env, dataDir: dir, catalog, io: { webhookTestOnly } });
  ({ service, base } = running);

  // The receiver trusts exactly the keys the service publishes.
  const keys = (await (await fetch(`${base}/v1/meta/webhook-keys`)).json()) as { keys: { kid: string; public_key: string; status: string }[] };
  expect(keys.keys).toHaveLength(1);
  expect(keys.keys[0]!.status).toBe("active");
  rx.keys = keys.keys;

  const login = await fetch(`${base}/v1/auth/messenger`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(widgetPayload({ id: 4242, first_name: "Hook", username: "hook" }, Date.now())),
  });
  expect(login.status).toBe(200);
  token = ((await login.json()) as { token: string }).token;

  const a = await api("POST", "/v1/me/webhooks", { url: `https://${NAME}:${rx.port}/flaky/2`, asset: "USDC", threshold_bps: 10 });
  expect(a.status, JSON.stringify(a.body)).toBe(201);
  flaky = a.body;
  const b = await api("POST", "/v1/me/webhooks", { url: `https://${NAME}:${rx.port}/500`, asset: "USDC", threshold_bps: 10 });
  expect(b.status, JSON.stringify(b.body)).toBe(201);
  failing = b.body;
  // The first transition is ~510 scenario seconds (8.5 s) in: the webhooks exist before it.
  expect(await service.store.alerts({ limit: 1, offset: 0 })).toHaveLength(0);

  await running.scenarioDone(5);
}, 120_000);

afterAll(async () => {
  await running?.stop();
  await rx?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The alert ids the dispatch rules send to a webhook with threshold 10 bps, oldest first. */
const qualifying = async (): Promise<string[]> => (await qualifyingAlerts(service, USDC.mint, USDC.calibration)).map((a) => a.id);

describe("webhook delivery through the running service", () => {
  it("delivers every qualifying transition, signed, on attempt 3 after two 500s, with one event id per event", async () => {
    const expected = await qualifying();
    expect(expected.length).toBeGreaterThanOrEqual(2);
    const ids = expected.map((alertId) => eventIdFor(flaky["id"] as string, alertId));
    await waitFor(() => ids.every((id) => rx.acted.includes(id)), 30_000, "every qualifying event delivered");

    const onFlaky = rx.received.filter((r) => r.path === "/flaky/2");
    for (const id of ids) {
      const got = onFlaky.filter((r) => r.eventId === id);
      expect(got.map((r) => r.headers["x-svc-attempt"])).toEqual(["1/6", "2/6", "3/6"]);
      expect(new Set(got.map((r) => r.headers["x-svc-delivery-id"])).size).toBe(3);
      const body = JSON.parse(got[2]!.body) as Obj;
      expect(body).toMatchObject({ asset: "USDC", evidence_status: "pending", calibration: USDC.calibration });
      expect(body["evidence_url"]).toBe(`http://localhost:${service.api.port}/v1/audit/${body["alert_id"] as string}`);
      expect(body).not.toHaveProperty("test");
    }
    // Nothing else went to this webhook, and every request the receiver saw verified against the published key.
    expect(new Set(onFlaky.map((r) => r.eventId))).toEqual(new Set(ids));
    expect(rx.received.every((r) => r.verified)).toBe(true);

    // The history lists each attempt: failed (500, with the next attempt's time), failed, delivered.
    await waitFor(async () => (await deliveries(flaky["id"] as string)).filter((d) => d.status === "delivered").length === ids.length, 10_000, "history written");
    const rows = await deliveries(flaky["id"] as string);
    expect(rows).toHaveLength(ids.length * 3);
    for (const id of ids) {
      const chain = rows.filter((d) => d.event_id === id).sort((x, y) => x.attempt - y.attempt);
      expect(chain.map((d) => [d.attempt, d.status, d.response_status, d.error])).toEqual([
        [1, "failed", 500, "http_status"],
        [2, "failed", 500, "http_status"],
        [3, "delivered", 200, null],
      ]);
      expect(chain[0]!.next_attempt_at).not.toBeNull();
      expect(chain[2]!.next_attempt_at).toBeNull();
      expect(chain[2]!.request_headers?.["x-svc-event-id"]).toBe(id);
    }
    const hook = (await api("GET", "/v1/me/webhooks")).body["data"] as Obj[];
    expect(hook.find((h) => h["id"] === flaky["id"])).toMatchObject({ last_status: "delivered", consecutive_failures: 0 });
  });

  it("dead-letters after the sixth failure, and replay re-sends only the undelivered events with their original ids", async () => {
    const expected = await qualifying();
    const ids = expected.map((alertId) => eventIdFor(failing["id"] as string, alertId));
    const hookId = failing["id"] as string;
    await waitFor(async () => (await deliveries(hookId)).filter((d) => d.status === "dead_lettered").length === ids.length, 30_000, "every event dead-lettered");
    const rows = await deliveries(hookId);
    expect(rows).toHaveLength(ids.length * 6);
    for (const id of ids) {
      const chain = rows.filter((d) => d.event_id === id).sort((x, y) => x.attempt - y.attempt);
      expect(chain.map((d) => d.status)).toEqual(["failed", "failed", "failed", "failed", "failed", "dead_lettered"]);
    }
    const listed = (await api("GET", "/v1/me/webhooks")).body["data"] as Obj[];
    expect(listed.find((h) => h["id"] === hookId)).toMatchObject({ last_status: "dead_lettered", consecutive_failures: ids.length * 6 });

    const since = new Date(startedAt - 60_000).toISOString();
    // Everything of the flaky webhook was delivered: nothing to replay.
    expect(await api("POST", `/v1/me/webhooks/${flaky["id"] as string}/replay`, { since })).toEqual({ status: 202, body: { queued: 0 } });
    // A window more than 7 days back is refused.
    expect((await api("POST", `/v1/me/webhooks/${hookId}/replay`, { since: new Date(startedAt - 8 * 86_400_000).toISOString() })).status).toBe(400);

    // The receiver is fixed (the URL now points at a path that answers 200); replay the window.
    expect((await api("PATCH", `/v1/me/webhooks/${hookId}`, { url: `https://${NAME}:${rx.port}/hook` })).status).toBe(200);
    expect(await api("POST", `/v1/me/webhooks/${hookId}/replay`, { since })).toEqual({ status: 202, body: { queued: ids.length } });
    await waitFor(() => ids.every((id) => rx.acted.includes(id)), 20_000, "replayed events delivered");
    const replayed = rx.received.filter((r) => r.path === "/hook");
    expect(replayed.map((r) => r.eventId).sort()).toEqual([...ids].sort());
    expect(replayed.every((r) => r.verified && !r.duplicate && r.headers["x-svc-attempt"] === "1/6")).toBe(true);
    for (const r of replayed) expect(JSON.parse(r.body)).toMatchObject({ evidence_status: "ready" });

    // Delivered now: a second replay of the same window queues nothing.
    await waitFor(async () => (await deliveries(hookId)).filter((d) => d.status === "delivered").length === ids.length, 10_000, "replay recorded");
    expect(await api("POST", `/v1/me/webhooks/${hookId}/replay`, { since })).toEqual({ status: 202, body: { queued: 0 } });
  });

  it("POST /test sends a signed synthetic event marked test: true through the same worker", async () => {
    const hookId = failing["id"] as string; // now at /hook
    const a = await api("POST", `/v1/me/webhooks/${hookId}/test`);
    expect(a.status).toBe(202);
    const deliveryId = a.body["delivery_id"] as string;
    await waitFor(() => rx.received.some((r) => r.headers["x-svc-delivery-id"] === deliveryId), 10_000, "test event received");
    const got = rx.received.find((r) => r.headers["x-svc-delivery-id"] === deliveryId)!;
    expect(got.verified).toBe(true);
    expect(JSON.parse(got.body)).toMatchObject({ asset: "USDC", test: true });
    await waitFor(async () => (await deliveries(hookId)).some((d) => d.id === deliveryId && d.status === "delivered"), 10_000, "test delivery recorded");
    expect((await api("POST", "/v1/me/webhooks/00000000-0000-4000-8000-000000000000/test")).status).toBe(404);
  });

  it("honours a 429's longer Retry-After (scaled like the schedule) before the next attempt", async () => {
    const created = await api("POST", "/v1/me/webhooks", { url: `https://${NAME}:${rx.port}/429-once`, asset: "USDC", threshold_bps: 10 });
    expect(created.status).toBe(201);
    const hookId = created.body["id"] as string;
    expect((await api("POST", `/v1/me/webhooks/${hookId}/test`)).status).toBe(202);
    await waitFor(async () => (await deliveries(hookId)).some((d) => d.status === "delivered"), 10_000, "the retry after the 429");
    const [second, first] = (await deliveries(hookId)) as (DeliveryRow & { sent_at: string })[];
    expect([first!.attempt, first!.status, first!.response_status, first!.error]).toEqual([1, "failed", 429, "http_status"]);
    expect([second!.attempt, second!.status, second!.response_status]).toEqual([2, "delivered", 204]);
    // Retry-After: 60 s at time scale 0.0005 is 30 ms, longer than the scheduled 2.5 ms: it wins.
    expect(Date.parse(first!.next_attempt_at!) - Date.parse(first!.sent_at)).toBeGreaterThanOrEqual(30);
    expect(Date.parse(second!.sent_at)).toBeGreaterThanOrEqual(Date.parse(first!.next_attempt_at!));
  });

  it("the signing key survives a restart of the key ring: /v1/meta/webhook-keys still lists the kid that signed", async () => {
    const listed = (await (await fetch(`${base}/v1/meta/webhook-keys`)).json()) as { keys: { kid: string }[] };
    const kids = new Set(rx.received.map((r) => r.headers["x-svc-key-id"]));
    expect([...kids]).toEqual([listed.keys[0]!.kid]);
  });
});
