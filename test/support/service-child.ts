/**
 * The real service in a child process, for fault tests that kill it with SIGKILL while it holds test-only delivery
 * settings (a test receiver's CA, names resolved to loopback) that the production CLI does not accept. Configuration
 * is the ordinary environment (parseConfig), plus:
 * - `TEST_WEBHOOK_CA_FILE`: PEM of an extra CA the webhook client trusts;
 * - `TEST_WEBHOOK_HOSTS`: comma-separated names that resolve to 127.0.0.1 (loopback destinations allowed).
 * Prints one JSON line `{"msg":"serving","port":N,"metrics_port":M}` on stderr once it serves; SIGTERM stops it in
 * order. On SIGUSR2 it collects garbage (when started with `--expose-gc`) and prints `{"msg":"memory","seq":n,...}`
 * with `process.memoryUsage()` in bytes, so a fault test can compare memory at the same point of GC. When the feed
 * ends (a scenario completes) it prints `{"msg":"feed ended"}` and keeps running.
 */
import { readFileSync } from "node:fs";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import { startService } from "../../src/cli/service.ts";
import { parseConfig } from "../../src/config.ts";

const hosts = new Set((process.env["TEST_WEBHOOK_HOSTS"] ?? "").split(",").filter((h) => h !== ""));
const caFile = process.env["TEST_WEBHOOK_CA_FILE"];
const config = parseConfig(process.env);
const line = (o: Record<string, unknown>): void => void process.stderr.write(`${JSON.stringify(o)}\n`);
let memorySeq = 0;
process.on("SIGUSR2", () => {
  const gc = (globalThis as { gc?: () => void }).gc;
  // Twice: the first pass may only free what finalizers then release.
  gc?.();
  gc?.();
  line({ msg: "memory", seq: ++memorySeq, gc: gc !== undefined, ...process.memoryUsage() });
});
const service = await startService(config, loadShippedCatalog(), {
  log: (level, msg, fields) => {
    if (level !== "debug") line({ level, msg, ...fields });
  },
  webhookTestOnly: {
    resolve: async (host) => (hosts.has(host) ? ["127.0.0.1"] : []),
    ...(caFile === undefined ? {} : { ca: readFileSync(caFile, "utf8") }),
    allowLoopback: true,
  },
  // A scenario feed's end is announced (the service keeps running: pending dwells still commit on its clock).
  onFeedEnd: (error) => line({ msg: "feed ended", ...(error === null ? {} : { error: String(error) }) }),
});
line({ msg: "serving", port: service.api.port, metrics_port: service.api.metricsPort });
process.once("SIGTERM", () => {
  void service.stop().then(() => process.exit(0));
});
