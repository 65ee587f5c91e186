/**
 * The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned below) against `/mcp` of the real
 * service (`peg-oracle serve`, a child process on embedded defaults: a temporary DATA_DIR, a free PORT, the default
 * `/mcp` rate budget). The suite needs Node >= 22 (on Node 20 it stops at `fs.globSync`), so it runs on the Node 22
 * binary of test/support/node-lines.ts; the suite itself is installed from the npm registry into
 * node_modules/.cache/peg-mcp-conformance/<version> on first use.
 *
 * Each applicable scenario runs on its own (`server --scenario <name>`) and must end with every check SUCCESS (INFO
 * lines allowed; a FAILURE, WARNING or SKIPPED fails it). The suite's other server scenarios need fixtures of its
 * reference server (tools such as `test_simple_text`, resources such as `test://static-text`), prompts, logging,
 * completions, subscriptions, sampling, elicitation or sessions, none of which a stateless tools-and-resources server
 * has: they are listed with their reasons here and in docs/agents.md ("Conformance"), and a suite whose list differs
 * from the two (a new version's new scenario) fails the first test until it is classified.
 *
 * `npm run test:mcp-conformance` runs this file alone; `npm run test:slow` runs it with the slow suite.
 */
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nodeBinary, NODE_LINES } from "../support/node-lines.ts";
import { freePort } from "../support/ports.ts";
import { spawnServe, type ServeProcess } from "../support/serve.ts";

/** The suite's version: exact, so a new release changes nothing here until this line does. */
const CONFORMANCE_VERSION = "0.1.16";

/** The server scenarios that apply to a stateless server of tools and resources; each must pass. */
const APPLICABLE = ["server-initialize", "ping", "tools-list", "resources-list", "dns-rebinding-protection"] as const;

/** The suite's other server scenarios and why each does not apply (docs/agents.md lists the same). */
const NOT_APPLICABLE: Readonly<Record<string, string>> = {
  "logging-set-level": "no logging capability: the server sends no log notifications",
  "completion-complete": "no completions capability (and no prompts to complete arguments of)",
  "tools-call-simple-text": "calls the suite's fixture tool test_simple_text",
  "tools-call-image": "calls the fixture tool test_image_content; no tool answers images",
  "tools-call-audio": "calls the fixture tool test_audio_content; no tool answers audio",
  "tools-call-embedded-resource": "calls the fixture tool test_embedded_resource",
  "tools-call-mixed-content": "calls the fixture tool test_multiple_content_types",
  "tools-call-with-logging": "calls the fixture tool test_tool_with_logging; no logging capability",
  "tools-call-error": "calls the fixture tool test_error_handling",
  "tools-call-with-progress": "calls the fixture tool test_tool_with_progress; no tool sends progress",
  "tools-call-sampling": "the fixture tool test_sampling asks the client to sample: a stateless server sends no requests",
  "tools-call-elicitation": "the fixture tool test_elicitation asks the client for input: a stateless server sends no requests",
  "json-schema-2020-12": "lists the fixture tool json_schema_2020_12_tool (pending in the suite); the input schemas are draft 7",
  "elicitation-sep1034-defaults": "elicitation (fixture tool test_elicitation_sep1034_defaults)",
  "elicitation-sep1330-enums": "elicitation (fixture tool test_elicitation_sep1330_enums)",
  "server-sse-polling": "needs a session id and an SSE stream to resume (pending in the suite): answers are one JSON body each",
  "server-sse-multiple-streams": "needs a session id; without one the suite only warns and checks nothing",
  "resources-read-text": "reads the fixture resource test://static-text",
  "resources-read-binary": "reads the fixture resource test://static-binary; every resource is text",
  "resources-templates-read": "reads the fixture template test://template/{id}/data",
  "resources-subscribe": "no resource subscriptions: a stateless server has no stream to notify on",
  "resources-unsubscribe": "no resource subscriptions",
  "prompts-list": "no prompts capability",
  "prompts-get-simple": "no prompts capability",
  "prompts-get-with-args": "no prompts capability",
  "prompts-get-embedded-resource": "no prompts capability",
  "prompts-get-with-image": "no prompts capability",
};

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const CACHE = join(ROOT, "node_modules", ".cache", "peg-mcp-conformance");

interface Check {
  readonly id: string;
  readonly status: string;
  readonly description?: string;
  readonly errorMessage?: string;
}

interface Run {
  readonly code: number;
  readonly output: string;
}

/** The suite's entry file, installed from the registry on first use (into a temporary folder renamed when complete). */
async function conformanceEntry(): Promise<string> {
  const dir = join(CACHE, CONFORMANCE_VERSION);
  const entry = join(dir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js");
  if (existsSync(entry)) return entry;
  const partial = `${dir}.partial-${String(process.pid)}`;
  mkdirSync(partial, { recursive: true });
  const pkg = `@modelcontextprotocol/conformance@${CONFORMANCE_VERSION}`;
  const result = await run("npm", ["install", "--no-audit", "--no-fund", "--no-save", "--package-lock=false", "--prefix", partial, pkg], partial);
  if (result.code !== 0) throw new Error(`npm install ${pkg} failed: ${result.output.slice(-3000)}`);
  rmSync(dir, { recursive: true, force: true });
  renameSync(partial, dir);
  return entry;
}

function run(command: string, args: string[], cwd: string): Promise<Run> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd, env: { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0" }, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === "number" ? error.code : -1;
      resolve({ code, output: `${stdout}${stderr}` });
    });
  });
}

let node = "";
let entry = "";
let service: ServeProcess;
let url = "";
const dirs: string[] = [];

const tempDir = (prefix: string): string => {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
};

const suite = (...args: string[]): Promise<Run> => run(node, [entry, ...args], tempDir("peg-conformance-cwd-"));

beforeAll(async () => {
  const port = await freePort();
  service = spawnServe({ DATA_DIR: tempDir("peg-conformance-data-"), PORT: String(port) });
  [node, entry] = await Promise.all([nodeBinary(NODE_LINES[0]), conformanceEntry(), service.started()]);
  url = `http://127.0.0.1:${String(port)}/mcp`;
}, 180_000);

afterAll(async () => {
  if (service !== undefined && service.proc.exitCode === null) {
    service.proc.kill("SIGTERM");
    await service.exited;
  }
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
}, 60_000);

describe(`MCP conformance suite ${CONFORMANCE_VERSION} against /mcp`, () => {
  it("lists exactly the server scenarios classified here", async () => {
    const { code, output } = await suite("list", "--server");
    expect(code, output).toBe(0);
    const listed = [...output.matchAll(/^\s*- ([a-z0-9-]+)/gm)].map((m) => m[1]!).sort();
    expect(listed).toEqual([...APPLICABLE, ...Object.keys(NOT_APPLICABLE)].sort());
  });

  it("docs/agents.md names every scenario and why it does not apply", () => {
    const docs = readFileSync(join(ROOT, "docs", "agents.md"), "utf8");
    for (const name of [...APPLICABLE, ...Object.keys(NOT_APPLICABLE)]) expect(docs, name).toContain(`\`${name}\``);
    expect(docs).toContain(`@modelcontextprotocol/conformance\` ${CONFORMANCE_VERSION}`);
  });

  it.each(APPLICABLE)("%s passes", async (scenario) => {
    const out = tempDir("peg-conformance-out-");
    const { code, output } = await suite("server", "--url", url, "--scenario", scenario, "--output-dir", out);
    const results = readdirSync(out).filter((d) => d.startsWith(`server-${scenario}-`));
    expect(results, output).toHaveLength(1);
    const checks = JSON.parse(readFileSync(join(out, results[0]!, "checks.json"), "utf8")) as Check[];
    const verdicts = checks.filter((c) => c.status !== "INFO");
    const report = `${output}\n${JSON.stringify(checks, null, 2)}`;
    expect(verdicts.length, report).toBeGreaterThan(0);
    expect(verdicts.filter((c) => c.status !== "SUCCESS"), report).toEqual([]);
    expect(code, report).toBe(0);
  }, 60_000);
});
