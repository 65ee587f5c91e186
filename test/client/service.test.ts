/**
 * `@peg-oracle/client` against the running service (NATS, PGlite, engine, projectors, webhook delivery, the uWS API)
 * fed a small scenario (two USDC dips, 5 transitions in about 28 s), with one start for the whole file:
 *
 * - the document the service serves at /openapi.json is the one the client's types are generated from;
 * - every REST call the examples make (examples/client-rest.ts, examples/client-verify.ts) answers a status the
 *   OpenAPI document lists for that path and method, with a body that matches its schema;
 * - every receipt verifies with `verifyReceipt`;
 * - real webhook deliveries (the transitions and a `/test` event, captured by an HTTPS receiver) verify with
 *   `verifyWebhook` against the keys the service lists, and their tampered, stale and unsigned variants do not;
 * - a `PegStream` connected from the start delivered exactly the transitions of `PEG_TRANSITIONS`, once, in order.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { PegClient, PegStream, verifyWebhook, type Schemas, type TransitionMessage } from "@peg-oracle/client";
import { restTour } from "../../examples/client-rest.ts";
import { verifyLatest } from "../../examples/client-verify.ts";
import { servedOpenApiDocument } from "../../packages/client/scripts/generate-schema.ts";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import type { DocumentedRoute } from "../../src/http/routes/index.ts";
import { NAME, startReceiver, type Receiver } from "../delivery/receiver.ts";
import { BOT_TOKEN, expectDocumented, JWT_SECRET, widgetPayload } from "../http/helpers.ts";
import type { TestNats } from "../support/nats.ts";
import { waitFor } from "../support/ports.ts";
import { writeWebhookScenario } from "../webhooks/scenario.ts";
import { startTestService, type TestService } from "../support/service.ts";

const catalog = loadShippedCatalog();
const dir = mkdtempSync(join(tmpdir(), "peg-client-service-"));

let running: TestService;
let nats: TestNats;
let rx: Receiver;
let base: string;
let stream: PegStream;
const streamed: TransitionMessage[] = [];
let hook: Schemas["Webhook"];
let keys: Schemas["WebhookKeys"];

/** One call as the wire saw it. */
interface Call {
  readonly method: string;
  readonly path: string;
  readonly status: number;
  readonly contentType: string | undefined;
  readonly text: string;
}

/** A fetch that records every call, for checking them against the document afterwards. */
function recording(calls: Call[]) {
  return async (req: Request): Promise<Response> => {
    const res = await fetch(req);
    const text = await res.clone().text();
    calls.push({ method: req.method, path: new URL(req.url).pathname, status: res.status, contentType: res.headers.get("content-type") ?? undefined, text });
    return res;
  };
}

beforeAll(async () => {
  rx = await startReceiver();
  const scenario = writeWebhookScenario(dir, Math.floor(Date.now() / 10_000) * 10_000);
  const env = { FEED: `scenario:${scenario}`, SCENARIO_SPEED: "60", JWT_SECRET, TELEGRAM_BOT_TOKEN: BOT_TOKEN, WEBHOOK_ALLOWED_PORTS: String(rx.port) };
  const webhookTestOnly = { resolve: async (host: string) => (host === NAME ? ["127.0.0.1"] : []), ca: rx.ca, allowLoopback: true };
  running = await startTestService({ env, dataDir: dir, catalog, io: { webhookTestOnly } });
  ({ base } = running);
  nats = running.nats!;

  // Before the first transition (about 8 s in): a stream from the start, and a webhook for USDC.
  stream = new PegStream({ url: base, assets: ["*"], sinceSeq: 0, WebSocket });
  stream.on("transition", (t) => streamed.push(t));
  const client = new PegClient({ baseUrl: base });
  keys = await client.get("/v1/meta/webhook-keys");
  rx.keys = keys.keys;
  const login = await client.post("/v1/auth/messenger", { body: widgetPayload({ id: 5151, first_name: "Client", username: "client" }, Date.now()) as Schemas["MessengerLogin"] });
  const me = new PegClient({ baseUrl: base, token: login.token });
  hook = await me.post("/v1/me/webhooks", { body: { url: `https://${NAME}:${rx.port}/hook`, asset: "USDC", threshold_bps: 10 } });
  expect(await me.post("/v1/me/webhooks/{id}/test", { params: { path: { id: hook.id } } })).toBeDefined();

  await running.scenarioDone(5, 90_000);
}, 150_000);

afterAll(async () => {
  stream?.close();
  await running?.stop();
  await rx?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("the client against the running service", () => {
  it("is typed from the document the service serves", async () => {
    const served = (await (await fetch(`${base}/openapi.json`)).json()) as Record<string, unknown>;
    expect(served).toEqual(JSON.parse(JSON.stringify(servedOpenApiDocument())));
  });

  it("makes only documented calls in the examples, answered as documented", async () => {
    const calls: Call[] = [];
    const client = new PegClient({ baseUrl: base, fetch: recording(calls) });
    const lines: string[] = [];
    await restTour(client, (l) => lines.push(l));
    const verified = await verifyLatest(client, 10, (l) => lines.push(l));
    expect(verified).toEqual({ checked: 5, failed: 0 });
    expect(lines.filter((l) => l.startsWith("PASS "))).toHaveLength(5);
    expect(lines).toContain("an unknown symbol: ApiError asset_not_found (HTTP 404, asset NOT-A-TOKEN)");

    const doc = servedOpenApiDocument();
    const templates = Object.keys(doc["paths"] as Record<string, unknown>);
    const templateOf = (path: string) =>
      templates
        .filter((t) => {
          const a = t.split("/"), b = path.split("/");
          return a.length === b.length && a.every((seg, i) => seg.startsWith("{") || seg === b[i]);
        })
        .sort((x, y) => y.split("{").length - x.split("{").length)
        .at(-1);
    const used = new Set<string>();
    for (const c of calls) {
      const template = templateOf(c.path);
      expect(template, `${c.method} ${c.path} is not a path of the document`).toBeDefined();
      used.add(`${c.method} ${template!}`);
      const route = { path: template!, method: c.method } as unknown as DocumentedRoute;
      const isJson = (c.contentType ?? "").startsWith("application/json");
      expectDocumented(doc, route, { status: c.status, headers: {}, body: isJson ? JSON.parse(c.text) : undefined, text: isJson ? undefined : c.text, contentType: c.contentType, result: { status: c.status } });
    }
    expect([...used].sort()).toEqual([
      "GET /v1/alerts",
      "GET /v1/assets",
      "GET /v1/assets/{symbol}",
      "GET /v1/audit/{id}/replay-bundle",
      "GET /v1/methodology/current",
      "GET /v1/peg/feed",
    ]);
    expect(calls.some((c) => c.status === 404)).toBe(true);
  });

  it("verifies real webhook deliveries, and refuses them tampered, stale or unsigned", async () => {
    await waitFor(() => rx.received.filter((r) => r.path === "/hook").length >= 2, 30_000, "the test event and a transition delivered");
    const deliveries = rx.received.filter((r) => r.path === "/hook");
    expect(deliveries.some((d) => (JSON.parse(d.body) as { test?: boolean }).test === true)).toBe(true);
    expect(deliveries.some((d) => (JSON.parse(d.body) as { test?: boolean }).test !== true)).toBe(true);
    for (const d of deliveries) {
      const v = verifyWebhook(d.headers, d.body, keys, d.at);
      expect(v).toEqual({ ok: true, eventId: d.headers["x-svc-event-id"], timestamp: Number(d.headers["x-svc-timestamp"]), kid: keys.keys[0]!.kid });
      // The reference verifier the receiver ran agrees.
      expect(d.verified).toBe(true);

      const reason = (headers: typeof d.headers, body: string, now: number) => {
        const r = verifyWebhook(headers, body, keys, now);
        return r.ok ? "ok" : r.reason;
      };
      expect(reason(d.headers, d.body.replace('"USDC"', '"USDT"'), d.at)).toBe("bad_signature");
      expect(reason(d.headers, d.body, d.at + 301_000)).toBe("timestamp_out_of_window");
      const unsigned = Object.fromEntries(Object.entries(d.headers).filter(([k]) => k !== "x-svc-signature" && k !== "webhook-signature"));
      expect(reason(unsigned, d.body, d.at)).toBe("missing_headers");
    }
    expect(hook.format).toBe("signed");
  });

  it("streamed exactly the transitions of PEG_TRANSITIONS, once each, in order", async () => {
    const nc = await connect({ servers: nats.url });
    const stored: { seq: number; alert_id: string }[] = [];
    try {
      const jsm = await jetstreamManager(nc);
      const info = await jsm.streams.info("PEG_TRANSITIONS");
      for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
        const m = await jsm.streams.getMessage("PEG_TRANSITIONS", { seq });
        if (m !== null) stored.push({ seq: m.seq, alert_id: m.json<{ alert_id: string }>().alert_id });
      }
    } finally {
      await nc.close();
    }
    expect(stored).toHaveLength(5);
    await waitFor(() => streamed.length >= stored.length, 10_000, "the stream to catch up");
    expect(streamed.map((t) => ({ seq: t.seq, alert_id: t.alert_id }))).toEqual(stored);
    expect(stream.status).toBe("open");
    expect(stream.lastSeq).toBeGreaterThanOrEqual(stored.at(-1)!.seq);
    expect(stream.stats).toMatchObject({ connections: 1, transitions: 5, duplicatesDropped: 0 });
  });
});
