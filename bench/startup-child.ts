/**
 * One service start for the start-up benchmark (`startup.bench.ts`): the real `startService` on a synthetic catalog
 * of `BENCH_ASSETS` active assets, configured by the ordinary environment. Prints JSON lines on stdout: `started` when
 * `startService` has returned, with the phase times (ms since this process started: catalog built, HTTP listening,
 * actors recovered, started), the recovery summary and RSS; then, in `BENCH_MODE=stop`, `stopped` with the shutdown
 * time once the parent writes a line on stdin. `BENCH_MODE=hold` keeps running until the parent kills it. The parent
 * measures what a client sees (the first HTTP answer, the first `/readyz` 200) itself.
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
out({
  msg: "started",
  catalogMs: catalogAt,
  httpMs: marks["http"],
  recoveredMs: marks["recovered"],
  startedMs: performance.now(),
  recovery,
  rss: process.memoryUsage().rss,
  actors: service.host.size,
});
if (process.env["BENCH_MODE"] === "hold") await new Promise(() => {});
await new Promise<void>((resolve) => process.stdin.once("data", () => resolve()));
const stopFrom = performance.now();
await service.stop();
out({ msg: "stopped", stopMs: performance.now() - stopFrom });
process.exit(0);
