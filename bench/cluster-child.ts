/**
 * One process of the cluster benchmark's deployment (`cluster.bench.ts`): what `peg-oracle serve` runs for its role
 * (`startRoleService`, ROLE=engine or ROLE=api from the ordinary environment, JSON log lines on stderr as `serve`
 * writes them, its `serving` line naming the engine id or the port), on the synthetic catalog of `BENCH_ASSETS` active
 * assets (`synthetic.ts`): `src/main.ts` only loads the shipped 69, and every process of one deployment must see the
 * same catalog (the partitions are a hash of the mints). SIGTERM or SIGINT runs the ordered stop.
 */
import { startRoleService } from "../src/cli/service.ts";
import { featureNotices, parseConfig } from "../src/config.ts";
import { stderrLog } from "./bench-env.ts";
import { syntheticCatalog } from "./synthetic.ts";

const config = parseConfig(process.env);
const log = stderrLog(config.logLevel);

let stopRequested: (() => void) | null = null;
const stopSignal = new Promise<void>((resolve) => (stopRequested = resolve));
process.on("SIGTERM", () => stopRequested?.());
process.on("SIGINT", () => stopRequested?.());

const catalog = syntheticCatalog(Number(process.env["BENCH_ASSETS"] ?? "10000"));
for (const note of featureNotices(config)) log("warn", note);
// As `serve` does: a start that fails is logged and exits 1. Awaited bare at the top level, a rejection printed only
// Node's report of an uncaught error, whose stack (a NATS TimeoutError's, built in nats-core's timer) names no caller:
// it read as an unhandled rejection (issue 26, (d)).
let service: Awaited<ReturnType<typeof startRoleService>>;
try {
  service = await startRoleService(config, catalog, { log });
} catch (e) {
  log("error", "the service could not start", { error: e instanceof Error ? e.message : String(e) });
  process.exit(1);
}
log("info", "serving", {
  role: service.role,
  assets: service.partition === null ? service.host.size : service.partition.heldAssets(),
  ...(service.partition === null ? {} : { engine: service.partition.self }),
  ...(service.api === null ? {} : { port: service.api.port }),
});

await stopSignal;
let code = 0;
try {
  await service.stop();
  log("info", "stopped");
} catch (e) {
  log("error", "shutdown finished with errors", { error: e instanceof Error ? e.message : String(e) });
  code = 1;
}
process.exit(code);
