/**
 * Rotating the webhook signing key of a running service (issue 6): `peg-oracle webhook-keys rotate`, a separate
 * process, finds the service's embedded NATS through `DATA_DIR`, the service rotates under the key lock, and from
 * then on deliveries are signed with the new key while `/v1/meta/webhook-keys` lists the old one as retiring, so a
 * receiver holding either list keeps verifying.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BOT_TOKEN, JWT_SECRET, widgetPayload } from "../http/helpers.ts";
import { NAME, startReceiver, type Receiver } from "../delivery/receiver.ts";
import { waitFor } from "../support/ports.ts";
import { writeWebhookScenario } from "./scenario.ts";
import { startTestService, type TestService } from "../support/service.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "peg-key-rotation-"));
const dataDir = join(dir, "data");
let rx: Receiver;
let running: TestService;
let base: string;

function cli(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, ["--import", "tsx", "src/main.ts", ...args], {
      cwd: ROOT,
      env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "/tmp", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    p.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    p.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    p.once("exit", (code) => resolve({ code, stdout, stderr }));
  });
}

interface ListedKey {
  kid: string;
  public_key: string;
  status: string;
}

const keys = async (): Promise<ListedKey[]> => ((await (await fetch(`${base}/v1/meta/webhook-keys`)).json()) as { keys: ListedKey[] }).keys;

beforeAll(async () => {
  rx = await startReceiver();
  const env = { FEED: `scenario:${writeWebhookScenario(dir, Date.now())}`, JWT_SECRET, TELEGRAM_BOT_TOKEN: BOT_TOKEN, WEBHOOK_ALLOWED_PORTS: String(rx.port) };
  const webhookTestOnly = { resolve: async (host: string) => (host === NAME ? ["127.0.0.1"] : []), ca: rx.ca, allowLoopback: true };
  // nats "embedded": no NATS_URL, the service runs its own nats-server (the CLI below reaches it through DATA_DIR).
  running = await startTestService({ env, nats: "embedded", dataDir, io: { webhookTestOnly } });
  ({ base } = running);
}, 60_000);

afterAll(async () => {
  await running?.stop();
  await rx?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("peg-oracle webhook-keys rotate", () => {
  it("rotates the running service's key; deliveries are signed with the new key, the old one is listed as retiring", async () => {
    const before = await keys();
    expect(before.map((k) => k.status)).toEqual(["active"]);
    const oldKid = before[0]!.kid;

    const login = await fetch(`${base}/v1/auth/messenger`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(widgetPayload({ id: 515, first_name: "Rotate" }, Date.now())),
    });
    const token = ((await login.json()) as { token: string }).token;
    const auth = { authorization: `Bearer ${token}` };
    const hook = (await (
      await fetch(`${base}/v1/me/webhooks`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body: JSON.stringify({ url: `https://${NAME}:${rx.port}/hook`, asset: "USDC", threshold_bps: 10 }),
      })
    ).json()) as { id: string };
    const sendTest = async (): Promise<string> => {
      const r = await fetch(`${base}/v1/me/webhooks/${hook.id}/test`, { method: "POST", headers: auth });
      expect(r.status).toBe(202);
      const deliveryId = ((await r.json()) as { delivery_id: string }).delivery_id;
      await waitFor(() => rx.received.some((x) => x.headers["x-svc-delivery-id"] === deliveryId), 10_000, "the test delivery");
      return rx.received.find((x) => x.headers["x-svc-delivery-id"] === deliveryId)!.headers["x-svc-key-id"] as string;
    };
    rx.keys = before;
    expect(await sendTest()).toBe(oldKid);

    const out = await cli(["webhook-keys", "rotate", "--json"], { DATA_DIR: dataDir });
    expect(out.code, out.stderr).toBe(0);
    const reply = JSON.parse(out.stdout) as { ok: boolean; kid: string; keys: ListedKey[] };
    expect(reply.ok).toBe(true);
    expect(reply.kid).not.toBe(oldKid);
    expect(reply.keys.map((k) => [k.kid, k.status])).toEqual([
      [reply.kid, "active"],
      [oldKid, "retiring"],
    ]);
    expect((await keys()).map((k) => [k.kid, k.status])).toEqual([
      [reply.kid, "active"],
      [oldKid, "retiring"],
    ]);

    // A receiver that fetched the new list verifies the next delivery, signed with the new key.
    rx.keys = await keys();
    expect(await sendTest()).toBe(reply.kid);
    expect(rx.received.every((r) => r.verified)).toBe(true);
  }, 60_000);

  it("fails clearly when no service runs for the data directory, and on bad usage", async () => {
    const none = await cli(["webhook-keys", "rotate"], { DATA_DIR: join(dir, "nowhere") });
    expect(none.code).toBe(1);
    expect(none.stderr).toContain("no running service found");
    const usage = await cli(["webhook-keys", "spin"], { DATA_DIR: dataDir });
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("usage: peg-oracle webhook-keys rotate");
  }, 60_000);
});
