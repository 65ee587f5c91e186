/**
 * HTTP benchmark (npm run bench:http): `wrk` against GET /v1/assets/USDC/state, GET /v1/assets and GET /v1/peg/feed,
 * served by the production transport (uWebSockets.js, src/http/uws-adapter.ts) and, in the same run, by a Fastify 5
 * server (bench/fastify-server.ts) in front of the very same pipeline. Reports requests/s and p99 latency for both and
 * rewrites the "http" section of docs/benchmarks.md.
 *
 * Topology: this process orchestrates and loads nothing itself while wrk runs. Each server runs in its own child process (this file with
 * `serve <uws|fastify>`, started with the same Node flags), both over an identical stack: the in-memory read model
 * of the route tests (test/http/fixtures.ts, so the comparison is about HTTP, not the database), `publicRoutes`, the
 * Router and `createPipeline` (request ids, CORS, rate limiting at 1e9/min so it never refuses, routing, errors).
 * The servers take turns: only the one under test receives traffic while `wrk -t1` (one thread) loads it, so on a
 * 2-core machine the server has one core and wrk the other. Per endpoint and server: 3 s warm-up, then the measured
 * `wrk -t1 -c64 -d10s --latency`; the servers' order alternates per endpoint to spread drift. Before loading, both
 * answers are fetched once and must be 200 with the same JSON (generated_at removed). Afterwards, with the servers
 * stopped, this process times the shared work (pipeline + handler + serialisation) in a loop to bound the ratio any
 * transport could reach.
 *
 * Env: BENCH_SECONDS (default 10), BENCH_WARMUP (3), BENCH_CONNECTIONS (64), BENCH_CPU_PROF=dir (profile the uWS
 * child with --cpu-prof into dir), BENCH_PIN=0 (do not pin the server and wrk to separate cores).
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { cpus } from "node:os";
import { fileURLToPath } from "node:url";
import { machineDescription, writeSection } from "./report.ts";

type Kind = "uws" | "fastify";

/**
 * CPU pinning: on a 2-core machine, left to the scheduler, the server and wrk sometimes share one core and the
 * numbers swing by 2x from run to run. With `taskset` (util-linux) and at least two cores, the server runs on core 0
 * and wrk on core 1, every time. BENCH_PIN=0 turns it off.
 */
const PIN = process.env["BENCH_PIN"] !== "0" && cpus().length >= 2 && spawnSync("taskset", ["-c", "0", "true"]).status === 0;
const pinned = (cpu: number, cmd: string, args: readonly string[]): [string, string[]] =>
  PIN ? ["taskset", ["-c", String(cpu), cmd, ...args]] : [cmd, [...args]];
const KINDS: readonly Kind[] = ["uws", "fastify"];
const HOST = "127.0.0.1";

// ---------------------------------------------------------------------------------------------------------------
// Child: one server.

/** The stack both servers serve: fake read model, public routes, Router, pipeline. */
async function buildHandle() {
  const { systemClock } = await import("../src/clock.ts");
  const { createPipeline } = await import("../src/http/pipeline.ts");
  const { Router } = await import("../src/http/router.ts");
  const { publicRoutes } = await import("../src/http/routes/index.ts");
  const { fakeReadModel } = await import("../test/http/fixtures.ts");
  const { withReadCaches } = await import("../src/http/server.ts");
  // The same read caches as the service (src/http/server.ts), so both servers run the production stack.
  const routes = publicRoutes(withReadCaches(fakeReadModel()));
  return createPipeline({ router: new Router(routes), clock: systemClock, ratePerMinute: 1e9, corsOrigins: [] });
}

async function serve(kind: Kind): Promise<void> {
  const handle = await buildHandle();
  const onError = (e: unknown) => console.error(`${kind}:`, e);
  let close: () => unknown;
  let port: number;
  if (kind === "uws") {
    const { serveUws } = await import("../src/http/uws-adapter.ts");
    const s = await serveUws(handle, { host: HOST, port: 0, trustProxy: false, onError });
    port = s.port;
    close = () => s.close();
  } else {
    const { serveFastify } = await import("./fastify-server.ts");
    const s = await serveFastify(handle, { host: HOST, port: 0, onError });
    port = s.port;
    close = () => s.close();
  }
  process.on("disconnect", () => process.exit(0)); // the benchmark died: do not linger
  process.on("message", (m) => {
    if (m !== "stop") return;
    void Promise.resolve(close()).finally(() => process.exit(0)); // a clean exit writes the --cpu-prof profile
  });
  process.send?.({ port });
}

// ---------------------------------------------------------------------------------------------------------------
// Parent: orchestration.

interface Server {
  readonly kind: Kind;
  readonly port: number;
  readonly child: ChildProcess;
}

function startServer(kind: Kind, profileDir: string | undefined): Promise<Server> {
  const self = fileURLToPath(import.meta.url);
  const flags = kind === "uws" && profileDir !== undefined ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] : [];
  const [cmd, args] = pinned(0, process.execPath, [...process.execArgv, ...flags, self, "serve", kind]);
  const child = spawn(cmd, args, {
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${kind} server did not start within 60 s`)), 60_000);
    child.once("exit", (code) => reject(new Error(`${kind} server exited with ${code} before listening`)));
    child.once("message", (m) => {
      clearTimeout(timer);
      resolve({ kind, port: (m as { port: number }).port, child });
    });
  });
}

function stopServer(s: Server): Promise<void> {
  return new Promise((resolve) => {
    if (s.child.exitCode !== null) return resolve();
    const timer = setTimeout(() => s.child.kill("SIGKILL"), 10_000);
    s.child.removeAllListeners("exit");
    s.child.once("exit", () => {
      clearTimeout(timer);
      resolve();
    });
    s.child.send("stop");
  });
}

/** Deep copy of a JSON value without any `generated_at` key (the only field allowed to differ between servers). */
function withoutGeneratedAt(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withoutGeneratedAt);
  if (v !== null && typeof v === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) if (k !== "generated_at") out[k] = withoutGeneratedAt(x);
    return out;
  }
  return v;
}

interface Fetched {
  readonly status: number;
  readonly contentType: string | null;
  readonly body: string;
}

async function fetchOnce(port: number, path: string): Promise<Fetched> {
  const r = await fetch(`http://${HOST}:${port}${path}`);
  return { status: r.status, contentType: r.headers.get("content-type"), body: await r.text() };
}

interface WrkResult {
  readonly requestsPerSec: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly requests: number;
  readonly bytesPerResponse: number;
  readonly errors: string | null;
}

function toMs(value: string, unit: string): number {
  const v = Number(value);
  if (unit === "us") return v / 1000;
  if (unit === "ms") return v;
  if (unit === "s") return v * 1000;
  if (unit === "m") return v * 60_000;
  throw new Error(`unknown wrk time unit ${unit}`);
}

function toBytes(value: string, unit: string): number {
  const scale: Record<string, number> = { B: 1, KB: 1024, MB: 1024 ** 2, GB: 1024 ** 3 };
  const s = scale[unit];
  if (s === undefined) throw new Error(`unknown wrk size unit ${unit}`);
  return Number(value) * s;
}

function parseWrk(out: string): WrkResult {
  const rps = /Requests\/sec:\s+([\d.]+)/.exec(out);
  const p50 = /^\s+50%\s+([\d.]+)(us|ms|s|m)\s*$/m.exec(out);
  const p99 = /^\s+99%\s+([\d.]+)(us|ms|s|m)\s*$/m.exec(out);
  const total = /(\d+) requests in/.exec(out);
  const transfer = /Transfer\/sec:\s+([\d.]+)(B|KB|MB|GB)/.exec(out);
  if (rps === null || p50 === null || p99 === null || total === null || transfer === null) {
    throw new Error(`cannot parse wrk output:\n${out}`);
  }
  const errors = [/Socket errors:.*$/m.exec(out)?.[0], /Non-2xx or 3xx responses:.*$/m.exec(out)?.[0]].filter((x) => x !== undefined);
  const requestsPerSec = Number(rps[1]);
  return {
    requestsPerSec,
    p50Ms: toMs(p50[1]!, p50[2]!),
    p99Ms: toMs(p99[1]!, p99[2]!),
    requests: Number(total[1]),
    bytesPerResponse: toBytes(transfer[1]!, transfer[2]!) / requestsPerSec,
    errors: errors.length === 0 ? null : errors.join("; "),
  };
}

/** The run with the median requests/s (rounds are odd by default, so it is one real run, not an average). */
function medianRun(runs: readonly WrkResult[]): WrkResult {
  const sorted = [...runs].sort((a, b) => a.requestsPerSec - b.requestsPerSec);
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}

function wrk(port: number, path: string, seconds: number, connections: number): Promise<string> {
  const args = ["-t1", `-c${connections}`, `-d${seconds}s`, "--latency", `http://${HOST}:${port}${path}`];
  return new Promise((resolve, reject) => {
    const [cmd, argv] = pinned(1, "wrk", args);
    const child = spawn(cmd, argv, { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
    child.once("error", reject);
    child.once("exit", (code) => (code === 0 ? resolve(out) : reject(new Error(`wrk ${args.join(" ")} exited with ${code}:\n${out}`))));
  });
}

/**
 * Microseconds per request of the work both servers share, measured in this process with no sockets: the pipeline
 * and the route handler (`await handle(raw)`), then the body as the transports produce it (`JSON.stringify`) and its
 * UTF-8 encoding. What a server spends beyond this per request is its transport (parsing, copying the request,
 * writing headers and body, the socket syscalls).
 */
async function sharedCostUs(paths: readonly string[], seconds: number): Promise<Map<string, number>> {
  const handle = await buildHandle();
  const out = new Map<string, number>();
  let sink = 0;
  for (const path of paths) {
    const once = async () => {
      const raw = { method: "GET", path, query: new URLSearchParams(""), headers: { host: `${HOST}:8080` }, ip: HOST, body: null };
      const r = await handle(raw);
      const body = r.text ?? JSON.stringify(r.json ?? null);
      sink += typeof body === "string" ? Buffer.from(body, "utf8").byteLength : body.byteLength;
    };
    const until = (ms: number) => performance.now() + ms;
    for (const end = until(500); performance.now() < end; ) for (let i = 0; i < 100; i++) await once();
    let n = 0;
    const t0 = performance.now();
    for (const end = until(seconds * 1000); performance.now() < end; n += 100) for (let i = 0; i < 100; i++) await once();
    out.set(path, ((performance.now() - t0) * 1000) / n);
  }
  if (sink === 0) throw new Error("empty bodies");
  return out;
}

async function main(): Promise<void> {
  if (spawnSync("which", ["wrk"], { stdio: "ignore" }).status !== 0) {
    console.error("wrk is not installed; install it with:\n\n  apt-get install -y wrk\n\n(run `apt-get update` first on a fresh machine), then rerun npm run bench:http");
    process.exit(1);
  }
  const wrkVersion = (spawnSync("wrk", ["--version"], { encoding: "utf8" }).stdout ?? "").split("\n")[0]?.split(" [")[0] ?? "wrk";
  const SECONDS = Number(process.env["BENCH_SECONDS"] ?? "10");
  const WARMUP = Number(process.env["BENCH_WARMUP"] ?? "3");
  const CONNECTIONS = Number(process.env["BENCH_CONNECTIONS"] ?? "64");
  const ROUNDS = Math.max(1, Number(process.env["BENCH_ROUNDS"] ?? "3"));
  const profileDir = process.env["BENCH_CPU_PROF"];
  const ENDPOINTS = ["/v1/assets/USDC/state", "/v1/assets", "/v1/peg/feed"] as const;

  const servers = new Map<Kind, Server>();
  for (const kind of KINDS) servers.set(kind, await startServer(kind, profileDir));
  const server = (k: Kind) => servers.get(k)!;
  const { version: fastifyVersion } = JSON.parse(readFileSync(new URL("../node_modules/fastify/package.json", import.meta.url), "utf8")) as { version: string };

  interface Row {
    readonly path: string;
    readonly bodyBytes: number;
    readonly identicalBytes: boolean;
    readonly order: readonly Kind[];
    readonly results: Map<Kind, WrkResult>;
    readonly runs: Map<Kind, WrkResult[]>;
  }
  const rows: Row[] = [];
  try {
    for (const [i, path] of ENDPOINTS.entries()) {
      // Same answer from both servers before any load.
      const got = new Map<Kind, Fetched>();
      for (const kind of KINDS) got.set(kind, await fetchOnce(server(kind).port, path));
      for (const [kind, f] of got) {
        if (f.status !== 200) throw new Error(`${kind} answered ${f.status} to GET ${path}: ${f.body.slice(0, 300)}`);
      }
      const [u, f] = [got.get("uws")!, got.get("fastify")!];
      const same = JSON.stringify(withoutGeneratedAt(JSON.parse(u.body))) === JSON.stringify(withoutGeneratedAt(JSON.parse(f.body)));
      if (!same) throw new Error(`uws and fastify serve different JSON for GET ${path} (generated_at aside)`);
      if (u.contentType !== f.contentType) throw new Error(`content-type differs for GET ${path}: uws ${u.contentType}, fastify ${f.contentType}`);

      // Rounds interleave the servers (order alternating), so drift in the machine's speed hits both alike; each
      // server's figures are the median round (by requests/s).
      const runs = new Map<Kind, WrkResult[]>(KINDS.map((k) => [k, []]));
      const order: Kind[] = i % 2 === 0 ? ["uws", "fastify"] : ["fastify", "uws"];
      for (let round = 0; round < ROUNDS; round++) {
        for (const kind of round % 2 === 0 ? order : [...order].reverse()) {
          const port = server(kind).port;
          if (WARMUP > 0 && round === 0) await wrk(port, path, WARMUP, CONNECTIONS);
          const r = parseWrk(await wrk(port, path, SECONDS, CONNECTIONS));
          if (r.errors !== null) throw new Error(`${kind} GET ${path}: ${r.errors}`);
          runs.get(kind)!.push(r);
          console.log(`${path.padEnd(24)} ${kind.padEnd(8)} round ${round + 1}  ${r.requestsPerSec.toFixed(0).padStart(8)} req/s  p50 ${r.p50Ms.toFixed(2)} ms  p99 ${r.p99Ms.toFixed(2)} ms`);
        }
      }
      const results = new Map<Kind, WrkResult>(KINDS.map((k) => [k, medianRun(runs.get(k)!)]));
      rows.push({ path, bodyBytes: Buffer.byteLength(u.body), identicalBytes: u.body === f.body, order, results, runs });
    }
  } finally {
    for (const s of servers.values()) await stopServer(s);
  }

  // With the servers stopped: what the shared pipeline + handler + serialisation costs per request.
  const shared = await sharedCostUs(ENDPOINTS, 2);

  const fmt = (x: number) => Math.round(x).toLocaleString("en-US");
  const ms = (x: number) => (x < 10 ? x.toFixed(2) : x.toFixed(1));
  const table = rows.map((r) => {
    const u = r.results.get("uws")!;
    const f = r.results.get("fastify")!;
    const ratio = u.requestsPerSec / f.requestsPerSec;
    // The server process is saturated (one core), so 1/rps is its time per request.
    const uUs = 1e6 / u.requestsPerSec;
    const fUs = 1e6 / f.requestsPerSec;
    const sUs = shared.get(r.path)!;
    return { path: r.path, u, f, ratio, rpsOk: ratio >= 2.5, p99Ok: u.p99Ms <= f.p99Ms, row: r, uUs, fUs, sUs, ceiling: fUs / sUs };
  });
  console.log(JSON.stringify(table.map((t) => ({ path: t.path, uws: t.u, fastify: t.f, ratio: t.ratio, sharedUs: t.sUs }))));

  const verdict = (t: (typeof table)[number]) => {
    const parts: string[] = [];
    parts.push(
      t.rpsOk
        ? `requests/s target met (${t.ratio.toFixed(2)}x)`
        : `requests/s target **missed**: ${t.ratio.toFixed(2)}x, ${((1 - t.ratio / 2.5) * 100).toFixed(0)} % below the 2.5x target` +
            (t.ceiling < 2.5 ? ` (out of reach for any transport here: the shared work alone caps the ratio near ${t.ceiling.toFixed(2)}x)` : ""),
    );
    parts.push(t.p99Ok ? `p99 target met (${ms(t.u.p99Ms)} vs ${ms(t.f.p99Ms)} ms)` : `p99 target **missed** by ${ms(t.u.p99Ms - t.f.p99Ms)} ms`);
    return `- \`GET ${t.path}\`: ${parts.join("; ")}.`;
  };
  const allOk = table.every((t) => t.rpsOk && t.p99Ok);
  const machine = machineDescription();
  const us = (x: number) => x.toFixed(0);
  const rounds = (rs: readonly WrkResult[]) => rs.map((r) => fmt(r.requestsPerSec)).join(" / ");
  const section = `<!-- http:start -->
## HTTP: uWebSockets.js vs Fastify 5, same pipeline

Command: \`npm run bench:http\` (\`node --max-semi-space-size=64 --import tsx bench/http.bench.ts\`; \`BENCH_SECONDS\`, \`BENCH_WARMUP\`, \`BENCH_CONNECTIONS\` to change).
Machine: ${machine}; ${wrkVersion}; Fastify ${fastifyVersion}. Measured ${new Date().toISOString().slice(0, 10)}.

Topology: each server runs in its own Node process (same flags as the benchmark: \`--max-semi-space-size=64\`) on
${HOST}; they take turns, so the one under test has one core and \`wrk\` (one thread) the other${PIN ? " (pinned with `taskset`: server on core 0, wrk on core 1; unpinned, the scheduler sometimes puts both on one core and runs differ by 2x)" : " (not pinned: taskset unavailable or BENCH_PIN=0)"}. Both serve the same
stack: the in-memory read model of the route tests (\`test/http/fixtures.ts\`, so no database time is measured),
\`publicRoutes\`, the Router and \`createPipeline\` (request id, CORS, rate limiter at 1e9/min, routing, error shape).
uWS is the production adapter (\`serveUws\`); Fastify (\`bench/fastify-server.ts\`, logger off) has one catch-all
route that builds the same \`RawRequest\` and replies with the pipeline's status, headers and body serialised the
same way. Before loading, each endpoint is fetched once from both: both 200 with the same JSON (generated_at
removed)${rows.every((r) => r.identicalBytes) ? "; the bodies were in fact byte-identical" : ""}.

wrk settings: per endpoint and server, ${WARMUP} s warm-up, then ${ROUNDS} rounds of \`wrk -t1 -c${CONNECTIONS} -d${SECONDS}s --latency\`
in which the two servers take turns (order reversed every round); each server's row is its median round by
requests/s, and the ratio is the ratio of the medians. Keep-alive connections, no pipelining.

| endpoint | body | uWS req/s | Fastify req/s | ratio | uWS p99 | Fastify p99 | uWS rounds | Fastify rounds |
|---|---:|---:|---:|---:|---:|---:|---|---|
${table.map((t) => `| \`GET ${t.path}\` | ${fmt(t.row.bodyBytes)} B | ${fmt(t.u.requestsPerSec)} | ${fmt(t.f.requestsPerSec)} | ${t.ratio.toFixed(2)}x | ${ms(t.u.p99Ms)} ms | ${ms(t.f.p99Ms)} ms | ${rounds(t.row.runs.get("uws")!)} | ${rounds(t.row.runs.get("fastify")!)} |`).join("\n")}

Targets (issue): at least 2.5x Fastify's requests/s on each endpoint, and p99 no higher than Fastify's.
${allOk ? "**All targets met in this run.**" : "**Not all targets met in this run:**"}

${table.map(verdict).join("\n")}

Time per request (the server's core is saturated, so µs/request = 10^6 / req/s). "Shared" is the work both servers
do identically: pipeline + route handler, \`JSON.stringify\` of the body and its UTF-8 encoding, measured in the
benchmark process without sockets, hot in a loop: inside a server the same code costs as much or more, so treat it
as a lower bound (it varies by +-20 % between runs). "Ceiling" is Fastify's time over the shared time: roughly the
most any transport could reach over Fastify with these handlers (a transport costing nothing).

| endpoint | shared (at least) | uWS per request | Fastify per request | ceiling (at most) |
|---|---:|---:|---:|---:|
${table.map((t) => `| \`GET ${t.path}\` | ${us(t.sUs)} µs | ${us(t.uUs)} µs | ${us(t.fUs)} µs | ${t.ceiling.toFixed(2)}x |`).join("\n")}
<!-- http:end -->`;
  if (profileDir !== undefined) {
    console.log(`profiled run (uWS child under --cpu-prof, profiles in ${profileDir}): docs/benchmarks.md left as it was`);
    return;
  }
  writeSection("http", section);
}

if (process.argv[2] === "serve") {
  const kind = process.argv[3];
  if (kind !== "uws" && kind !== "fastify") throw new Error(`serve <uws|fastify>, not ${String(kind)}`);
  await serve(kind);
} else {
  await main();
  process.exit(0);
}
