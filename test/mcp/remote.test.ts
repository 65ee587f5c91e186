/**
 * The agent tools against the real service (`peg-oracle serve` as a child process, a scenario feed at 30x so real
 * alerts come within seconds, PostgreSQL and nats-server of the test's own), through the MCP SDK's own clients:
 * Streamable HTTP at `/mcp` on the service's port, and stdio through `peg-oracle mcp` spawned beside the running
 * service on the same database. verify_alert on a real alert gives the verdict `peg-oracle verify` gives.
 */
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNats, type TestNats } from "../support/nats.ts";
import { freePort, waitFor } from "../support/ports.ts";
import { startPostgres, type TestPostgres } from "../support/postgres.ts";
import { TEST_SECRETS_KEY } from "../support/secrets.ts";
import { spawnServe, type ServeProcess } from "../support/serve.ts";

type Obj = Record<string, unknown>;
const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const run = promisify(execFile);

let pg: TestPostgres;
let nats: TestNats;
let service: ServeProcess;
let databaseUrl = "";
let base = "";
let alertId = "";
const dirs: string[] = [];

const tempDir = (prefix: string): string => {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
};

async function getJson(path: string): Promise<{ status: number; body: Obj }> {
  const res = await fetch(`${base}${path}`);
  return { status: res.status, body: (await res.json()) as Obj };
}

async function cliVerify(id: string): Promise<{ code: number; body: Obj }> {
  const args = ["--import", "tsx", "src/main.ts", "verify", `${base}/v1/audit/${id}/replay-bundle`, "--json"];
  try {
    const { stdout } = await run(process.execPath, args, { cwd: ROOT, env: { PATH: process.env["PATH"] ?? "" } });
    return { code: 0, body: JSON.parse(stdout) as Obj };
  } catch (e) {
    const err = e as { code: number; stdout: string };
    return { code: err.code, body: JSON.parse(err.stdout) as Obj };
  }
}

const structured = (r: unknown): Obj => {
  const result = r as CallToolResult;
  expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
  return result.structuredContent as Obj;
};

beforeAll(async () => {
  [pg, nats] = await Promise.all([startPostgres(), startNats()]);
  databaseUrl = await pg.createDatabase();
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  service = spawnServe({
    FEED: "scenario:transition-burst",
    SCENARIO_SPEED: "30",
    DATA_DIR: tempDir("peg-mcp-"),
    PORT: String(port),
    HOST: "127.0.0.1",
    NATS_URL: nats.url,
    DATABASE_URL: databaseUrl,
    SECRETS_KEY: TEST_SECRETS_KEY,
    RATE_LIMIT_PER_MIN: "10000",
  });
  await service.started();
  // A DEPEG transition whose receipt is stored (the scenario escalates each asset about 4 s after start at 30x).
  await waitFor(
    async () => {
      const alerts = (await getJson("/v1/alerts?limit=50")).body["data"] as Obj[];
      const depeg = alerts.find((a) => a["to_state"] === "DEPEG");
      if (depeg === undefined) return false;
      if ((await getJson(`/v1/audit/${String(depeg["id"])}`)).status !== 200) return false;
      alertId = String(depeg["id"]);
      return true;
    },
    60_000,
    "a stored DEPEG receipt",
    200,
  );
}, 180_000);

afterAll(async () => {
  if (service !== undefined && service.proc.exitCode === null) {
    service.proc.kill("SIGTERM");
    await service.exited;
  }
  await Promise.all([nats?.dispose(), pg?.dispose()]);
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
}, 60_000);

describe("Streamable HTTP at /mcp on the service's port", () => {
  it("lists the tools and verifies a real alert with the CLI's verdict", async () => {
    const client = new Client({ name: "remote-test", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`)));
    try {
      expect(client.getServerVersion()?.name).toBe("peg-oracle");
      const { tools } = await client.listTools();
      // X402_PAY_TO is unset: the free tools only.
      expect(tools.map((t) => t.name).sort()).toEqual(["get_peg_state", "list_assets", "verify_alert"]);

      const out = structured(await client.callTool({ name: "verify_alert", arguments: { alert_id: alertId } }));
      const cli = await cliVerify(alertId);
      expect(cli.code).toBe(0);
      expect(out).toMatchObject({
        alert_id: alertId,
        verdict: cli.body["verdict"],
        exit_code: cli.code,
        message: cli.body["message"],
        receipt_sha256: cli.body["receipt_sha256"],
        hash_match: true,
        rederived_state: "DEPEG",
        methodology_version: "1.0.0",
      });
      // Anchoring is off (SOLANA_RPC_URL unset): the receipt waits for a commit that this deployment does not make.
      expect(out["onchain"]).toMatchObject({ commit_status: "not_committed_yet", chain_check: null });

      const listed = structured(await client.callTool({ name: "list_assets", arguments: { class: "stable_fiat" } }));
      expect((listed["assets"] as Obj[]).some((a) => a["symbol"] === "USDC")).toBe(true);
      const card = structured(await client.callTool({ name: "get_peg_state", arguments: { symbol: "USDC" } }));
      const rest = (await getJson("/v1/assets/USDC")).body;
      expect({ symbol: card["symbol"], mint: card["mint"], thresholds: card["thresholds"] }).toEqual({ symbol: rest["symbol"], mint: rest["mint"], thresholds: rest["thresholds"] });

      const bad = (await client.callTool({ name: "get_peg_state", arguments: { symbol: "NOPE" } })) as CallToolResult;
      expect(bad.isError).toBe(true);
      expect(JSON.parse((bad.content[0] as { text: string }).text)).toMatchObject({ error: "asset_not_found" });
      const methodology = await client.readResource({ uri: "peg-oracle://methodology/current" });
      expect(JSON.parse((methodology.contents[0] as { text: string }).text)).toMatchObject({ version: "1.0.0" });
    } finally {
      await client.close();
    }
  }, 60_000);

  it("keeps to the transport's HTTP rules: GET is 405, broken JSON a JSON-RPC parse error, a wrong Accept 406", async () => {
    const get = await fetch(`${base}/mcp`);
    expect(get.status).toBe(405);
    expect(get.headers.get("allow")).toBe("POST, OPTIONS");
    const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" };
    const broken = await fetch(`${base}/mcp`, { method: "POST", headers, body: "{not json" });
    expect(broken.status).toBe(400);
    expect(((await broken.json()) as { error: { code: number } }).error.code).toBe(-32700);
    const wrongAccept = await fetch(`${base}/mcp`, { method: "POST", headers: { ...headers, accept: "text/html" }, body: "{}" });
    expect(wrongAccept.status).toBe(406);
    expect(wrongAccept.headers.get("x-request-id")).toBeTruthy();
  }, 30_000);
});

describe("stdio: peg-oracle mcp", () => {
  it("beside the running service, on its database: the same tools and the same verdict", async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: ["--import", "tsx", "src/main.ts", "mcp"],
      cwd: ROOT,
      env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "/tmp", DATABASE_URL: databaseUrl, DATA_DIR: tempDir("peg-mcp-stdio-"), LOG_LEVEL: "warn" },
      stderr: "pipe",
    });
    let stderr = "";
    transport.stderr?.on("data", (c: Buffer) => (stderr += c.toString()));
    const client = new Client({ name: "stdio-test", version: "1" });
    await client.connect(transport);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual(["get_peg_state", "list_assets", "verify_alert"]);
      const out = structured(await client.callTool({ name: "verify_alert", arguments: { alert_id: alertId } }));
      const cli = await cliVerify(alertId);
      expect(out).toMatchObject({ verdict: cli.body["verdict"], exit_code: cli.code, message: cli.body["message"], receipt_sha256: cli.body["receipt_sha256"] });
      const card = structured(await client.callTool({ name: "get_peg_state", arguments: { symbol: "USDT" } }));
      expect(card["state"]).not.toBeNull();
    } finally {
      await client.close();
    }
    expect(stderr).not.toMatch(/"level":"error"/);
  }, 90_000);

  it("refuses an embedded database another process holds open, and points at /mcp", async () => {
    const data = tempDir("peg-mcp-busy-");
    mkdirSync(join(data, "pg"));
    writeFileSync(join(data, "pg", "postmaster.pid"), "-42\n");
    const r = await run(process.execPath, ["--import", "tsx", "src/main.ts", "mcp"], { cwd: ROOT, env: { PATH: process.env["PATH"] ?? "", DATA_DIR: data } }).then(
      () => ({ code: 0, stderr: "" }),
      (e: { code: number; stderr: string }) => e,
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("is open in another process");
    expect(r.stderr).toContain("/mcp");
  }, 60_000);
});
