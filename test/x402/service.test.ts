/**
 * x402 in the running service (`peg-oracle serve` child process, PostgreSQL and nats-server of the test's own,
 * SOLANA_RPC_URL at the local token node, X402_PAY_TO set, the fee payer from ANCHOR_KEYPAIR): a paid MCP tool over
 * Streamable HTTP and the /x402 routes over real HTTP answer the challenge unpaid and their data once paid by the x402
 * client library; /metrics counts it; a paid answer is never lost: a payment presented again after a restart gets the
 * answer it bought, and a service killed right after it sent the settlement owes that answer once restarted, the payer
 * charged once.
 */
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { createKeyPairSignerFromPrivateKeyBytes, type KeyPairSigner } from "@solana/kit";
import { decodePaymentResponseHeader, x402HTTPClient } from "@x402/core/http";
import type { PaymentRequired, SettleResponse } from "@x402/core/types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNats, type TestNats } from "../support/nats.ts";
import { freePort } from "../support/ports.ts";
import { startPostgres, type TestPostgres } from "../support/postgres.ts";
import { TEST_SECRETS_KEY } from "../support/secrets.ts";
import { spawnServe, type ServeProcess } from "../support/serve.ts";
import { startLocalTokenNode, type LocalTokenNode } from "../support/solana-token-rpc.ts";
import { clientFor, DEVNET_USDC, ONE_USDC } from "./harness.ts";

type Obj = Record<string, unknown>;

let pg: TestPostgres;
let nats: TestNats;
let node: LocalTokenNode;
let service: ServeProcess;
let env: Record<string, string>;
let base = "";
let feePayer = "";
let payTo: KeyPairSigner;
let payer: KeyPairSigner;
const dirs: string[] = [];

const tempDir = (prefix: string): string => {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
};

/** A Solana CLI keypair file (seed then public key, 64 bytes as a JSON array) of a new key; returns [path, address]. */
async function keypairFile(): Promise<[string, string]> {
  const { privateKey } = generateKeyPairSync("ed25519");
  const jwk = privateKey.export({ format: "jwk" }) as { d: string; x: string };
  const bytes = [...Buffer.from(jwk.d, "base64url"), ...Buffer.from(jwk.x, "base64url")];
  const path = join(tempDir("peg-kp-"), "fee-payer.json");
  writeFileSync(path, JSON.stringify(bytes));
  return [path, (await createKeyPairSignerFromPrivateKeyBytes(Buffer.from(jwk.d, "base64url"))).address];
}

async function start(): Promise<void> {
  service = spawnServe(env);
  await service.started();
  const serving = service.lines().find((l) => l["msg"] === "serving")!;
  base = `http://127.0.0.1:${String(serving["port"])}`;
}

/** Polls `cond` every 50 ms (up to 30 s). */
async function until(cond: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error("condition not met in 30 s");
}

async function stop(): Promise<void> {
  if (service.proc.exitCode === null) {
    service.proc.kill("SIGTERM");
    await service.exited;
  }
}

const metricsText = async (): Promise<string> => {
  const port = service.lines().find((l) => l["msg"] === "serving")!["metrics_port"];
  return (await fetch(`http://127.0.0.1:${String(port)}/metrics`)).text();
};

beforeAll(async () => {
  [pg, nats, node] = await Promise.all([startPostgres(), startNats(), startLocalTokenNode({ mint: DEVNET_USDC, blockMs: 100 })]);
  const [path, address] = await keypairFile();
  feePayer = address;
  node.setSol(feePayer, 1_000_000_000n);
  [payTo, payer] = await Promise.all([createKeyPairSignerFromPrivateKeyBytes(randomBytes(32)), createKeyPairSignerFromPrivateKeyBytes(randomBytes(32))]);
  await node.fund(payTo.address, 0n);
  await node.fund(payer.address, ONE_USDC);
  env = {
    FEED: "scenario:usdc-march-2023",
    SCENARIO_SPEED: "1",
    DATA_DIR: tempDir("peg-x402-"),
    PORT: String(await freePort()),
    HOST: "127.0.0.1",
    NATS_URL: nats.url,
    DATABASE_URL: await pg.createDatabase(),
    SECRETS_KEY: TEST_SECRETS_KEY,
    SOLANA_RPC_URL: node.url,
    ANCHOR_KEYPAIR: path,
    X402_PAY_TO: payTo.address,
    X402_NETWORK: "solana-devnet",
    X402_PRICES: "get_peg_feed=0.0008",
    RATE_LIMIT_PER_MIN: "10000",
    PUBLIC_BASE_URL: "https://oracle.example.com",
  };
  await start();
}, 180_000);

afterAll(async () => {
  if (service !== undefined) await stop();
  await Promise.all([nats?.dispose(), pg?.dispose(), node?.close()]);
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
}, 60_000);

describe("the running service with X402_PAY_TO", () => {
  it("logs the paid tools and the settlement fee payer at start", () => {
    expect(service.lines().find((l) => l["msg"] === "x402 paid tools on")).toMatchObject({ pay_to: payTo.address, network: "solana-devnet", facilitator: "self", fee_payer: feePayer });
  });

  it("a paid MCP tool over Streamable HTTP: the challenge, then the data after an x402 payment", async () => {
    const client = new Client({ name: "x402-e2e", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`)));
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(["get_peg_feed", "subscribe_peg_events", "simulate_depeg"]));
      const unpaid = (await client.callTool({ name: "get_peg_feed", arguments: {} })) as CallToolResult;
      expect(unpaid.isError).toBe(true);
      const pr = unpaid.structuredContent as unknown as PaymentRequired;
      expect(pr.accepts[0]).toMatchObject({ scheme: "exact", network: "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1", asset: DEVNET_USDC, payTo: payTo.address, amount: "800", extra: { feePayer } });
      const payment = await clientFor(payer, node.url).createPaymentPayload(pr);
      const paid = (await client.callTool({ name: "get_peg_feed", arguments: {}, _meta: { "x402/payment": payment } })) as CallToolResult;
      expect(paid.isError, JSON.stringify(paid.content).slice(0, 500)).toBeFalsy();
      expect((paid.structuredContent as Obj)["methodology"]).toBe("1.0.0");
      expect((paid._meta as Obj)["x402/payment-response"]).toMatchObject({ success: true, payer: payer.address });
      expect(await node.tokens(payTo.address)).toBe(800n);
    } finally {
      await client.close();
    }
  }, 60_000);

  let replay: Record<string, string> = {};
  let bought: { body: unknown; settlement: SettleResponse } | null = null;

  it("GET /x402/peg-feed over the wire: 402 with PAYMENT-REQUIRED, then 200 with PAYMENT-RESPONSE", async () => {
    const first = await fetch(`${base}/x402/peg-feed`);
    expect(first.status).toBe(402);
    expect(first.headers.get("payment-required")).toBeTruthy();
    const http = new x402HTTPClient(clientFor(payer, node.url));
    const pr = http.getPaymentRequiredResponse((n) => first.headers.get(n), await first.json());
    // The resource a client pays for is the one it called, under PUBLIC_BASE_URL (behind a proxy: not this port).
    expect(pr.resource.url).toBe("https://oracle.example.com/x402/peg-feed");
    expect(service.lines().filter((l) => String(l["msg"]).startsWith("PUBLIC_BASE_URL is not set"))).toEqual([]);
    replay = http.encodePaymentSignatureHeader(await http.createPaymentPayload(pr));
    const paid = await fetch(`${base}/x402/peg-feed`, { headers: replay });
    expect(paid.status).toBe(200);
    const settlement: SettleResponse = http.getPaymentSettleResponse((n) => paid.headers.get(n));
    expect(settlement).toMatchObject({ success: true, payer: payer.address });
    const body = (await paid.json()) as Obj;
    expect(body["count"]).toBeGreaterThan(60);
    bought = { body, settlement };
    expect(await node.tokens(payTo.address)).toBe(1600n);

    const unpaidEvents = await fetch(`${base}/x402/events?after=0&wait=0`);
    expect(unpaidEvents.status).toBe(402);
  }, 60_000);

  it("/metrics counts paid calls, USDC received and refusals", async () => {
    const text = await metricsText();
    expect(text).toContain('peg_oracle_x402_paid_calls_total{tool="get_peg_feed"} 2');
    expect(text).toMatch(/peg_oracle_x402_received_usdc_total\{tool="get_peg_feed"\} 0\.0016/);
    expect(text).toMatch(/peg_oracle_x402_refusals_total\{reason="missing"\} [1-9]/);
  });

  it("a payment presented again after a restart gets the answer it bought, charged once; for another query it is spent", async () => {
    await stop();
    await start();
    const again = await fetch(`${base}/x402/peg-feed`, { headers: replay });
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual(bought!.body);
    expect(decodePaymentResponseHeader(again.headers.get("payment-response")!)).toEqual(bought!.settlement);
    const other = await fetch(`${base}/x402/peg-feed?other=query`, { headers: replay });
    expect(other.status).toBe(402);
    expect(await other.json()).toMatchObject({ error: "payment_refused", reason: "reused" });
    expect(await node.tokens(payTo.address)).toBe(1600n);
  }, 120_000);

  it("killed right after it sent the settlement: the restarted service owes the answer, and the payer is charged once", async () => {
    const http = new x402HTTPClient(clientFor(payer, node.url));
    const first = await fetch(`${base}/x402/peg-feed`);
    const pr = http.getPaymentRequiredResponse((n) => first.headers.get(n), await first.json());
    const payment = http.encodePaymentSignatureHeader(await http.createPaymentPayload(pr));
    const payerBefore = await node.tokens(payer.address);
    // The node kills the service as it accepts the settlement transaction, before answering it: the transaction lands
    // on its own at the next block, the service never learns it and never answers.
    let sent = "";
    node.onSend((signature) => {
      sent = signature;
      service.proc.kill("SIGKILL");
    });
    const cut = await fetch(`${base}/x402/peg-feed`, { headers: payment }).then(
      (r) => `answered ${String(r.status)}`,
      () => "cut",
    );
    node.onSend(null);
    expect(cut).toBe("cut");
    await service.exited;
    expect(sent).not.toBe("");
    await until(async () => node.landed().some((t) => t.signature === sent));
    expect(await node.tokens(payTo.address)).toBe(2400n);

    await start();
    // The start reconciled it by the chain: settled, its answer owed.
    expect(service.lines().find((l) => l["msg"] === "x402 payments reconciled")).toMatchObject({ owed: 1 });
    const owedBefore = await metricsText();
    expect(owedBefore).toContain("peg_oracle_x402_owed_answers 1");
    expect(owedBefore).toContain('peg_oracle_x402_reconciled_total{outcome="owed"} 1');
    const again = await fetch(`${base}/x402/peg-feed`, { headers: payment });
    expect(again.status).toBe(200);
    expect(((await again.json()) as Obj)["count"]).toBeGreaterThan(60);
    expect(decodePaymentResponseHeader(again.headers.get("payment-response")!)).toMatchObject({ success: true, transaction: sent, payer: payer.address });
    // Charged exactly once: one transfer of the price, whatever was presented.
    expect(node.landed().filter((t) => t.signature === sent)).toHaveLength(1);
    expect(await node.tokens(payTo.address)).toBe(2400n);
    expect(await node.tokens(payer.address)).toBe(payerBefore - 800n);
    const served = await metricsText();
    expect(served).toContain('peg_oracle_x402_owed_served_total{tool="get_peg_feed"} 1');
    expect(served).toContain("peg_oracle_x402_owed_answers 0");
  }, 120_000);
});
