/**
 * `npm run bench`: every benchmark, one after the other in one run, so that each comparison (and every number in
 * docs/benchmarks.md) comes from the same machine state. Each benchmark rewrites its own section; this script adds
 * the `run` section at the top: the commit, when each benchmark ran, how long it took and the load average around
 * it. `BENCH_ONLY=engine,http` runs a subset (the run section then says so). Exits non-zero if any benchmark fails.
 */
import { spawnSync } from "node:child_process";
import { loadAverage, machineDescription, today, writeSection } from "./report.ts";

const ALL = ["engine", "pipeline", "http", "ws", "memory", "startup"] as const;
const only = process.env["BENCH_ONLY"]?.split(",").map((s) => s.trim()).filter((s) => s !== "");
const names = only === undefined ? [...ALL] : ALL.filter((n) => only.includes(n));
if (only !== undefined && names.length !== only.length) {
  console.error(`BENCH_ONLY: unknown benchmark in "${only.join(",")}" (known: ${ALL.join(", ")})`);
  process.exit(2);
}

const git = (args: string[]): string => spawnSync("git", args, { encoding: "utf8" }).stdout.trim();
const commit = git(["rev-parse", "--short", "HEAD"]) || "unknown";
const dirty = git(["status", "--porcelain", "--", "src", "bench"]) !== "";

interface Ran {
  readonly name: string;
  readonly startedAt: Date;
  readonly seconds: number;
  readonly loadBefore: string;
  readonly loadAfter: string;
  readonly status: number | null;
}

const runStart = new Date();
const ran: Ran[] = [];
for (const name of names) {
  const loadBefore = loadAverage();
  const startedAt = new Date();
  console.log(`\n=== npm run bench:${name} (load average ${loadBefore}) ===`);
  const r = spawnSync("npm", ["run", "--silent", `bench:${name}`], { stdio: "inherit" });
  ran.push({ name, startedAt, seconds: (Date.now() - startedAt.getTime()) / 1000, loadBefore, loadAfter: loadAverage(), status: r.status });
  if (r.status !== 0) console.error(`bench:${name} failed (exit ${String(r.status ?? r.signal)})`);
}

const hhmm = (d: Date): string => d.toISOString().slice(11, 16);
const rows = ran.map((r) => `| \`npm run bench:${r.name}\` | ${hhmm(r.startedAt)} | ${Math.round(r.seconds)} s | ${r.loadBefore} | ${r.loadAfter} | ${r.status === 0 ? "ok" : `**failed** (${String(r.status)})`} |`);
const total = Math.round((Date.now() - runStart.getTime()) / 1000);
const section = `<!-- run:start -->
## This run

Command: \`npm run bench\` (\`node --import tsx bench/all.ts\`${only === undefined ? "" : `, \`BENCH_ONLY=${names.join(",")}\``}): ${
  only === undefined ? "every benchmark below, one after the other," : `only ${names.join(", ")},`
} in one run of ${total} s starting ${runStart.toISOString().slice(0, 16).replace("T", " ")} UTC on commit \`${commit}\`${dirty ? " (with uncommitted changes under src/ or bench/)" : ""}.
Machine: ${machineDescription()}. Measured ${today()}. Nothing else was meant to run on the machine; the load averages
(1, 5 and 15 minutes) before and after each benchmark show what else did.

| benchmark | started (UTC) | took | load before | load after | result |
|---|---:|---:|---|---|---|
${rows.join("\n")}
<!-- run:end -->`;
writeSection("run", section, { first: true });
process.exit(ran.every((r) => r.status === 0) ? 0 : 1);
