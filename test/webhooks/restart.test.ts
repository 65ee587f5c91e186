/**
 * The retry schedule survives a restart (issue 6): a delivery that failed four times waits for its fifth attempt in
 * JetStream (a NAK-delayed work message) and in its delivery row (`next_attempt_at`); the service is stopped during
 * that wait and started again on the same store and NATS, and the fifth attempt goes out once, not before it was
 * due, with the same event id and signed by the same key.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import { startService, type Service, type ServiceIO } from "../../src/cli/service.ts";
import { parseConfig, type Config } from "../../src/config.ts";
import { deliveriesOf } from "../../src/store/index.ts";
import { BOT_TOKEN, JWT_SECRET, widgetPayload } from "../http/helpers.ts";
import { NAME, startReceiver, type Receiver } from "../delivery/receiver.ts";
import { startNats, type TestNats } from "../support/nats.ts";
import { freePort, waitFor } from "../support/ports.ts";
import { writeWebhookScenario } from "./scenario.ts";

const catalog = loadShippedCatalog();
const dir = mkdtempSync(join(tmpdir(), "peg-webhooks-restart-"));
/** Waits 0, 50 ms, 300 ms, 3 s, 18 s, 72 s. */
const TIME_SCALE = "0.01";

let nats: TestNats;
let rx: Receiver;
let service: Service | null = null;
let config: Config;
let io: ServiceIO;

beforeAll(async () => {
  nats = await startNats();
  rx = await startReceiver();
  const t0 = Math.floor(Date.now() / 10_000) * 10_000;
  config = parseConfig({
    PORT: String(await freePort()),
    METRICS_PORT: "0",
    HOST: "127.0.0.1",
    NATS_URL: nats.url,
    DATA_DIR: dir,
    FEED: `scenario:${writeWebhookScenario(dir, t0)}`,
    SCENARIO_SPEED: "60",
    JWT_SECRET,
    TELEGRAM_BOT_TOKEN: BOT_TOKEN,
    WEBHOOK_TIME_SCALE: TIME_SCALE,
    WEBHOOK_ALLOWED_PORTS: String(rx.port),
  });
  io = { log: () => {}, webhookTestOnly: { resolve: async (host) => (host === NAME ? ["127.0.0.1"] : []), ca: rx.ca, allowLoopback: true } };
}, 60_000);

afterAll(async () => {
  await service?.stop();
  await rx?.close();
  await nats?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

describe("the webhook retry schedule across a restart", () => {
  it("resumes the fifth attempt after a restart, once, when due, with the same event id and key", async () => {
    service = await startService(config, catalog, io);
    const base = `http://127.0.0.1:${service.api.port}`;
    rx.keys = ((await (await fetch(`${base}/v1/meta/webhook-keys`)).json()) as { keys: { kid: string; public_key: string }[] }).keys;
    const login = await fetch(`${base}/v1/auth/messenger`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(widgetPayload({ id: 77, first_name: "Restart" }, Date.now())),
    });
    const token = ((await login.json()) as { token: string }).token;
    const created = await fetch(`${base}/v1/me/webhooks`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ url: `https://${NAME}:${rx.port}/flaky/4`, asset: "USDC", threshold_bps: 10 }),
    });
    expect(created.status).toBe(201);
    const hookId = ((await created.json()) as { id: string }).id;

    // The first event fails four times; its fifth attempt is due 18 s after the fourth.
    await waitFor(() => rx.received.some((r) => r.headers["x-svc-attempt"] === "4/6"), 30_000, "the fourth attempt");
    const eventId = rx.received.find((r) => r.headers["x-svc-attempt"] === "4/6")!.eventId!;
    const kid = rx.received[0]!.headers["x-svc-key-id"];
    await service.stop();
    service = null;
    const stoppedAt = Date.now();

    service = await startService(config, catalog, io);
    const rows = await deliveriesOf(service.store.db, hookId, { limit: 100 });
    const fourth = rows.find((d) => d.event_id === eventId && d.attempt === 4)!;
    expect(fourth).toMatchObject({ status: "failed", response_status: 500 });
    expect(fourth.next_attempt_at).not.toBeNull();
    expect(rows.find((d) => d.event_id === eventId && d.attempt === 5)).toMatchObject({ status: "pending", scheduled_at: fourth.next_attempt_at });
    expect(stoppedAt).toBeLessThan(fourth.next_attempt_at!);

    await waitFor(() => rx.acted.includes(eventId), 40_000, "the fifth attempt after the restart");
    const fifth = rx.received.filter((r) => r.eventId === eventId && r.headers["x-svc-attempt"] === "5/6");
    expect(fifth).toHaveLength(1);
    expect(fifth[0]!.verified).toBe(true);
    expect(fifth[0]!.at).toBeGreaterThanOrEqual(fourth.next_attempt_at!);
    expect(fifth[0]!.headers["x-svc-key-id"]).toBe(kid);
    expect(rx.received.filter((r) => r.eventId === eventId).map((r) => r.headers["x-svc-attempt"])).toEqual(["1/6", "2/6", "3/6", "4/6", "5/6"]);
    await waitFor(
      async () => (await deliveriesOf(service!.store.db, hookId, { limit: 100 })).some((d) => d.event_id === eventId && d.attempt === 5 && d.status === "delivered"),
      10_000,
      "the fifth attempt recorded",
    );
  }, 120_000);
});
