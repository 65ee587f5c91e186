/**
 * Issue 24, item 1: `/mcp` to the letter of MCP 2025-11-25, against the real service started in-process (embedded
 * store, a nats-server of the test's own, the simulated feed on the real clock, so rate windows are real minutes),
 * through the official SDK's client and raw HTTP:
 *
 * - DNS-rebinding protection (basic/transports, Security Warning): a foreign `Origin` or `Host` is a 403 with a
 *   JSON-RPC error body; no Origin, a same-origin page, a CORS_ORIGINS origin, the loopback names on PORT, the public
 *   URL's host and MCP_ALLOWED_HOSTS pass.
 * - an unknown tool is the JSON-RPC error -32602 (server/tools, Error Handling), not a tool result;
 * - `resources/templates/list` names the asset-card template, `resources/read` reads a card through it and an
 *   unknown symbol is the JSON-RPC error -32002 (server/resources, Error Handling);
 * - `/mcp` has its own rate budget (MCP_RATE_LIMIT_PER_MIN), not RATE_LIMIT_PER_MIN, and its 429 is a JSON-RPC error
 *   with Retry-After. TRUST_PROXY lets each test be a client of its own (X-Forwarded-For), so budgets do not mix.
 */
import { request } from "node:http";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import { waitFor } from "../support/ports.ts";
import { startTestService, type TestService } from "../support/service.ts";

type Obj = Record<string, unknown>;

const DEFAULT_BUDGET = 5;
const MCP_BUDGET = 40;
const catalog = loadShippedCatalog();
let running: TestService;
let port = 0;
let nextClient = 1;

/** A client address of its own (X-Forwarded-For, trusted): each test spends its own budgets. */
const freshIp = (): string => `198.51.100.${nextClient++}`;

interface Raw {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: Obj;
}

/** One raw HTTP request (node:http: fetch may not set Host). */
function raw(method: string, path: string, headers: Record<string, string>, body?: unknown): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = request(
      { host: "127.0.0.1", port, method, path, headers: { ...(payload === undefined ? {} : { "content-type": "application/json" }), ...headers } },
      (res) => {
        let text = "";
        res.on("data", (c: Buffer) => (text += c.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text === "" ? {} : (JSON.parse(text) as Obj) }));
      },
    );
    req.on("error", reject);
    req.end(payload);
  });
}

const INITIALIZE = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
};

/** An MCP initialize POST with the given Host and (optional) Origin. */
function initialize(host: string, origin?: string): Promise<Raw> {
  return raw("POST", "/mcp", {
    host,
    accept: "application/json, text/event-stream",
    "x-forwarded-for": freshIp(),
    ...(origin === undefined ? {} : { origin }),
  }, INITIALIZE);
}

async function sdkClient(ip = freshIp()): Promise<Client> {
  const client = new Client({ name: "to-the-letter", version: "1" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`), { requestInit: { headers: { "x-forwarded-for": ip } } }));
  return client;
}

/** The McpError a promise rejects with. */
async function mcpError(p: Promise<unknown>): Promise<McpError> {
  const e = await p.then(
    () => null,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(McpError);
  return e as McpError;
}

beforeAll(async () => {
  const env = {
    TRUST_PROXY: "true",
    RATE_LIMIT_PER_MIN: String(DEFAULT_BUDGET),
    MCP_RATE_LIMIT_PER_MIN: String(MCP_BUDGET),
    CORS_ORIGINS: "https://agent.example.com",
    WEBHOOK_BASE_URL: "https://oracle.example.com",
    MCP_ALLOWED_HOSTS: "mcp.internal:9000",
  };
  running = await startTestService({ env, catalog, prefix: "peg-mcp-letter-" });
  port = running.service.api.port;
  let n = 0;
  await waitFor(async () => (await raw("GET", "/v1/assets/USDC", { "x-forwarded-for": `203.0.113.${(n++ % 250) + 1}` })).status === 200, 60_000, "USDC's card", 100);
}, 120_000);

afterAll(async () => {
  await running?.stop();
});

describe("Origin and Host (DNS-rebinding protection)", () => {
  it("answers clients without Origin, same-origin pages and CORS_ORIGINS origins on the allowed hosts", async () => {
    const allowed: [string, string | undefined][] = [
      [`127.0.0.1:${port}`, undefined],
      [`localhost:${port}`, undefined],
      [`[::1]:${port}`, undefined],
      [`127.0.0.1:${port}`, `http://127.0.0.1:${port}`], // same-origin
      [`localhost:${port}`, "https://agent.example.com"], // CORS_ORIGINS
      ["oracle.example.com", "https://oracle.example.com"], // WEBHOOK_BASE_URL's host, same-origin behind a proxy
      ["mcp.internal:9000", undefined], // MCP_ALLOWED_HOSTS
    ];
    for (const [host, origin] of allowed) {
      const res = await initialize(host, origin);
      expect(res.status, `${host} ${origin}`).toBe(200);
      expect(res.body).toMatchObject({ jsonrpc: "2.0", id: 1, result: { serverInfo: { name: "peg-oracle" } } });
    }
  });

  it("refuses a foreign Origin with 403 and a JSON-RPC error, before anything runs", async () => {
    for (const origin of ["http://evil.example", "null", `http://localhost:${port}`, "https://oracle.example.com:8443", "https://agent.example.com.evil.example"]) {
      const res = await initialize(`127.0.0.1:${port}`, origin);
      expect(res.status, origin).toBe(403);
      expect(res.body, origin).toEqual({ jsonrpc: "2.0", error: { code: -32000, message: expect.stringContaining("Invalid Origin header") }, id: null });
    }
  });

  it("refuses a Host it does not answer as (a rebound name) with 403 and a JSON-RPC error", async () => {
    for (const host of ["evil.example", `evil.example:${port}`, `127.0.0.1:${port + 1}`, "mcp.internal:9001", "localhost"]) {
      const res = await initialize(host, undefined);
      expect(res.status, host).toBe(403);
      expect(res.body, host).toEqual({ jsonrpc: "2.0", error: { code: -32000, message: expect.stringContaining("Invalid Host header") }, id: null });
    }
    // The attacker's page under its own rebound name: same-origin with itself, but not a host this server is.
    expect((await initialize(`evil.example:${port}`, `http://evil.example:${port}`)).status).toBe(403);
  });

  it("the REST API keeps its own rules: a foreign Origin there is not an MCP matter", async () => {
    expect((await raw("GET", "/v1/assets/USDC", { origin: "http://evil.example", "x-forwarded-for": freshIp() })).status).toBe(200);
  });
});

describe("errors the protocol makes JSON-RPC errors", () => {
  it("an unknown tool is -32602, not a tool result", async () => {
    const client = await sdkClient();
    try {
      const e = await mcpError(client.callTool({ name: "no_such_tool", arguments: {} }));
      expect(e.code).toBe(ErrorCode.InvalidParams);
      expect(e.message).toMatch(/Unknown tool: "no_such_tool"/);
      // A known tool with bad arguments stays a tool error the model can read.
      const bad = await client.callTool({ name: "get_peg_state", arguments: { symbol: 7 } });
      expect(bad.isError).toBe(true);
    } finally {
      await client.close();
    }
  });

  it("resources/templates/list names the asset card; resources/read reads it; an unknown symbol is -32002", async () => {
    const client = await sdkClient();
    try {
      const { resourceTemplates } = await client.listResourceTemplates();
      expect(resourceTemplates).toEqual([expect.objectContaining({ uriTemplate: "peg-oracle://assets/{symbol}", name: "asset-card", mimeType: "application/json" })]);

      const read = await client.readResource({ uri: "peg-oracle://assets/USDC" });
      expect(read.contents).toHaveLength(1);
      expect(read.contents[0]).toMatchObject({ uri: "peg-oracle://assets/USDC", mimeType: "application/json" });
      const card = JSON.parse((read.contents[0] as { text: string }).text) as Obj;
      const rest = await raw("GET", "/v1/assets/USDC", { "x-forwarded-for": freshIp() });
      expect(card["symbol"]).toBe("USDC");
      expect(card["mint"]).toBe(rest.body["mint"]);
      expect(card["state"]).toBe(rest.body["state"]);

      for (const uri of ["peg-oracle://assets/NOPE", "peg-oracle://assets/%E0%A4%A", "peg-oracle://nothing"]) {
        const e = await mcpError(client.readResource({ uri }));
        expect(e.code, uri).toBe(-32002);
        expect(e.data, uri).toEqual({ uri });
      }
    } finally {
      await client.close();
    }
  });
});

describe("the /mcp rate budget", () => {
  it(`an SDK session outlives RATE_LIMIT_PER_MIN (${DEFAULT_BUDGET}): /mcp counts against its own budget, the REST one stays whole`, async () => {
    const ip = freshIp();
    const client = await sdkClient(ip);
    try {
      await client.listTools();
      for (let i = 0; i < DEFAULT_BUDGET + 2; i++) {
        const r = await client.callTool({ name: "get_peg_state", arguments: { symbol: "USDC" } });
        expect(r.isError, JSON.stringify(r.content)).toBeFalsy();
      }
    } finally {
      await client.close();
    }
    const rest = await raw("GET", "/v1/assets/USDC", { "x-forwarded-for": ip });
    expect(rest.status).toBe(200);
    expect(rest.headers["ratelimit-remaining"]).toBe(String(DEFAULT_BUDGET - 1));
  });

  it(`beyond MCP_RATE_LIMIT_PER_MIN (${MCP_BUDGET}) a 429 with a JSON-RPC error body and Retry-After, which the SDK reports`, async () => {
    const ip = freshIp();
    const post = () => raw("POST", "/mcp", { host: `127.0.0.1:${port}`, accept: "application/json, text/event-stream", "x-forwarded-for": ip }, INITIALIZE);
    for (let i = 0; i < MCP_BUDGET; i++) {
      const ok = await post();
      expect(ok.status, `request ${i + 1}`).toBe(200);
      expect(ok.headers["ratelimit-policy"]).toBe(`"mcp";q=${MCP_BUDGET};w=60`);
    }
    const refused = await post();
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({
      jsonrpc: "2.0",
      error: { code: -32000, message: `more than ${MCP_BUDGET} mcp requests per minute from this address`, data: { error: "rate_limited" } },
      id: null,
    });
    const retryAfter = Number(refused.headers["retry-after"]);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(120);
    expect(refused.headers["content-type"]).toBe("application/json");

    // The official client surfaces the server's reason, not only "Error POSTing to endpoint".
    const e = await new Client({ name: "late", version: "1" })
      .connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`), { requestInit: { headers: { "x-forwarded-for": ip } } }))
      .then(
        () => null,
        (x: unknown) => x as Error,
      );
    expect(e?.message).toMatch(/more than 40 mcp requests per minute/);
  });
});
