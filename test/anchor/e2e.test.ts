/**
 * Anchoring end to end: the running service (real nats-server, real PostgreSQL, engine, projectors, the anchor worker,
 * the uWS API) fed a USDC DEPEG scenario, committing to the local Solana node with a fee payer from an
 * ANCHOR_KEYPAIR file. The DEPEG receipt becomes `committed`, `/v1/audit/{id}/onchain` answers 200 with the memo
 * transaction, and `peg-oracle verify <bundle url> --rpc --signer` confirms it (exit 0); the way back to PEGGED is
 * `not_applicable`. A restart of the service anchors nothing twice.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { createKeyPairSignerFromPrivateKeyBytes } from "@solana/kit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { base58Decode } from "../../src/catalog/base58.ts";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import { startService, type Service } from "../../src/cli/service.ts";
import { verifyCommand } from "../../src/cli/verify.ts";
import type { Config } from "../../src/config.ts";
import { startNats, type TestNats } from "../support/nats.ts";
import { freePort, waitFor } from "../support/ports.ts";
import { startPostgres, type TestPostgres } from "../support/postgres.ts";
import { startLocalSolana, type LocalSolana } from "../support/solana-rpc.ts";
import { TEST_SECRETS_KEY } from "../support/secrets.ts";
import { startTestService } from "../support/service.ts";

type Obj = Record<string, unknown>;

const catalog = loadShippedCatalog();
const dir = mkdtempSync(join(tmpdir(), "peg-anchor-e2e-"));
const SPEED = 60;

/** USDC at par for 60 s, at 0.99 for 240 s (DEPEG after the 30 s dwell), then par (PEGGED after 120 s): 8 s at speed 60. */
function writeDepegScenario(t0: number): string {
  const lines: string[] = [];
  for (let s = 0; s <= 480; s += 10) {
    const m = s >= 60 && s < 300 ? "0.9900" : "1.0000";
    const ts = new Date(t0 + s * 1000).toISOString();
    lines.push(JSON.stringify({ ts, asset: "USDC", intrinsic_usd: "1", market_usd: m, oracle: { "USDC/USD": { price: m, conf: "0.0004", publish_time: ts } } }));
  }
  const path = join(dir, "depeg.jsonl");
  writeFileSync(path, `# title: one USDC depeg for the anchoring test\n${lines.join("\n")}\n`);
  return path;
}

let pg: TestPostgres;
let nats: TestNats;
let node: LocalSolana;
let service: Service | null = null;
let config: Config;
let base: string;
let signer: string;
const logs: { level: string; msg: string; fields?: Obj }[] = [];

async function get(path: string): Promise<{ status: number; body: Obj }> {
  const res = await fetch(base + path);
  return { status: res.status, body: (await res.json()) as Obj };
}

async function verify(args: string[]) {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = "";
  stdout.on("data", (c: Buffer) => (out += c.toString()));
  stderr.on("data", () => {});
  const code = await verifyCommand(args, { stdout, stderr, env: {} });
  return { code, body: JSON.parse(out) as Obj };
}

beforeAll(async () => {
  [pg, nats, node] = await Promise.all([startPostgres(), startNats(), startLocalSolana({ blockMs: 50 })]);
  // The fee payer as `solana-keygen` writes it: 64 bytes, seed then public key.
  const seed = randomBytes(32);
  const kp = await createKeyPairSignerFromPrivateKeyBytes(seed);
  signer = kp.address;
  const keyFile = join(dir, "fee-payer.json");
  writeFileSync(keyFile, JSON.stringify([...seed, ...base58Decode(signer)]));
  node.setBalance(signer, 2_000_000n);

  const t0 = Math.floor(Date.now() / 10_000) * 10_000;
  const env = {
    DATABASE_URL: await pg.createDatabase(),
    SECRETS_KEY: TEST_SECRETS_KEY,
    FEED: `scenario:${writeDepegScenario(t0)}`,
    SCENARIO_SPEED: String(SPEED),
    SOLANA_RPC_URL: node.url,
    ANCHOR_KEYPAIR: keyFile,
    ANCHOR_DAILY_BUDGET: "5",
  };
  const io = { log: (level: string, msg: string, fields?: Record<string, unknown>) => logs.push({ level, msg, ...(fields === undefined ? {} : { fields }) }) };
  // The test's own nats-server and DATA_DIR: the restart below runs on them too (and afterAll stops whichever runs).
  const running = await startTestService({ env, nats, dataDir: dir, catalog, io });
  ({ service, config, base } = running);
  await running.scenarioDone(2);
}, 120_000);

afterAll(async () => {
  await service?.stop();
  await Promise.all([node?.close(), nats?.dispose(), pg?.dispose()]);
  rmSync(dir, { recursive: true, force: true });
});

async function alertIds(): Promise<{ depeg: string; back: string }> {
  const alerts = await service!.store.alerts({ limit: 10, offset: 0 });
  return { depeg: alerts.find((a) => a.to_state === "DEPEG")!.id, back: alerts.find((a) => a.to_state === "PEGGED")!.id };
}

describe("anchoring end to end", () => {
  it("anchors the DEPEG receipt: /onchain answers 200 with the memo transaction the node holds", async () => {
    expect(service!.anchor?.signer).toBe(signer);
    expect(logs.some((l) => l.msg === "on-chain anchoring started" && l.fields?.["signer"] === signer)).toBe(true);
    const { depeg, back } = await alertIds();
    await waitFor(async () => (await get(`/v1/audit/${depeg}`)).body["commit_status"] === "committed", 30_000, "the DEPEG receipt to be committed");
    const receipt = (await get(`/v1/audit/${depeg}`)).body;
    const landed = node.landed();
    expect(landed).toHaveLength(1);
    const tx = landed[0]!;
    const memo = `pegoracle-v1|${receipt["methodology_version"]}|${depeg}|${receipt["receipt_sha256"]}`;
    expect(tx.memos).toEqual([memo]);
    expect(tx.signers).toEqual([signer]);

    const onchain = await get(`/v1/audit/${depeg}/onchain`);
    expect(onchain.status).toBe(200);
    expect(onchain.body).toEqual({
      commit_status: "committed",
      tx_sig: tx.signature,
      slot: tx.slot,
      block_time: new Date(tx.blockTime! * 1000).toISOString(),
      memo,
      signer,
    });
    const ledger = (await get(`/v1/audit?from=${new Date(Date.now() - 3_600_000).toISOString()}`)).body["data"] as Obj[];
    expect(ledger.find((r) => r["id"] === depeg)?.["commit_status"]).toBe("committed");

    // The way back to PEGGED is never anchored.
    const b = await get(`/v1/audit/${back}/onchain`);
    expect(b.status).toBe(404);
    expect(b.body).toMatchObject({ error: "not_applicable", commit_status: "not_applicable" });
  });

  it("peg-oracle verify confirms the receipt offline and on chain (exit 0), and refuses another signer (exit 4)", async () => {
    const { depeg, back } = await alertIds();
    const url = `${base}/v1/audit/${depeg}/replay-bundle`;
    const ok = await verify([url, "--rpc", node.url, "--signer", signer, "--json"]);
    expect(ok.code).toBe(0);
    expect(ok.body).toMatchObject({ verdict: "PASS", exit: 0, onchain: { exit: 0, verdict: "ANCHORED", tx_sig: node.landed()[0]!.signature, signer } });

    const stranger = (await createKeyPairSignerFromPrivateKeyBytes(randomBytes(32))).address;
    const wrong = await verify([url, "--rpc", node.url, "--signer", stranger, "--json"]);
    expect(wrong.code).toBe(4);

    const pegged = await verify([`${base}/v1/audit/${back}/replay-bundle`, "--rpc", node.url, "--signer", signer, "--json"]);
    expect(pegged.code).toBe(0);
    expect((pegged.body["onchain"] as Obj)["message"]).toMatch(/not_applicable/);
  });

  it("a restarted service anchors nothing twice and keeps the commit", async () => {
    const { depeg } = await alertIds();
    await service!.stop();
    // A new port: the stopped server's keep-alive connections may still be in the client's pool.
    const restarted: Config = { ...config, port: await freePort(), feed: { kind: "sim" }, simIncidentEveryMs: 0 };
    service = await startService(restarted, catalog, { log: () => {} });
    base = `http://127.0.0.1:${service.api.port}`;
    // Long enough for several worker polls (1 s each).
    await new Promise((r) => setTimeout(r, 2500));
    expect(node.landed()).toHaveLength(1);
    const after = await get(`/v1/audit/${depeg}/onchain`);
    expect(after.body["tx_sig"], JSON.stringify(after)).toBe(node.landed()[0]!.signature);
  });
});
