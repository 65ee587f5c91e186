/**
 * The commands the docs give work as written, from where users run them (issue 23):
 * - the Claude Desktop configuration of docs/agents.md, started as a desktop client starts it (in a working
 *   directory of its own, outside the repository), answers MCP over stdio through the official SDK client;
 * - the docs' and examples' shell lines call the repository's CLI as `npx peg-oracle` (after `npm ci` it is not on
 *   PATH), and that command answers in the repository.
 */
import { execFile } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { delimiter, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { describe, expect, it } from "vitest";
import { tempDirsForSuite } from "./support/child.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const run = promisify(execFile);

const tempDir = tempDirsForSuite();

interface DesktopServer {
  readonly command: string;
  readonly args: string[];
  readonly env?: Record<string, string>;
}

/** The `peg-oracle` entry of the first `mcpServers` JSON block of docs/agents.md. */
function documentedServer(): DesktopServer {
  const text = readFileSync(join(ROOT, "docs", "agents.md"), "utf8");
  const block = /```json\n(\{\n\s+"mcpServers"[\s\S]*?)```/.exec(text);
  expect(block, "a Claude Desktop configuration in docs/agents.md").not.toBeNull();
  const config = JSON.parse(block![1]!) as { mcpServers: Record<string, DesktopServer> };
  return config.mcpServers["peg-oracle"]!;
}

describe("docs/agents.md: the Claude Desktop configuration", () => {
  it("starts from a working directory outside the repository and lists the tools over stdio", async () => {
    const server = documentedServer();
    const args = server.args.map((a) => a.replace("/path/to/peg-oracle/", ROOT));
    expect(args.join(" ")).toContain(ROOT);
    const cwd = tempDir("peg-desktop-");
    expect(cwd.startsWith(ROOT)).toBe(false);
    const transport = new StdioClientTransport({
      command: server.command,
      args,
      cwd,
      // The documented variables' shape, on an embedded store (no PostgreSQL here); `node` is this Node 20.
      env: { PATH: [dirname(process.execPath), process.env["PATH"] ?? ""].join(delimiter), DATA_DIR: join(cwd, "data"), LOG_LEVEL: "warn" },
      stderr: "pipe",
    });
    let stderr = "";
    transport.stderr?.on("data", (c: Buffer) => (stderr += c.toString()));
    const client = new Client({ name: "desktop-config-test", version: "1" });
    try {
      await client.connect(transport);
    } catch (e) {
      throw new Error(`${e instanceof Error ? e.message : String(e)}; server stderr: ${stderr}`);
    }
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual(["get_peg_state", "list_assets", "verify_alert"]);
    } finally {
      await client.close();
    }
    expect(stderr).not.toMatch(/"level":"error"/);
  }, 90_000);
});

/** Shell lines (in ```sh blocks, or after a `$ ` prompt) that call the CLI by its bare name. */
function bareCalls(file: string): string[] {
  const found: string[] = [];
  let fence: string | null = null; // the open code block's language
  for (const line of readFileSync(join(ROOT, file), "utf8").split("\n")) {
    const open = /^\s*```(\w*)/.exec(line);
    if (open !== null) {
      fence = fence === null ? open[1]! : null;
      continue;
    }
    const prompt = /^\s*(?:\*|\/\/)?\s*\$\s+(.*)$/.exec(line);
    const shell = fence !== null && ["sh", "bash", "shell", "console"].includes(fence);
    const command = prompt !== null ? prompt[1]! : shell ? line.trim() : null;
    if (command !== null && /^peg-oracle\s/.test(command)) found.push(`${file}: ${line.trim()}`);
  }
  return found;
}

describe("docs and examples call the repository's CLI as `npx peg-oracle`", () => {
  it("no shell line calls a bare `peg-oracle` (not on PATH after npm ci)", () => {
    const files = [
      "docs/agents.md",
      "docs/receipts.md",
      "examples/README.md",
      ...readdirSync(join(ROOT, "examples")).filter((f) => f.endsWith(".ts")).map((f) => `examples/${f}`),
    ];
    expect(files.flatMap(bareCalls)).toEqual([]);
  });

  it("`npx peg-oracle` answers in the repository, as they say", async () => {
    const { stdout } = await run("npx", ["--no-install", "peg-oracle", "help"], { cwd: join(ROOT, "docs"), env: { ...process.env, npm_config_update_notifier: "false" } });
    expect(stdout).toMatch(/^peg-oracle — /);
    expect(stdout).toContain("peg-oracle verify <bundle.json|url>");
  }, 60_000);
});
