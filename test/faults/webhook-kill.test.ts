/**
 * kill -9 in the middle of the webhook retry schedule (issue 6): the service, a child process, delivers a scenario's
 * transitions to a receiver that fails each event's first four attempts. Once the fourth attempt of the first event
 * is recorded and the fifth waits (18 s at the test's time scale), the service is killed with SIGKILL, with no
 * chance to flush or acknowledge anything, and started again on the same NATS and the same PGlite directory. The
 * schedule resumes: every qualifying event is delivered, each on its fifth attempt, never before that attempt was
 * due, once, with its original event id, signed with the same key; the receiver never sees an attempt more than
 * once except the one the kill may have interrupted.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BOT_TOKEN, JWT_SECRET, widgetPayload } from "../http/helpers.ts";
import { NAME, startReceiver, type Receiver } from "../delivery/receiver.ts";
import { startNats, type TestNats } from "../support/nats.ts";
import { freePort, waitFor } from "../support/ports.ts";
import { writeWebhookScenario } from "../webhooks/scenario.ts";
import { spawnService, type ServiceProcess } from "./harness.ts";


interface DeliveryRow {
  event_id: string;
  attempt: number;
  status: string;
  scheduled_at: string;
  next_attempt_at: string | null;
}

const dir = mkdtempSync(join(tmpdir(), "peg-webhook-kill-"));
let nats: TestNats;
let rx: Receiver;
let child: ServiceProcess | null = null;
let env: Record<string, string>;

beforeAll(async () => {
  nats = await startNats();
  rx = await startReceiver();
  const caFile = join(dir, "ca.pem");
  writeFileSync(caFile, rx.ca);
  const t0 = Math.floor(Date.now() / 10_000) * 10_000;
  env = {
    PORT: String(await freePort()),
    HOST: "127.0.0.1",
    NATS_URL: nats.url,
    DATA_DIR: join(dir, "data"),
    FEED: `scenario:${writeWebhookScenario(dir, t0)}`,
    SCENARIO_SPEED: "60",
    JWT_SECRET,
    TELEGRAM_BOT_TOKEN: BOT_TOKEN,
    // Waits 0, 50 ms, 300 ms, 3 s, 18 s, 72 s.
    WEBHOOK_TIME_SCALE: "0.01",
    TEST_WEBHOOK_CA_FILE: caFile,
    TEST_WEBHOOK_HOSTS: NAME,
    WEBHOOK_ALLOWED_PORTS: String(rx.port),
  };
}, 60_000);

afterAll(async () => {
  if (child !== null) {
    child.proc.kill("SIGKILL");
    await child.exited;
  }
  await rx?.close();
  await nats?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

describe("kill -9 while a webhook delivery waits for its next attempt", () => {
  it("resumes the schedule after the restart: every event on its fifth attempt, once, when due, with its original id", async () => {
    child = spawnService(env);
    const base = `http://127.0.0.1:${await child.serving}`;
    rx.keys = ((await (await fetch(`${base}/v1/meta/webhook-keys`)).json()) as { keys: { kid: string; public_key: string }[] }).keys;
    const login = await fetch(`${base}/v1/auth/messenger`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(widgetPayload({ id: 91, first_name: "Kill" }, Date.now())),
    });
    expect(login.status).toBe(200);
    const token = ((await login.json()) as { token: string }).token;
    const auth = { authorization: `Bearer ${token}` };
    const created = await fetch(`${base}/v1/me/webhooks`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({ url: `https://${NAME}:${rx.port}/flaky/4`, asset: "USDC", threshold_bps: 10 }),
    });
    expect(created.status).toBe(201);
    const hookId = ((await created.json()) as { id: string }).id;
    const deliveries = async (b: string): Promise<DeliveryRow[]> => {
      const r = await fetch(`${b}/v1/me/webhooks/${hookId}/deliveries?limit=100`, { headers: auth });
      return ((await r.json()) as { data: DeliveryRow[] }).data;
    };

    // Kill once the first event's fourth attempt is recorded and its fifth is pending (due 18 s later).
    let fifthDue = 0;
    let eventId = "";
    await waitFor(
      async () => {
        const rows = await deliveries(base);
        const fifth = rows.find((d) => d.attempt === 5 && d.status === "pending");
        if (fifth === undefined) return false;
        fifthDue = Date.parse(fifth.scheduled_at);
        eventId = fifth.event_id;
        return true;
      },
      60_000,
      "a fifth attempt waiting",
    );
    const kid = rx.received.find((r) => r.eventId === eventId)!.headers["x-svc-key-id"];
    child.proc.kill("SIGKILL");
    expect(await child.exited).toBeNull();
    const killedAt = Date.now();
    expect(killedAt).toBeLessThan(fifthDue);

    child = spawnService(env);
    const base2 = `http://127.0.0.1:${await child.serving}`;
    await waitFor(() => rx.acted.includes(eventId), 60_000, "the fifth attempt after the restart");
    const fifth = rx.received.filter((r) => r.eventId === eventId && r.headers["x-svc-attempt"] === "5/6");
    expect(fifth).toHaveLength(1);
    expect(fifth[0]!.verified).toBe(true);
    expect(fifth[0]!.at).toBeGreaterThanOrEqual(fifthDue);
    expect(fifth[0]!.headers["x-svc-key-id"]).toBe(kid);
    expect(rx.received.filter((r) => r.eventId === eventId).map((r) => r.headers["x-svc-attempt"])).toEqual(["1/6", "2/6", "3/6", "4/6", "5/6"]);

    // Let the scenario finish on the restarted service: every qualifying event ends delivered on attempt 5, once.
    await waitFor(
      async () => {
        const rows = await deliveries(base2);
        const events = new Set(rows.map((d) => d.event_id));
        return events.size >= 2 && [...events].every((e) => rows.some((d) => d.event_id === e && d.status === "delivered"));
      },
      90_000,
      "every event delivered",
    );
    const rows = await deliveries(base2);
    for (const e of new Set(rows.map((d) => d.event_id))) {
      const chain = rows.filter((d) => d.event_id === e).sort((x, y) => x.attempt - y.attempt);
      expect(chain.map((d) => [d.attempt, d.status])).toEqual([
        [1, "failed"],
        [2, "failed"],
        [3, "failed"],
        [4, "failed"],
        [5, "delivered"],
      ]);
      // The receiver acted on each event exactly once.
      expect(rx.acted.filter((id) => id === e)).toHaveLength(1);
    }
    expect(rx.received.every((r) => r.verified)).toBe(true);
  }, 240_000);
});
