import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Observable, Subscription } from "rxjs";
import { ActorHost } from "../actors/index.ts";
import type { Catalog } from "../catalog/index.ts";
import { ScaledClock, systemClock, type Clock } from "../clock.ts";
import { featureNotices, type Config } from "../config.ts";
import { decimalToWire, type Sample } from "../methodology/index.ts";
import { transitionLine } from "../streams/replay.ts";
import { scenarioFeed } from "../streams/scenario-feed.ts";
import { simulatedMarket } from "../streams/sim.ts";
import { EXIT, writeLine, type CliIO } from "./io.ts";
import { loadScenario } from "./scenario-files.ts";

const SNAPSHOT_EVERY_MS = 5_000;

function log(io: CliIO, level: string, msg: string, extra: Record<string, unknown> = {}): void {
  writeLine(io.stderr, JSON.stringify({ ts: new Date(systemClock.now()).toISOString(), level, msg, ...extra }));
}

/** Writes a file atomically (temp file + rename), so a crash never leaves a torn snapshot. */
function writeAtomic(path: string, text: string): void {
  const tmp = `${path}.tmp`;
  writeFileSync(tmp, text);
  renameSync(tmp, path);
}

/**
 * `serve`: runs the engine on the configured feed. Transitions are printed as JSON lines on stdout; logs go to
 * stderr. Actor state is snapshotted to DATA_DIR/actors.json (every 5 s when it changed, and at shutdown) and restored
 * at start, so a restart never loses a pending dwell.
 *
 * Shutdown sequence (SIGINT/SIGTERM): 1. stop the feed; 2. snapshot the actors; 3. stop the actors; 4. resolve.
 */
export async function serveCommand(_args: readonly string[], io: CliIO, deps: { config: Config; catalog: Catalog }): Promise<number> {
  const { config, catalog } = deps;
  for (const note of featureNotices(config)) log(io, "warn", note);
  let clock: Clock = systemClock;
  let feed: Observable<Sample>;
  switch (config.feed.kind) {
    case "sim":
      feed = simulatedMarket({ assets: catalog.active, seed: config.simSeed, clock });
      break;
    case "scenario": {
      let scenario;
      try {
        scenario = loadScenario(config.feed.name);
      } catch (e) {
        log(io, "error", `FEED=scenario:${config.feed.name}: ${e instanceof Error ? e.message : String(e)}`);
        return EXIT.usage;
      }
      clock = new ScaledClock(scenario.samples[0]?.ts ?? systemClock.now(), config.scenarioSpeed);
      feed = scenarioFeed(scenario.samples, clock, config.scenarioSpeed);
      break;
    }
    case "live":
      log(io, "error", "FEED=live: the live source adapters (Pyth, Jupiter, Sanctum, Solana RPC) are not part of this build; use FEED=sim or FEED=scenario:<name>");
      return EXIT.usage;
  }

  const host = new ActorHost({
    assets: catalog.active,
    clock,
    gitSha: config.gitSha,
    step: { intrinsicLivenessGate: config.intrinsicLivenessGate },
  });
  mkdirSync(config.dataDir, { recursive: true });
  const snapshotPath = join(config.dataDir, "actors.json");
  let dirty = false;
  const events = host.events$.subscribe((e) => {
    dirty = true;
    if (e.kind !== "transition") return;
    writeLine(io.stdout, JSON.stringify(transitionLine(e.receipt)));
  });
  if (config.feed.kind === "sim" && existsSync(snapshotPath)) {
    try {
      host.restore(JSON.parse(readFileSync(snapshotPath, "utf8")));
      log(io, "info", "restored actor snapshot", { path: snapshotPath });
    } catch (e) {
      log(io, "warn", "ignoring unreadable actor snapshot", { path: snapshotPath, error: e instanceof Error ? e.message : String(e) });
    }
  }
  const persist = () => {
    if (!dirty) return;
    dirty = false;
    writeAtomic(snapshotPath, JSON.stringify(host.snapshot()));
  };
  const persistTimer = setInterval(persist, SNAPSHOT_EVERY_MS);

  let accepted = 0;
  let skipped = 0;
  const statsTimer = setInterval(() => {
    const states: Record<string, number> = {};
    for (const a of catalog.active) {
      const s = host.engineState(a.symbol)?.published ?? "none";
      states[s] = (states[s] ?? 0) + 1;
    }
    log(io, "info", "engine", { accepted, skipped, states });
  }, 60_000);

  log(io, "info", "serving", {
    feed: config.feed.kind === "scenario" ? `scenario:${config.feed.name}` : config.feed.kind,
    assets: host.size,
    methodology: "1.0.0",
  });

  return new Promise<number>((resolve) => {
    // A holder, not a const: the feed may complete synchronously inside subscribe(), before it returns.
    const feed$: { sub?: Subscription } = {};
    let done = false;
    const shutdown = (reason: string, code: number) => {
      if (done) return;
      done = true;
      log(io, "info", "shutting down", { reason });
      feed$.sub?.unsubscribe(); // 1. stop the feed
      clearInterval(persistTimer);
      clearInterval(statsTimer);
      dirty = true;
      persist(); // 2. snapshot the actors
      host.stop(); // 3. stop the actors
      events.unsubscribe();
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
      resolve(code);
    };
    const onSignal = (signal: NodeJS.Signals) => shutdown(signal, EXIT.ok);
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
    feed$.sub = feed.subscribe({
      next: (sample) => {
        const r = host.ingest(sample);
        if (r.status === "accepted") accepted++;
        else {
          skipped++;
          if (config.logLevel === "debug") log(io, "debug", "sample skipped", { asset: sample.asset, result: r, market_usd: decimalToWire(sample.market_usd) });
        }
      },
      error: (e: unknown) => {
        log(io, "error", "feed failed", { error: e instanceof Error ? e.message : String(e) });
        shutdown("feed error", EXIT.failure);
      },
      complete: () => {
        log(io, "info", "feed completed");
        shutdown("feed completed", EXIT.ok);
      },
    });
  });
}
