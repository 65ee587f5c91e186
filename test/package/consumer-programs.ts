/**
 * The programs a new user of `@peg-oracle/client` writes, as files of a fresh project (test/package/client-tarball.test.ts
 * installs the packed tarball beside them). Plain JavaScript for `node` (ESM and CommonJS), TypeScript for `tsc` and
 * `tsx`, and one entry for esbuild's browser bundle.
 */

/** The same checks as an ES module and as CommonJS: REST, the live stream (no WebSocket passed), both verifiers. */
const body = `
const base = process.argv[2];
const client = new PegClient({ baseUrl: base });
const list = await client.get("/v1/assets");
const usdc = list.data.find((a) => a.symbol === "USDC");
let notFound = null;
try {
  await client.get("/v1/assets/{symbol}", { params: { path: { symbol: "NOPE" } } });
} catch (e) {
  notFound = e instanceof ApiError ? e.code : String(e);
}
const stream = new PegStream({ url: base, assets: ["USDC"] });
let snapshot = null;
for await (const ev of stream) {
  snapshot = ev.type;
  break;
}
stream.close();
const pass = verifyReceipt(readFileSync("bundle.json", "utf8"));
const tampered = verifyReceipt(JSON.parse(readFileSync("tampered.json", "utf8")));
const w = JSON.parse(readFileSync("webhook.json", "utf8"));
const webhook = verifyWebhook(w.headers, w.body, w.keys, w.now);
const forged = verifyWebhook(w.headers, w.body.replace("DEPEG", "PEGGED"), w.keys, w.now);
const discount = usdc.discount === null ? null : parseDecimal(usdc.discount).toFixed();
console.log(JSON.stringify({
  node: process.versions.node, assets: list.data.length, notFound, snapshot, discount,
  pass: pass.verdict, receiptSha256: pass.receiptSha256, tampered: tampered.verdict,
  webhook: webhook.ok, forged: forged.ok ? "accepted" : forged.reason,
}));
`;

export const CONSUMER_FILES: Readonly<Record<string, string>> = {
  "package.json": JSON.stringify({ name: "peg-client-consumer", version: "1.0.0", private: true }, null, 2),
  "consumer.mjs": `import { readFileSync } from "node:fs";
import { ApiError, PegClient, PegStream, parseDecimal, verifyReceipt, verifyWebhook } from "@peg-oracle/client";
${body}`,
  "consumer.cjs": `const { readFileSync } = require("node:fs");
const { ApiError, PegClient, PegStream, parseDecimal, verifyReceipt, verifyWebhook } = require("@peg-oracle/client");
(async () => {
${body}
})().catch((e) => { console.error(e); process.exit(1); });`,

  /** Node 20 without the optional `ws`: the stream says so, as a fatal error with its code. */
  "no-ws.mjs": `import { PegStream } from "@peg-oracle/client";
const stream = new PegStream({ url: process.argv[2], assets: ["USDC"] });
try {
  for await (const ev of stream) console.log(ev.type);
  console.log("ended without an error");
} catch (e) {
  console.log(JSON.stringify({ code: e.code, fatal: e.fatal }));
}
`,
  /** A typed program: compiles under both resolutions, and runs under tsx. */
  "typed.ts": `import { ApiError, PegClient, PegStream, verifyReceipt, parseDecimal, type Schemas } from "@peg-oracle/client";
import { readFileSync } from "node:fs";

export async function cardLine(client: PegClient, symbol: string): Promise<string> {
  const card: Schemas["AssetCard"] = await client.get("/v1/assets/{symbol}", { params: { path: { symbol } } });
  const state: "PEGGED" | "DRIFT" | "DEPEG" | "CRITICAL" | "BLACK_SWAN" | "UNKNOWN" | null = card.state;
  const bps = card.discount === null ? null : parseDecimal(card.discount).times(10_000).toFixed(2);
  return \`\${card.symbol} \${state ?? "none"} \${bps ?? "-"}\`;
}

export function receiptHash(text: string): string | null {
  const v = verifyReceipt(text);
  if (!v.ok) return null;
  const hash: string = v.receiptSha256;   // narrowed by outcome: a PASS has its hash
  return hash;
}

/** Not run: the SDK's helpers as typed (pagination, retries, abort, live subscription changes). */
export async function helpers(client: PegClient, stream: PegStream, signal: AbortSignal): Promise<string[]> {
  const out: string[] = [];
  for await (const a of client.alerts({}, { max: 10, signal })) out.push(a.asset);
  for await (const r of client.auditLog({}, { pageSize: 50 })) out.push(r.id);
  await client.get("/v1/assets", { retry: false, signal });
  await stream.connected({ signal });
  await stream.subscribe(["USDT"]);
  await stream.unsubscribe(["USDC"]);
  stream.on("reconnecting", (r) => out.push(String(r.attempt + r.delayMs)));
  return out;
}

export function codeOf(e: unknown): string {
  return e instanceof ApiError ? e.code : "other";
}

const client = new PegClient({ baseUrl: process.argv[2] ?? "http://127.0.0.1:8080" });
const line = await cardLine(client, "USDC");
console.log(JSON.stringify({ line, hash: receiptHash(readFileSync("bundle.json", "utf8")) }));
`,
  /** What the types must refuse: a state is not a number, a path must exist. */
  "wrong.ts": `import { PegClient } from "@peg-oracle/client";
const client = new PegClient({ baseUrl: "http://127.0.0.1:8080" });
export async function wrong(): Promise<number> {
  const card = await client.get("/v1/assets/{symbol}", { params: { path: { symbol: "USDC" } } });
  const n: number = card.state;
  await client.get("/v1/no-such-route", {});
  return n;
}
`,
  "tsconfig.nodenext.json": JSON.stringify({
    compilerOptions: { target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", strict: true, noEmit: true, types: ["node"], skipLibCheck: false },
    files: ["typed.mts"],
  }),
  "tsconfig.bundler.json": JSON.stringify({
    compilerOptions: { target: "ES2022", module: "ESNext", moduleResolution: "Bundler", strict: true, noEmit: true, types: ["node"], skipLibCheck: false },
    files: ["typed.ts"],
  }),
  "tsconfig.wrong.json": JSON.stringify({
    compilerOptions: { target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", strict: true, noEmit: true, types: ["node"] },
    files: ["wrong.mts"],
  }),
  /** A page's script, bundled by esbuild for browsers. */
  "page.js": `import { PegStream, verifyReceipt } from "@peg-oracle/client";
window.pegCheck = (bundle) => verifyReceipt(bundle).verdict;
window.pegStream = (url) => new PegStream({ url, assets: ["*"] });
`,
};
