/**
 * The service under the throughput benchmark (`throughput.bench.ts`): what `peg-oracle serve` runs (the real
 * `startService`, ROLE=all, configured by the ordinary environment, JSON log lines on stderr as `serve` writes them,
 * its per-minute `stats` line), on a synthetic catalog of `BENCH_ASSETS` active assets (`synthetic.ts`): `src/main.ts`
 * only ever loads the shipped catalog of 69.
 *
 * Talks to the benchmark on stdout, one JSON line per event with a `bench` key:
 * - `serving`: ports, pid, start-up times, when `startService` returned (intake is open from then on);
 * - `intake_closed` (after SIGUSR2): intake is closed at a tick boundary without stopping anything else. Every actor
 *   is released (`ActorHost.release`, the scale-out hand-back path): later samples are answered `released` (counted
 *   as such in `peg_oracle_samples_total`), no actor evaluates or publishes again, while the engine link, the
 *   projectors and the API keep running, so the benchmark can watch the pipeline drain what was offered before.
 *   Carries the engine's own counts at that instant: published recomputes by trigger, transitions, the link's stats;
 * - `stopped` (after SIGTERM or SIGINT): the ordered stop's duration and the final link and projector counts.
 */
import { performance } from "node:perf_hooks";
import { startService } from "../src/cli/service.ts";
import { featureNotices, parseConfig } from "../src/config.ts";
import { stderrLog } from "./bench-env.ts";
import { syntheticCatalog } from "./synthetic.ts";

const out = (o: Record<string, unknown>): void => void process.stdout.write(`${JSON.stringify({ ...o, at: Date.now() })}\n`);

const config = parseConfig(process.env);
const log = stderrLog(config.logLevel);

// Signals from the first instant: a stop requested during start-up runs right after it.
let stopRequested: (() => void) | null = null;
const stopSignal = new Promise<void>((resolve) => (stopRequested = resolve));
let closeRequested = false;
let closeIntake: (() => void) | null = null;
process.on("SIGTERM", () => stopRequested?.());
process.on("SIGINT", () => stopRequested?.());
process.on("SIGUSR2", () => {
  closeRequested = true;
  closeIntake?.();
});

const catalog = syntheticCatalog(Number(process.env["BENCH_ASSETS"] ?? "10000"));
const catalogMs = performance.now();
for (const note of featureNotices(config)) log("warn", note);
let transitionsAcked = 0;
const service = await startService(config, catalog, { log, transition: () => void transitionsAcked++ });
const servingMs = performance.now();

// The engine's own counts: every published recompute (each goes to PEG_SAMPLES unless dropped), by trigger.
const events = { sample: 0, dwell_timer: 0, transitions: 0 };
service.host.events$.subscribe((e) => {
  if (e.kind === "transition") events.transitions++;
  else if (e.trigger === "dwell_timer") events.dwell_timer++;
  else events.sample++;
});

out({
  bench: "serving",
  pid: process.pid,
  port: service.api.port,
  metricsPort: service.api.metricsPort,
  assets: service.host.size,
  catalogMs,
  servingMs,
  recovery: service.recovery,
});

const statsTimer = setInterval(() => log("info", "stats", { link: service.link.stats, projected: service.projected }), 60_000);
statsTimer.unref();

closeIntake = () => {
  closeIntake = null;
  for (const a of catalog.active) if (service.host.runs(a.mint)) service.host.release(a.mint);
  out({ bench: "intake_closed", events: { ...events }, transitionsAcked, link: service.link.stats });
};
if (closeRequested) closeIntake();

await stopSignal;
clearInterval(statsTimer);
const stopFrom = performance.now();
let failed: string | null = null;
try {
  await service.stop();
} catch (e) {
  failed = e instanceof Error ? e.message : String(e);
}
out({
  bench: "stopped",
  stopMs: performance.now() - stopFrom,
  failed,
  events,
  transitionsAcked,
  link: service.link.stats,
  projected: service.projected,
});
process.exit(failed === null ? 0 : 1);
