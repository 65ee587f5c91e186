/**
 * The agent tools in-process: the SDK's own Client over its in-memory transport, against the MCP server built over
 * the REST routes of the fixture read model (genuine engine receipts). Every answer is compared with what the REST
 * route or `peg-oracle verify` gives; every bad input gets a tool error with its stable code.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { createKeyPairSignerFromPrivateKeyBytes } from "@solana/kit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signAnchorTransaction, solanaRpc } from "../../src/anchor/index.ts";
import { verifyCommand } from "../../src/cli/verify.ts";
import { publicRoutes } from "../../src/http/routes/index.ts";
import { Router } from "../../src/http/router.ts";
import { agentSpec } from "../../src/mcp/agent.ts";
import { serverFor } from "../../src/mcp/server.ts";
import { receiptHash, replayBundle, type Receipt } from "../../src/methodology/index.ts";
import { catalog, DEAD_ID, fakeReadModel, PENDING_ID, UNKNOWN_ID, type FakeReadModel } from "../http/fixtures.ts";
import { waitFor } from "../support/ports.ts";
import { startLocalSolana, type LocalSolana } from "../support/solana-rpc.ts";

type Obj = Record<string, unknown>;

let rm: FakeReadModel;
let client: Client;
let router: Router;
let node: LocalSolana;

async function connect(rpcUrl: string | null): Promise<Client> {
  const spec = agentSpec({ routes: publicRoutes(rm), catalog, rpcUrl });
  const [a, b] = InMemoryTransport.createLinkedPair();
  await serverFor(spec).connect(a);
  const c = new Client({ name: "test", version: "1" });
  await c.connect(b);
  return c;
}

async function call(name: string, args: unknown, c = client): Promise<CallToolResult> {
  return (await c.callTool({ name, arguments: args as Obj })) as CallToolResult;
}

/** The error object of a tool error result (JSON in content[0].text; no structured content the schema would refuse). */
function toolError(r: CallToolResult): Obj {
  expect(r.isError).toBe(true);
  expect(r.structuredContent).toBeUndefined();
  const body = JSON.parse((r.content[0] as { text: string }).text) as Obj;
  expect(typeof body["error"]).toBe("string");
  expect(typeof body["message"]).toBe("string");
  return body;
}

async function rest(path: string): Promise<Obj> {
  const r = await router.handle({ method: "GET", path, query: new URLSearchParams(), headers: {}, ip: "127.0.0.1", requestId: "t", body: null });
  const text = r.text === undefined ? JSON.stringify(r.json) : typeof r.text === "string" ? r.text : Buffer.from(r.text).toString();
  return JSON.parse(text) as Obj;
}

async function cliVerify(bundle: unknown): Promise<{ code: number; body: Obj }> {
  const dir = mkdtempSync(join(tmpdir(), "mcp-verify-"));
  const file = join(dir, "bundle.json");
  writeFileSync(file, JSON.stringify(bundle));
  const stdout = new PassThrough();
  let out = "";
  stdout.on("data", (c: Buffer) => (out += c.toString()));
  const code = await verifyCommand([file, "--json"], { stdout, stderr: new PassThrough(), env: {} });
  return { code, body: JSON.parse(out) as Obj };
}

beforeAll(async () => {
  rm = fakeReadModel();
  router = new Router(publicRoutes(rm));
  node = await startLocalSolana({ blockMs: 20 });
  client = await connect(null);
});

afterAll(async () => {
  await client.close();
  await node.close();
});

describe("tools/list", () => {
  it("lists the free tools with object input and output schemas and actionable descriptions", async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(["get_peg_state", "list_assets", "verify_alert"]);
    for (const t of tools) {
      expect(t.inputSchema.type).toBe("object");
      expect(t.outputSchema?.type).toBe("object");
      expect(t.description!.length).toBeGreaterThan(150);
      expect(t.annotations?.readOnlyHint).toBe(true);
    }
    const verify = tools.find((t) => t.name === "verify_alert")!;
    expect(Object.keys(verify.inputSchema.properties ?? {})).toEqual(["alert_id", "bundle", "trusted_signers"]);
  });
});

describe("list_assets and get_peg_state", () => {
  it("list_assets lists every active asset as GET /v1/assets does, and filters by state and class", async () => {
    const r = await call("list_assets", {});
    expect(r.isError).toBeFalsy();
    const out = r.structuredContent as { count: number; assets: Obj[] };
    const cards = (await rest("/v1/assets"))["data"] as Obj[];
    expect(out.count).toBe(catalog.active.length);
    expect(out.assets.map((a) => [a["symbol"], a["state"], a["discount"]])).toEqual(cards.map((c) => [c["symbol"], c["state"], c["discount"]]));
    const drift = (await call("list_assets", { state: "DRIFT" })).structuredContent as { assets: Obj[] };
    expect(drift.assets.length).toBeGreaterThan(0);
    expect(drift.assets.every((a) => a["state"] === "DRIFT")).toBe(true);
    const lst = (await call("list_assets", { class: "lst" })).structuredContent as { assets: Obj[] };
    expect(lst.assets.every((a) => a["class"] === "lst")).toBe(true);
  });

  it("get_peg_state answers the REST card, by symbol and by mint", async () => {
    const card = await rest("/v1/assets/USDC");
    expect((await call("get_peg_state", { symbol: "USDC" })).structuredContent).toEqual(card);
    expect((await call("get_peg_state", { mint: card["mint"] })).structuredContent).toEqual(card);
    const usdStar = await call("get_peg_state", { symbol: "USD*" });
    expect(usdStar.isError).toBeFalsy();
    expect((usdStar.structuredContent as Obj)["symbol"]).toBe("USD*");
  });

  it("bad input is a tool error with a stable code, never a crash", async () => {
    expect(toolError(await call("get_peg_state", { symbol: "NOPE" }))).toMatchObject({ error: "asset_not_found", asset: "NOPE" });
    expect(toolError(await call("get_peg_state", { mint: "11111111111111111111111111111111" }))["error"]).toBe("asset_not_found");
    for (const bad of [{}, { symbol: "USDC", mint: catalog.bySymbol("USDC")!.mint }, { symbol: 7 }, { symbol: "a b" }, { symbol: "USDC", extra: 1 }, { mint: "0OIl" }]) {
      expect(toolError(await call("get_peg_state", bad))["error"], JSON.stringify(bad)).toBe("invalid_input");
    }
    expect(toolError(await call("list_assets", { state: "SUNK" }))["error"]).toBe("invalid_input");
    // An unknown tool is a protocol error, not a tool result (MCP server/tools, Error Handling).
    await expect(call("no_such_tool", {})).rejects.toMatchObject({ code: -32602 });
  });
});

describe("verify_alert", () => {
  it("by alert id: the verdict, exit code, message and hash of `peg-oracle verify`, and the re-derived state", async () => {
    expect(rm.receipts.length).toBeGreaterThan(2);
    for (const receipt of rm.receipts) {
      const r = await call("verify_alert", { alert_id: receipt.alert_id });
      expect(r.isError, JSON.stringify(r.structuredContent)).toBeFalsy();
      const out = r.structuredContent as Obj;
      const bundle = await rest(`/v1/audit/${receipt.alert_id}/replay-bundle`);
      const cli = await cliVerify(bundle);
      expect(out).toMatchObject({
        source: "alert_id",
        alert_id: receipt.alert_id,
        verdict: cli.body["verdict"],
        exit_code: cli.code,
        message: cli.body["message"],
        receipt_sha256: cli.body["receipt_sha256"],
        hash_match: true,
        expected_receipt_sha256: receipt.receipt_sha256,
        methodology_version: "1.0.0",
        rederived_state: receipt.to_state,
        expected_state: receipt.to_state,
      });
      expect(out["verdict"]).toBe("PASS");
      expect((out["onchain"] as Obj)["commit_status"]).toBe(rm.stored.get(receipt.alert_id)!.commit_status);
    }
  });

  it("by bundle: a tampered bundle fails as the CLI says, and the details tell the hash from the verdict", async () => {
    const receipt = rm.receipts.find((x) => x.to_state !== "PEGGED")!;
    const good = replayBundle(receipt) as unknown as Obj;
    const passed = (await call("verify_alert", { bundle: good })).structuredContent as Obj;
    expect(passed).toMatchObject({ source: "bundle", alert_id: null, verdict: "PASS", exit_code: 0, onchain: null });

    // Another market price: the stored hash no longer matches.
    const inputs = { ...(good["inputs_frozen"] as Obj), market_usd: "0.5" };
    const tampered = { ...good, inputs_frozen: inputs };
    const cli = await cliVerify(tampered);
    const r = (await call("verify_alert", { bundle: tampered })).structuredContent as Obj;
    expect(r).toMatchObject({ verdict: "FAIL", exit_code: cli.code, message: cli.body["message"], hash_match: false });
    expect(cli.code).toBe(1);

    // A claimed state re-hashed to match: the hash passes, the re-derivation does not.
    const computed = { ...(good["expected_computed"] as Obj), final_state: "BLACK_SWAN", band: "BLACK_SWAN" };
    const rehashed = {
      ...good,
      expected_computed: computed,
      expected_receipt_sha256: receiptHash(String(good["methodology_version"]), String(good["git_sha"]), good["catalog_entry"], good["inputs_frozen"], computed),
    };
    const r2 = (await call("verify_alert", { bundle: rehashed })).structuredContent as Obj;
    const cli2 = await cliVerify(rehashed);
    expect(r2).toMatchObject({ verdict: "FAIL", exit_code: 1, message: cli2.body["message"], hash_match: true, expected_state: "BLACK_SWAN", rederived_state: receipt.to_state });

    const junk = (await call("verify_alert", { bundle: { schema_version: "1" } })).structuredContent as Obj;
    expect(junk).toMatchObject({ verdict: "INVALID", exit_code: 2, hash_match: null, rederived_state: null });
    const other = (await call("verify_alert", { bundle: { ...good, methodology_version: "9.9.9" } })).structuredContent as Obj;
    expect(other).toMatchObject({ verdict: "VERSION_MISMATCH", exit_code: 3 });
  });

  it("answers unknown, pending and dead-lettered ids and bad arguments with their codes", async () => {
    expect(toolError(await call("verify_alert", { alert_id: UNKNOWN_ID }))["error"]).toBe("not_found");
    expect(toolError(await call("verify_alert", { alert_id: PENDING_ID }))).toMatchObject({ error: "receipt_pending", retry_after_secs: 2 });
    expect(toolError(await call("verify_alert", { alert_id: DEAD_ID }))["error"]).toBe("receipt_gone");
    for (const bad of [{}, { alert_id: "not-a-uuid" }, { bundle: "x" }, { alert_id: UNKNOWN_ID, trusted_signers: ["nope"] }, { alert_id: UNKNOWN_ID, trusted_signers: [] }]) {
      expect(toolError(await call("verify_alert", bad))["error"], JSON.stringify(bad)).toBe("invalid_input");
    }
  });

  it("reads a committed receipt back from a Solana node, as `peg-oracle verify --rpc` does", async () => {
    const receipt: Receipt = rm.receipts.find((x) => x.to_state === "DEPEG")!;
    const payer = await createKeyPairSignerFromPrivateKeyBytes(randomBytes(32));
    node.setBalance(payer.address, 1_000_000n);
    const rpc = solanaRpc(node.url);
    const memo = `pegoracle-v1|${receipt.methodology_version}|${receipt.alert_id}|${receipt.receipt_sha256}`;
    const signed = await signAnchorTransaction(payer, memo, await rpc.latestBlockhash());
    await rpc.send(signed.wire);
    await waitFor(async () => (await rpc.transaction(signed.signature)) !== null, 5000, "the anchor to confirm");
    const landed = node.landed().find((t) => t.signature === signed.signature)!;
    rm.stored.set(receipt.alert_id, { ...rm.stored.get(receipt.alert_id)!, commit_status: "committed" });
    const record = { tx_sig: signed.signature, slot: landed.slot!, block_time: landed.blockTime! * 1000, memo, signer: payer.address };
    (rm as { onchainCommit?: (id: string) => Promise<typeof record | undefined> }).onchainCommit = async (id) => (id === receipt.alert_id ? record : undefined);
    const withRpc = await connect(node.url);
    try {
      const out = (await call("verify_alert", { alert_id: receipt.alert_id }, withRpc)).structuredContent as Obj;
      expect(out).toMatchObject({ verdict: "PASS", exit_code: 0 });
      expect(out["onchain"]).toMatchObject({ commit_status: "committed", tx_sig: signed.signature, signer: payer.address, chain_check: { verdict: "ANCHORED", exit_code: 0 } });
      // A signer the caller does not trust: the commit exists but proves nothing for them (exit 4, as the CLI).
      const other = await createKeyPairSignerFromPrivateKeyBytes(randomBytes(32));
      const distrust = (await call("verify_alert", { alert_id: receipt.alert_id, trusted_signers: [other.address] }, withRpc)).structuredContent as Obj;
      expect(distrust).toMatchObject({ verdict: "PASS", exit_code: 4, onchain: { chain_check: { verdict: "MISMATCH", exit_code: 4 } } });
      // Without an RPC the commit is reported, not read back.
      const noRpc = (await call("verify_alert", { alert_id: receipt.alert_id })).structuredContent as Obj;
      expect(noRpc["onchain"]).toMatchObject({ commit_status: "committed", chain_check: null });
    } finally {
      await withRpc.close();
    }
  });
});

describe("resources", () => {
  it("lists and reads the methodology and the catalog", async () => {
    const { resources } = await client.listResources();
    expect(resources.map((r) => r.uri).sort()).toEqual(["peg-oracle://catalog", "peg-oracle://methodology", "peg-oracle://methodology/current", "peg-oracle://methodology/notes"]);
    const text = async (uri: string) => ((await client.readResource({ uri })).contents[0] as { text: string }).text;
    expect(await text("peg-oracle://methodology")).toMatch(/^# Peg-risk methodology 1\.0\.0/);
    const cat = JSON.parse(await text("peg-oracle://catalog")) as { version: string; assets: Obj[] };
    expect(cat.version).toBe(catalog.version);
    expect(cat.assets).toHaveLength(catalog.all.length);
    expect(cat.assets.find((a) => a["symbol"] === "USDC")).toMatchObject({ class: "stable_fiat", anchor: "USD", active: true });
    expect(JSON.parse(await text("peg-oracle://methodology/current"))).toEqual(await rest("/v1/methodology/current"));
    await expect(client.readResource({ uri: "peg-oracle://nothing" })).rejects.toMatchObject({ code: -32002 });
  });

  it("docs/methodology.md is the methodology text of this release", () => {
    const spec = new URL("../../../shared/spec/methodology.md", import.meta.url);
    if (!existsSync(spec)) return; // only where the specification sits beside the repository
    expect(readFileSync(new URL("../../docs/methodology.md", import.meta.url), "utf8")).toBe(readFileSync(spec, "utf8"));
  });
});
