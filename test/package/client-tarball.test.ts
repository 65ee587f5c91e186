/**
 * `@peg-oracle/client` as a user gets it: `npm pack -w packages/client`, the tarball installed into a brand-new project
 * in the system's temporary directory (outside this repository, so nothing resolves to its files), then used the ways
 * users use packages: plain `node` as an ES module and as CommonJS, `tsc` under NodeNext and Bundler resolution,
 * `tsx`, esbuild for a browser and for Node, and the `peg-verify` command through `npx`. The runtime checks run on
 * Node 20 (this process's) and on Node 22 and 24, whose binaries come from the npm registry (the `node` package), as
 * users are on current LTS lines even though the service itself is held to Node 20.
 *
 * The consumer programs talk to the real service (`peg-oracle serve`, a child process on embedded defaults) over REST
 * and the live stream, and verify replay bundles of a shipped scenario replayed by the real engine.
 */
import { execFile, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import { loadScenario } from "../../src/cli/scenario-files.ts";
import { generateSigningKey, signDelivery } from "../../src/delivery/index.ts";
import { replayBundle } from "../../src/methodology/index.ts";
import { replayScenario } from "../../src/streams/sources/scenario/replay.ts";
import { nodeBinary, NODE_LINES } from "../support/node-lines.ts";
import { freePort } from "../support/ports.ts";
import { spawnServe, type ServeProcess } from "../support/serve.ts";
import { CONSUMER_FILES } from "./consumer-programs.ts";

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const rootPkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { devDependencies: Record<string, string>; dependencies: Record<string, string> };

let work: string;
let app: string;
let tarball: string;
let service: ServeProcess;
let baseUrl: string;
let bundleServer: Server;
let receiptUrl: string;
/** Node binaries to run the consumer programs with: this one (20) and the registry's 22 and 24. */
const nodes: { line: string; bin: string }[] = [{ line: process.versions.node, bin: process.execPath }];

interface Ran {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a command to its end (never throws on a non-zero exit: the test reads the code). */
function sh(cmd: string, args: readonly string[], cwd: string, stdin = ""): Promise<Ran> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd, env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "/tmp" }, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    child.stdin.end(stdin);
    child.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

/** Replay bundles of a shipped scenario replayed by the real engine, and a webhook delivery the service's code signed. */
function writeFixtures(): { alertId: string; bundle: unknown } {
  const catalog = loadShippedCatalog();
  const receipt = replayScenario(loadScenario("usdc-march-2023"), { resolve: (s) => catalog.bySymbol(s), gitSha: "0123456789abcdef0123456789abcdef01234567" }).receipts[0]!;
  const bundle = JSON.parse(JSON.stringify(replayBundle(receipt))) as Record<string, Record<string, unknown>>;
  writeFileSync(join(app, "bundle.json"), JSON.stringify(bundle));
  const tampered = structuredClone(bundle);
  tampered["expected_computed"]!["final_state"] = tampered["expected_computed"]!["final_state"] === "PEGGED" ? "DEPEG" : "PEGGED";
  writeFileSync(join(app, "tampered.json"), JSON.stringify(tampered));
  writeFileSync(join(app, "not-json.json"), "{ nope");
  const now = Date.UTC(2026, 10, 26, 12, 0, 0);
  const key = generateSigningKey(now - 86_400_000);
  const body = JSON.stringify({ event: "peg.transition", asset: "USDC", from_state: "PEGGED", to_state: "DEPEG" });
  const headers = signDelivery({ eventId: randomUUID(), deliveryId: randomUUID(), attempt: 1, timestamp: Math.floor(now / 1000), body, key });
  const keys = [{ kid: key.kid, alg: "Ed25519", public_key: key.public_key, created_at: new Date(key.created_at).toISOString(), status: key.status }];
  writeFileSync(join(app, "webhook.json"), JSON.stringify({ headers, body, keys, now }));
  return { alertId: receipt.alert_id, bundle };
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "peg-client-package-"));
  app = join(work, "app");
  mkdirSync(app);
  const packed = await run("npm", ["pack", "-w", "packages/client", "--pack-destination", work, "--json"], { cwd: ROOT, maxBuffer: 16 << 20 });
  tarball = join(work, (JSON.parse(packed.stdout.slice(packed.stdout.indexOf("["))) as { filename: string }[])[0]!.filename);
  for (const [name, text] of Object.entries(CONSUMER_FILES)) writeFileSync(join(app, name), text);
  // NodeNext reads a .ts file of a package without "type" as CommonJS: the ES-module copies are .mts.
  writeFileSync(join(app, "typed.mts"), CONSUMER_FILES["typed.ts"]!);
  writeFileSync(join(app, "wrong.mts"), CONSUMER_FILES["wrong.ts"]!);
  const pin = (name: string): string => `${name}@${rootPkg.devDependencies[name] ?? rootPkg.dependencies[name]}`;
  const tools = ["typescript", "esbuild", "tsx", "ws", "@types/node"].map(pin);
  await run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", tarball, ...tools], { cwd: app, maxBuffer: 16 << 20 });
  for (const v of NODE_LINES) nodes.push({ line: v, bin: await nodeBinary(v) });

  const { alertId, bundle } = writeFixtures();
  // The alert's receipt URL, served as the API serves it (…/v1/audit/<id>/replay-bundle).
  bundleServer = createServer((req, res) => {
    const ok = req.url === `/v1/audit/${alertId}/replay-bundle`;
    res.writeHead(ok ? 200 : 404, { "content-type": "application/json" }).end(ok ? JSON.stringify(bundle) : '{"error":"not_found"}');
  });
  await new Promise<void>((r) => bundleServer.listen(0, "127.0.0.1", r));
  receiptUrl = `http://127.0.0.1:${(bundleServer.address() as AddressInfo).port}/v1/audit/${alertId}`;

  const port = await freePort();
  service = spawnServe({ DATA_DIR: join(work, "data"), PORT: String(port) });
  await service.started();
  baseUrl = `http://127.0.0.1:${port}`;
}, 600_000);

afterAll(async () => {
  service?.proc.kill("SIGTERM");
  await service?.exited;
  bundleServer?.close();
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});

describe("the tarball", () => {
  it("ships the built package and nothing that imports outside it", async () => {
    const { stdout } = await run("tar", ["-tzf", tarball]);
    const files = stdout.trim().split("\n").sort();
    for (const f of ["dist/index.js", "dist/index.cjs", "dist/index.d.ts", "dist/index.d.cts", "dist/peg-verify.js", "browser/peg-client.js"]) {
      expect(files).toContain(`package/${f}`);
    }
    expect(files.filter((f) => !/^package\/(dist|browser)\/|^package\/(package\.json|README\.md)$/.test(f))).toEqual([]);
    const installed = join(app, "node_modules", "@peg-oracle", "client");
    for (const f of ["dist/index.js", "dist/index.cjs", "dist/index.d.ts", "dist/peg-verify.js"]) {
      const text = readFileSync(join(installed, f), "utf8");
      expect(text, f).not.toMatch(/(from|require\()\s*["']\.\.\//);
      expect(text, f).not.toMatch(/from\s*["'][^"'\n]*\.ts["']/);
    }
  });
});

describe("plain node, on Node 20, 22 and 24", () => {
  it("imports as an ES module and requires as CommonJS: REST, the live stream, both verifiers", async () => {
    expect(nodes.map((n) => n.line.split(".")[0])).toEqual(["20", "22", "24"]);
    for (const { line, bin } of nodes) {
      for (const program of ["consumer.mjs", "consumer.cjs"]) {
        const r = await sh(bin, [program, baseUrl], app);
        expect(r.code, `${program} on Node ${line}: ${r.stderr}`).toBe(0);
        const out = JSON.parse(r.stdout.trim().split("\n").at(-1)!) as Record<string, unknown>;
        expect(out, `${program} on Node ${line}`).toMatchObject({
          node: line,
          notFound: "asset_not_found",
          snapshot: "snapshot",
          pass: "PASS",
          tampered: "FAIL",
          webhook: true,
          forged: "bad_signature",
        });
        expect(out["assets"]).toBeGreaterThan(0);
        expect(out["receiptSha256"]).toMatch(/^[0-9a-f]{64}$/);
      }
    }
  }, 240_000);
});

describe("the optional peer ws", () => {
  it("on Node 20 without it installed, a stream ends with websocket_unavailable", async () => {
    const ws = join(app, "node_modules", "ws");
    renameSync(ws, `${ws}.away`);
    try {
      const r = await sh(process.execPath, ["no-ws.mjs", baseUrl], app);
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout.trim())).toEqual({ code: "websocket_unavailable", fatal: true });
    } finally {
      renameSync(`${ws}.away`, ws);
    }
  });
});

describe("TypeScript and bundlers", () => {
  it("tsc type-checks a typed program under NodeNext and Bundler resolution, and refuses a wrong one", async () => {
    for (const config of ["tsconfig.nodenext.json", "tsconfig.bundler.json"]) {
      const r = await sh(process.execPath, ["node_modules/typescript/bin/tsc", "-p", config], app);
      expect(r.code, `${config}: ${r.stdout}${r.stderr}`).toBe(0);
    }
    const wrong = await sh(process.execPath, ["node_modules/typescript/bin/tsc", "-p", "tsconfig.wrong.json"], app);
    expect(wrong.code).not.toBe(0);
    expect(wrong.stdout).toMatch(/wrong\.mts\(5,\d+\): error TS2322/);
    expect(wrong.stdout).toMatch(/wrong\.mts\(6,\d+\): error TS2345/);
  }, 120_000);

  it("tsx runs the typed program", async () => {
    const r = await sh(process.execPath, ["node_modules/tsx/dist/cli.mjs", "typed.mts", baseUrl], app);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout.trim()) as { line: string; hash: string };
    expect(out.line).toMatch(/^USDC (PEGGED|DRIFT|DEPEG|CRITICAL|BLACK_SWAN|UNKNOWN|none) /);
    expect(out.hash).toMatch(/^[0-9a-f]{64}$/);
  }, 60_000);

  it("esbuild bundles it for a browser (no Node built-in, no ws) and for Node", async () => {
    const browser = await sh(join(app, "node_modules/.bin/esbuild"), ["page.js", "--bundle", "--platform=browser", "--format=esm", "--outfile=out/page.js"], app);
    expect(browser.code, browser.stderr).toBe(0);
    const text = readFileSync(join(app, "out", "page.js"), "utf8");
    expect(text).not.toMatch(/require\(["']ws["']\)|from\s*["']ws["']|node:/);
    const node = await sh(join(app, "node_modules/.bin/esbuild"), ["consumer.mjs", "--bundle", "--platform=node", "--format=esm", "--outfile=out/consumer.mjs"], app);
    expect(node.code, node.stderr).toBe(0);
    const ran = await sh(process.execPath, ["out/consumer.mjs", baseUrl], app);
    expect(ran.code, ran.stderr).toBe(0);
    expect(JSON.parse(ran.stdout.trim())).toMatchObject({ pass: "PASS", tampered: "FAIL", snapshot: "snapshot" });
  }, 120_000);
});

describe("npx peg-verify", () => {
  it("answers as peg-oracle verify does: PASS 0, FAIL 1, INVALID 2, from a file, stdin or the alert's URL", async () => {
    const npx = (args: string[], stdin = ""): Promise<Ran> => sh("npx", ["--no-install", "peg-verify", ...args], app, stdin);
    const pass = await npx(["bundle.json"]);
    expect(pass.code, pass.stderr).toBe(0);
    expect(pass.stdout).toMatch(/^PASS bundle\.json: hash and re-derived verdict match\n$/);
    const fail = await npx(["tampered.json"]);
    expect(fail.code).toBe(1);
    expect(fail.stderr).toMatch(/^FAIL tampered\.json: /);
    expect((await npx(["not-json.json"])).code).toBe(2);
    expect((await npx(["missing.json"])).code).toBe(2);
    expect((await npx([])).code).toBe(2);
    const stdin = await npx(["-", "--json"], readFileSync(join(app, "bundle.json"), "utf8"));
    expect(stdin.code).toBe(0);
    expect(JSON.parse(stdin.stdout)).toMatchObject({ bundle: "-", exit: 0, verdict: "PASS", receipt_sha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
    const url = await npx([receiptUrl]);
    expect(url.code, url.stderr).toBe(0);
    // The same answers as the repository's `peg-oracle verify`, line for line and code for code.
    const tamperedText = readFileSync(join(app, "tampered.json"), "utf8");
    const cases: { ref: string; stdin?: string }[] = [{ ref: "bundle.json" }, { ref: "tampered.json" }, { ref: "not-json.json" }, { ref: "-", stdin: tamperedText }, { ref: receiptUrl }];
    for (const { ref, stdin } of cases) {
      for (const flags of [[], ["--json"]]) {
        const ours = await npx([ref, ...flags], stdin);
        const cli = await sh(process.execPath, ["--import", "tsx", join(ROOT, "src/main.ts"), "verify", ref, ...flags], app, stdin);
        expect({ code: ours.code, stdout: ours.stdout, stderr: ours.stderr }, `${ref} ${flags.join(" ")}`).toEqual({ code: cli.code, stdout: cli.stdout, stderr: cli.stderr });
      }
    }
    // And on the other Node lines.
    for (const { line, bin } of nodes) {
      const r = await sh(bin, ["node_modules/@peg-oracle/client/dist/peg-verify.js", "tampered.json"], app);
      expect(r.code, `Node ${line}: ${r.stderr}`).toBe(1);
    }
  }, 180_000);
});
