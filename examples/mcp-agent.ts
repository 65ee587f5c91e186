/**
 * An agent's view of the oracle through MCP (docs/agents.md): lists the tools, finds the assets off their peg,
 * verifies an alert's receipt independently, and (with --pay) buys the whole peg feed with an x402 payment in USDC.
 *
 *   npm start                                                        # in another terminal
 *   node --import tsx examples/mcp-agent.ts [http://localhost:8080/mcp]          # Streamable HTTP (remote)
 *   node --import tsx examples/mcp-agent.ts --stdio                              # spawns `peg-oracle mcp` (local)
 *   node --import tsx examples/mcp-agent.ts URL --pay ~/.config/solana/id.json [--rpc https://api.devnet.solana.com]
 *
 * `--stdio` starts this checkout's `peg-oracle mcp` (`bin/peg-oracle.js`, so from any working directory) with your
 * environment and working directory: it reads the store your DATABASE_URL or DATA_DIR names (a relative DATA_DIR, and
 * the default `./data`, from where you run this), with your SOLANA_RPC_URL, SECRETS_KEY and the rest, as `npm start`
 * would with the same settings. The store it opens is printed on stderr. On the embedded database it refuses while a
 * service holds DATA_DIR/pg open (PGlite serves one process): use the service's /mcp then, or PostgreSQL.
 *
 * `--pay` needs a service with X402_PAY_TO set, and a Solana CLI keypair file holding USDC on the service's
 * X402_NETWORK; the payment is made with the x402 project's client library (`@x402/core`, `@x402/svm`). Exit 0 done,
 * 1 a tool or payment failed, 2 bad arguments or no server.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, type StdioServerParameters } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { createKeyPairSignerFromBytes } from "@solana/kit";
import { x402Client } from "@x402/core/client";
import type { PaymentRequired, SettleResponse } from "@x402/core/types";
import { ExactSvmScheme } from "@x402/svm/exact/client";

type Obj = Record<string, unknown>;

/** The structured result of a tool call; a tool error (isError) becomes an Error with its JSON text. */
export async function callTool(client: Client, name: string, args: Obj = {}): Promise<Obj> {
  const r = (await client.callTool({ name, arguments: args })) as CallToolResult;
  if (r.isError === true) throw new Error(`${name}: ${(r.content[0] as { text?: string } | undefined)?.text ?? "tool error"}`);
  return r.structuredContent as Obj;
}

/** The free tools: the assets off their peg, and the verdict on one alert (the first given, or none). */
export async function tour(client: Client, print: (line: string) => void, alertId?: string): Promise<void> {
  const { tools } = await client.listTools();
  print(`tools: ${tools.map((t) => t.name).join(", ")}`);
  const listed = await callTool(client, "list_assets");
  const off = (listed["assets"] as Obj[]).filter((a) => a["state"] !== "PEGGED" && a["state"] !== null);
  print(`${String(listed["count"])} assets tracked, ${off.length} off their peg${off.length === 0 ? "" : `: ${off.map((a) => `${String(a["symbol"])} ${String(a["state"])} (${String(a["discount"])})`).join(", ")}`}`);
  const card = await callTool(client, "get_peg_state", { symbol: "USDC" });
  print(`USDC: ${String(card["state"])}, discount ${String(card["discount"])}, risk ${String(card["risk_score"])}`);
  if (alertId !== undefined) {
    const v = await callTool(client, "verify_alert", { alert_id: alertId });
    print(`alert ${alertId}: ${String(v["verdict"])} (exit ${String(v["exit_code"])}), re-derived ${String(v["rederived_state"])}, on-chain ${String((v["onchain"] as Obj | null)?.["commit_status"] ?? "n/a")}`);
  }
}

/**
 * Buys `get_peg_feed` with x402 (the MCP transport's tool-result binding): the unpaid call answers the
 * PaymentRequired, `payer` signs a USDC transfer for it, and the call is made again with the payment in
 * `_meta["x402/payment"]`. Returns the settlement (its `transaction` is the Solana signature).
 */
export async function payForFeed(client: Client, payer: x402Client, print: (line: string) => void): Promise<SettleResponse> {
  const unpaid = (await client.callTool({ name: "get_peg_feed", arguments: {} })) as CallToolResult;
  if (unpaid.isError !== true) throw new Error("get_peg_feed answered without payment");
  const required = (unpaid.structuredContent ?? JSON.parse((unpaid.content[0] as { text: string }).text)) as PaymentRequired;
  if (!Array.isArray(required.accepts)) throw new Error(`get_peg_feed: ${(unpaid.content[0] as { text: string }).text}`);
  const offer = required.accepts[0]!;
  print(`get_peg_feed costs ${offer.amount} micro-USDC on ${offer.network}, paid to ${offer.payTo}`);
  const payment = await payer.createPaymentPayload(required);
  const paid = (await client.callTool({ name: "get_peg_feed", arguments: {}, _meta: { "x402/payment": payment } })) as CallToolResult;
  if (paid.isError === true) throw new Error(`payment refused: ${(paid.content[0] as { text: string }).text}`);
  const feed = paid.structuredContent as Obj;
  const settlement = (paid._meta as Obj)["x402/payment-response"] as SettleResponse;
  print(`paid (transaction ${settlement.transaction}); the feed has ${String(feed["count"])} signals`);
  return settlement;
}

/** This checkout's CLI: it loads tsx relative to itself, so it runs whatever the working directory. */
const PEG_ORACLE_BIN = fileURLToPath(new URL("../bin/peg-oracle.js", import.meta.url));

/**
 * How to start the local server: `peg-oracle mcp` with the caller's whole environment (the SDK would otherwise pass
 * only PATH, HOME and a few more, and the server would answer from a fresh ./data) in the caller's working directory.
 */
export function stdioServer(env: NodeJS.ProcessEnv, cwd: string): StdioServerParameters {
  const passed: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined) passed[k] = v;
  return { command: process.execPath, args: [PEG_ORACLE_BIN, "mcp"], env: passed, cwd, stderr: "inherit" };
}

/** The store the local server will open, for the caller to see (empty values count as unset, as for the service). */
export function storeOf(env: NodeJS.ProcessEnv, cwd: string): string {
  const set = (name: string) => (env[name]?.trim() ?? "") !== "";
  if (set("DATABASE_URL")) return "PostgreSQL at DATABASE_URL";
  return `the embedded database in ${resolve(cwd, set("DATA_DIR") ? env["DATA_DIR"]!.trim() : "./data", "pg")}`;
}

async function main(argv: readonly string[]): Promise<number> {
  const flag = (name: string): string | undefined => {
    const i = argv.indexOf(name);
    return i < 0 ? undefined : argv[i + 1];
  };
  const stdio = argv.includes("--stdio");
  const url = argv.find((a) => /^https?:\/\//.test(a)) ?? "http://localhost:8080/mcp";
  const client = new Client({ name: "peg-oracle-example", version: "1.0.0" });
  if (stdio) console.error(`peg-oracle mcp over stdio, reading ${storeOf(process.env, process.cwd())}`);
  try {
    await client.connect(stdio ? new StdioClientTransport(stdioServer(process.env, process.cwd())) : new StreamableHTTPClientTransport(new URL(url)));
  } catch (e) {
    console.error(`cannot reach the MCP server (${stdio ? "peg-oracle mcp" : url}): ${e instanceof Error ? e.message : String(e)}`);
    return 2;
  }
  try {
    const base = stdio ? null : new URL(url).origin;
    const latest = base === null ? undefined : (((await (await fetch(`${base}/v1/alerts?limit=1`)).json()) as { data?: Obj[] }).data?.[0]?.["id"] as string | undefined);
    await tour(client, console.log, latest);
    const keypair = flag("--pay");
    if (keypair !== undefined) {
      const signer = await createKeyPairSignerFromBytes(Uint8Array.from(JSON.parse(readFileSync(keypair, "utf8")) as number[]));
      const rpc = flag("--rpc");
      const payer = new x402Client().register("solana:*", new ExactSvmScheme(signer, rpc === undefined ? undefined : { rpcUrl: rpc }));
      await payForFeed(client, payer, console.log);
    }
    return 0;
  } catch (e) {
    console.error(e instanceof Error ? e.message : String(e));
    return 1;
  } finally {
    await client.close();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exitCode = await main(process.argv.slice(2));
