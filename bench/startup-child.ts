/**
 * One service start for the start-up benchmark (`startup.bench.ts`): the real `startService` on a synthetic catalog
 * of `BENCH_ASSETS` active assets, configured by the ordinary environment. Prints JSON lines on stdout: `serving`
 * with the phase times (ms since this process started: catalog built, actors recovered, HTTP listening, serving,
 * `/readyz` 200, or the last reason it gave within 120 s) and the recovery summary, then, in `BENCH_MODE=stop`, `stopped` with the shutdown time after
 * `BENCH_HOLD_MS` of running. `BENCH_MODE=hold` keeps running until the parent kills it.
 */
import { performance } from "node:perf_hooks";
import { startService } from "../src/cli/service.ts";
import { parseConfig } from "../src/config.ts";
import { syntheticCatalog } from "./synthetic.ts";

const out = (o: Record<string, unknown>): void => void process.stdout.write(`${JSON.stringify(o)}\n`);
const assets = Number(process.env["BENCH_ASSETS"] ?? "10000");
const config = parseConfig(process.env);
const catalog = syntheticCatalog(assets);
const catalogAt = performance.now();
const marks: Record<string, number> = {};
let recovery: Record<string, unknown> = {};
const service = await startService(config, catalog, {
  log: (level, msg, fields) => {
    if (msg === "recovered actors") {
      marks["recovered"] = performance.now();
      recovery = fields ?? {};
    }
    if (msg === "http listening") marks["http"] = performance.now();
    if (level === "error") process.stderr.write(`${JSON.stringify({ level, msg, ...fields })}\n`);
  },
});
const servingAt = performance.now();
out({ msg: "listening" });
let readyAt = NaN;
let notReady = "";
for (const deadline = Date.now() + 120_000; Date.now() < deadline; ) {
  const r = await fetch(`http://127.0.0.1:${service.api.port}/readyz`).catch(() => null);
  if (r?.status === 200) {
    readyAt = performance.now();
    break;
  }
  if (r !== null) notReady = ((await r.json()) as { message?: string }).message ?? `status ${r.status}`;
  await new Promise((res) => setTimeout(res, 50));
}
out({
  msg: "serving",
  catalogMs: catalogAt,
  recoveredMs: marks["recovered"],
  httpMs: marks["http"],
  servingMs: servingAt,
  readyMs: readyAt,
  // The last reason /readyz gave while not ready (empty if it never answered non-200).
  notReady,
  recovery,
  rss: process.memoryUsage().rss,
  actors: service.host.size,
});
await new Promise((res) => setTimeout(res, Number(process.env["BENCH_HOLD_MS"] ?? "3000")));
if (process.env["BENCH_MODE"] === "hold") await new Promise(() => {});
const stopFrom = performance.now();
await service.stop();
out({ msg: "stopped", stopMs: performance.now() - stopFrom });
process.exit(0);
