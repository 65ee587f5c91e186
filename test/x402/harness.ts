/**
 * What the x402 tests share: a local token node (devnet USDC), a store (in-memory PGlite), the payment gate
 * self-facilitated over the node with a funded fee payer, the agent MCP server and the /x402 routes over the fixture
 * read model's REST routes, and a payer using the x402 project's client library (`x402Client` with `@x402/svm`'s
 * exact scheme) from a generated keypair funded with 1 USDC.
 */
import { randomBytes } from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import {
  AccountRole,
  address,
  appendTransactionMessageInstructions,
  createKeyPairSignerFromPrivateKeyBytes,
  createTransactionMessage,
  getBase64EncodedWireTransaction,
  partiallySignTransactionMessageWithSigners,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
  type AccountSignerMeta,
  type Instruction,
  type KeyPairSigner,
} from "@solana/kit";
import { x402Client } from "@x402/core/client";
import type { FacilitatorClient } from "@x402/core/server";
import type { PaymentPayload, PaymentRequired } from "@x402/core/types";
import { ExactSvmScheme } from "@x402/svm/exact/client";
import { Registry } from "prom-client";
import { systemClock, type Clock } from "../../src/clock.ts";
import { parseConfig } from "../../src/config.ts";
import { publicRoutes } from "../../src/http/routes/index.ts";
import { Router } from "../../src/http/router.ts";
import type { HttpResult } from "../../src/http/types.ts";
import { agentSpec } from "../../src/mcp/agent.ts";
import { routeCaller } from "../../src/mcp/api.ts";
import type { EventPage, TransitionEvents } from "../../src/mcp/events.ts";
import { serverFor } from "../../src/mcp/server.ts";
import { x402Routes } from "../../src/mcp/x402-routes.ts";
import { openStore, type Store } from "../../src/store/index.ts";
import { chainProbe } from "../../src/x402/probe.ts";
import { createPaymentGate, localFacilitator, registerX402Metrics, x402Metrics, type PaymentGate, type X402Config, type X402Metrics } from "../../src/x402/index.ts";
import { catalog, fakeReadModel } from "../http/fixtures.ts";
import { ataOf, COMPUTE_BUDGET_PROGRAM, MEMO_PROGRAMS, startLocalTokenNode, TOKEN_PROGRAM, type LocalTokenNode } from "../support/solana-token-rpc.ts";

export const DEVNET_USDC = "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU";
export const MAINNET_USDC = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";
export const ONE_USDC = 1_000_000n;

export type Obj = Record<string, unknown>;

export interface X402Harness {
  readonly node: LocalTokenNode;
  readonly store: Store;
  readonly config: X402Config;
  readonly feePayer: KeyPairSigner;
  readonly payTo: KeyPairSigner;
  readonly payer: KeyPairSigner;
  readonly gate: PaymentGate;
  readonly metrics: X402Metrics;
  readonly registry: Registry;
  /** The x402 client library, paying from `payer`. */
  readonly pay: x402Client;
  readonly mcp: Client;
  /** Runs one GET against the /x402 routes (in-process, as the pipeline would). */
  http(path: string, headers?: Record<string, string>): Promise<{ status: number; headers: Record<string, string>; body: Obj }>;
  /** A second gate over the same store (a restarted process: no in-memory state survives). */
  restartedGate(): Promise<PaymentGate>;
  /**
   * A gate over the same store and node whose facilitator is `wrap` of the local one (to make it fail or wait), with
   * its own clock or claim grace if given.
   */
  gateWith(wrap: (f: FacilitatorClient) => FacilitatorClient, opts?: { clock?: Clock; claimGraceMs?: number; metrics?: X402Metrics }): Promise<PaymentGate>;
  /** An MCP client of the agent server whose paid tools go through `gate`. */
  mcpVia(gate: PaymentGate): Promise<Client>;
  /** Runs one GET against the /x402 routes served by `gate`. */
  httpVia(gate: PaymentGate, path: string, headers?: Record<string, string>): Promise<{ status: number; headers: Record<string, string>; body: Obj }>;
  /** A payer funded with `amount` micro-USDC. */
  newPayer(amount: bigint): Promise<{ signer: KeyPairSigner; client: x402Client }>;
  close(): Promise<void>;
}

/** Fixed events for subscribe_peg_events (the store-backed source has its own test). */
export const FAKE_EVENTS: TransitionEvents = {
  latest: async () => 41,
  after: async (after): Promise<EventPage> => ({ events: [], next_cursor: after }),
};

/**
 * The gate's deadline on each call to the local node. The node always answers at once or refuses the connection (its
 * `setHealth`), so here a deadline can only measure how long this process was starved of CPU: with 2 s, a loaded
 * machine made the winner of the six-at-once race answer `unavailable` (its claim released, the five others already
 * told `reused`), so no request got the data. Longer than a test's own timeout (30 s), it never decides an outcome.
 */
const RPC_DEADLINE_MS = 60_000;

const signer = () => createKeyPairSignerFromPrivateKeyBytes(randomBytes(32));

export function clientFor(s: KeyPairSigner, rpcUrl: string): x402Client {
  return new x402Client().register("solana:*", new ExactSvmScheme(s, { rpcUrl }));
}

export async function startHarness(): Promise<X402Harness> {
  const node = await startLocalTokenNode({ mint: DEVNET_USDC, otherMints: [MAINNET_USDC] });
  const store = await openStore({ kind: "pglite-memory" }, systemClock);
  const [feePayer, payTo, payer] = await Promise.all([signer(), signer(), signer()]);
  node.setSol(feePayer.address, 1_000_000_000n);
  await node.fund(payTo.address, 0n);
  await node.fund(payer.address, ONE_USDC);
  const config = parseConfig({ X402_PAY_TO: payTo.address, X402_NETWORK: "solana-devnet" }).x402;
  const metrics = x402Metrics();
  const registry = new Registry();
  registerX402Metrics(metrics, registry);
  const makeGate = (m?: X402Metrics, wrap: (f: FacilitatorClient) => FacilitatorClient = (f) => f, o: { clock?: Clock; claimGraceMs?: number } = {}) =>
    createPaymentGate({
      config,
      facilitator: wrap(localFacilitator({ feePayer, rpcUrl: node.url, network: config.network, timeoutMs: RPC_DEADLINE_MS })),
      probe: chainProbe({ rpcUrl: node.url, feePayer, timeoutMs: RPC_DEADLINE_MS }),
      db: store.db,
      clock: o.clock ?? systemClock,
      ...(o.claimGraceMs === undefined ? {} : { claimGraceMs: o.claimGraceMs }),
      ...(m === undefined ? {} : { metrics: m }),
    });
  const gate = await makeGate(metrics);
  const rm = fakeReadModel();
  const routes = publicRoutes(rm);
  const clients: Client[] = [];
  const mcpFor = async (g: PaymentGate): Promise<Client> => {
    const [a, b] = InMemoryTransport.createLinkedPair();
    await serverFor(agentSpec({ routes, catalog, rpcUrl: null, paid: { gate: g, events: FAKE_EVENTS } })).connect(a);
    const client = new Client({ name: "x402-test", version: "1" });
    await client.connect(b);
    clients.push(client);
    return client;
  };
  const mcp = await mcpFor(gate);
  const routerFor = (g: PaymentGate) => new Router(x402Routes({ gate: g, api: routeCaller(routes), events: FAKE_EVENTS, baseUrl: "http://localhost:8080" }));
  const router = routerFor(gate);
  async function get(via: Router, path: string, headers: Record<string, string>): Promise<{ status: number; headers: Record<string, string>; body: Obj }> {
    const url = new URL(path, "http://localhost");
    let r: HttpResult;
    // As uWebSockets.js hands them to the pipeline: lower-case names.
    const lowerIn = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
    try {
      r = await via.handle({ method: "GET", path: url.pathname, query: url.searchParams, headers: lowerIn, ip: "127.0.0.1", requestId: "t", body: null });
    } catch (e) {
      const err = e as { status?: number; toBody?: () => Obj };
      if (err.status === undefined || err.toBody === undefined) throw e;
      return { status: err.status, headers: {}, body: err.toBody() };
    }
    const lower: Record<string, string> = {};
    for (const [k, v] of Object.entries(r.headers ?? {})) lower[k.toLowerCase()] = v;
    return { status: r.status, headers: lower, body: (r.json ?? {}) as Obj };
  }
  return {
    node,
    store,
    config,
    feePayer,
    payTo,
    payer,
    gate,
    metrics,
    registry,
    pay: clientFor(payer, node.url),
    mcp,
    http: (path, headers = {}) => get(router, path, headers),
    restartedGate: () => makeGate(),
    gateWith: (wrap, o) => makeGate(o?.metrics, wrap, o),
    httpVia: (g, path, headers = {}) => get(routerFor(g), path, headers),
    mcpVia: mcpFor,
    async newPayer(amount) {
      const s = await signer();
      await node.fund(s.address, amount);
      return { signer: s, client: clientFor(s, node.url) };
    },
    async close() {
      for (const c of clients) await c.close();
      await store.close();
      await node.close();
    },
  };
}

/** Calls a tool, optionally with a payment in `_meta["x402/payment"]`. */
export async function callTool(h: X402Harness | { mcp: Client }, name: string, args: Obj, payment?: unknown): Promise<CallToolResult> {
  return (await h.mcp.callTool({ name, arguments: args, ...(payment === undefined ? {} : { _meta: { "x402/payment": payment } }) })) as CallToolResult;
}

/** The PaymentRequired of a tool-result binding answer (structured content, and the same JSON in content[0].text). */
export function paymentRequiredOf(r: CallToolResult): PaymentRequired {
  if (r.isError !== true) throw new Error(`expected a PaymentRequired answer, got ${JSON.stringify(r).slice(0, 300)}`);
  const pr = r.structuredContent as unknown as PaymentRequired;
  if (JSON.stringify(pr) !== (r.content[0] as { text: string }).text) throw new Error("content[0].text is not the structured PaymentRequired");
  return pr;
}

/** A challenge for `tool`, fresh. */
export async function challenge(h: X402Harness, tool: string, args: Obj = {}): Promise<PaymentRequired> {
  return paymentRequiredOf(await callTool(h, tool, args));
}

/** A refusal reason: the code before the first colon of PaymentRequired.error. */
export const reasonOf = (pr: PaymentRequired): string => (pr.error ?? "").split(":")[0]!;

/**
 * A payment transaction built by hand (for the corpus): compute limit and price, a TransferChecked of `amount` of
 * `mint` from `payer` to `to`'s associated account, then `extra` instructions, paid by `feePayer` (not signed by it).
 */
export async function craftTransaction(
  h: X402Harness,
  opts: { payer: KeyPairSigner; to: string; amount: bigint; mint?: string; feePayer?: string; extra?: readonly Instruction[]; decimals?: number; authority?: KeyPairSigner },
): Promise<string> {
  const mint = opts.mint ?? DEVNET_USDC;
  const source = await ataOf(opts.payer.address, mint);
  const destination = await ataOf(opts.to, mint);
  const u32 = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(n);
    return b;
  };
  const u64 = (n: bigint) => {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(n);
    return b;
  };
  const authority = opts.authority ?? opts.payer;
  const ixs: Instruction[] = [
    { programAddress: address(COMPUTE_BUDGET_PROGRAM), accounts: [], data: Uint8Array.from([2, ...u32(20_000)]) },
    { programAddress: address(COMPUTE_BUDGET_PROGRAM), accounts: [], data: Uint8Array.from([3, ...u64(1n)]) },
    {
      programAddress: address(TOKEN_PROGRAM),
      accounts: [
        { address: address(source), role: AccountRole.WRITABLE },
        { address: address(mint), role: AccountRole.READONLY },
        { address: address(destination), role: AccountRole.WRITABLE },
        { address: authority.address, role: AccountRole.READONLY_SIGNER, signer: authority } as AccountSignerMeta,
      ],
      data: Uint8Array.from([12, ...u64(opts.amount), opts.decimals ?? 6]),
    },
    { programAddress: address(MEMO_PROGRAMS[0]!), accounts: [], data: new TextEncoder().encode(randomBytes(8).toString("hex")) },
    ...(opts.extra ?? []),
  ];
  const res = await fetch(h.node.url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "getLatestBlockhash", params: [] }) });
  const { value } = ((await res.json()) as { result: { value: { blockhash: string; lastValidBlockHeight: number } } }).result;
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayer(address(opts.feePayer ?? h.feePayer.address), m),
    (m) => setTransactionMessageLifetimeUsingBlockhash({ blockhash: value.blockhash as never, lastValidBlockHeight: BigInt(value.lastValidBlockHeight) }, m),
    (m) => appendTransactionMessageInstructions(ixs, m),
  );
  return getBase64EncodedWireTransaction(await partiallySignTransactionMessageWithSigners(message));
}

/** A payload for `pr`'s first requirements carrying `transaction`. */
export function payloadWith(pr: PaymentRequired, transaction: string): PaymentPayload {
  return { x402Version: 2, resource: pr.resource, accepted: pr.accepts[0]!, payload: { transaction } };
}

/** Base64 of a PaymentPayload, as the PAYMENT-SIGNATURE header carries it. */
export const header = (p: unknown): string => Buffer.from(JSON.stringify(p)).toString("base64");

/** The value of a Prometheus series in the registry's text output (0 when absent). */
export async function metricValue(registry: Registry, name: string, labels: string): Promise<number> {
  const text = await registry.metrics();
  const line = text.split("\n").find((l) => l.startsWith(`${name}{${labels}}`) || (labels === "" && l.startsWith(`${name} `)));
  return line === undefined ? 0 : Number(line.split(" ").pop());
}
