import { unknownCommitWarning } from "../build-info.ts";
import type { Catalog } from "../catalog/index.ts";
import { systemClock } from "../clock.ts";
import { featureNotices, type Config } from "../config.ts";
import { startupVerdict } from "../methodology/index.ts";
import type { LogFn } from "../streams/jetstream/index.ts";
import { EXIT, writeLine, type CliIO } from "./io.ts";
import { startRoleService } from "./service.ts";

const LEVELS = { debug: 10, info: 20, warn: 30, error: 40 } as const;

function logger(io: CliIO, min: keyof typeof LEVELS): LogFn {
  return (level, msg, fields = {}) => {
    if (LEVELS[level] < LEVELS[min]) return;
    writeLine(io.stderr, JSON.stringify({ ts: new Date(systemClock.now()).toISOString(), level, msg, ...fields }));
  };
}

/**
 * `serve`: runs the service (docs/lifecycle.md). Acknowledged transitions are printed as JSON lines on stdout; logs
 * are JSON lines on stderr. SIGINT/SIGTERM shut down in the documented order; a second signal exits at once.
 * A broken methodology version (docs/methodology-lifecycle.md) is refused first, before any port or database opens.
 */
export async function serveCommand(_args: readonly string[], io: CliIO, deps: { config: Config; catalog: Catalog }): Promise<number> {
  const { config, catalog } = deps;
  const log = logger(io, config.logLevel);
  const m = config.methodology;
  const verdict = startupVerdict(m);
  const lifecycle = { methodology: m.version, status: m.status, superseded_by: m.superseded_by };
  if (verdict.kind === "refuse") {
    log("error", verdict.message, { ...lifecycle, fix_url: verdict.fix_url });
    return EXIT.failure;
  }
  if (verdict.kind === "warn") log("warn", verdict.message, lifecycle);
  for (const note of featureNotices(config)) log("warn", note);
  const unknownCommit = unknownCommitWarning(config.gitSha, io.build);
  if (unknownCommit !== null) log("warn", unknownCommit);
  // Signals are handled from the first instant: one that arrives during start-up shuts down right after it.
  const signalled = new Promise<NodeJS.Signals>((resolve) => {
    let count = 0;
    const onSignal = (sig: NodeJS.Signals) => {
      count++;
      if (count === 1) resolve(sig);
      else {
        log("warn", "second signal: exiting at once", { signal: sig });
        process.exit(130);
      }
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
  });
  let feedEnded: (e: unknown) => void = () => {};
  const ended = new Promise<unknown>((r) => (feedEnded = r));
  let service;
  try {
    service = await startRoleService(config, catalog, {
      log,
      transition: (line) => writeLine(io.stdout, line),
      onFeedEnd: (e) => feedEnded(e),
    });
  } catch (e) {
    log("error", "the service could not start", { error: e instanceof Error ? e.message : String(e) });
    return EXIT.failure;
  }
  log("info", "serving", {
    feed: config.feed.kind === "scenario" ? `scenario:${config.feed.name}` : config.feed.kind,
    role: service.role,
    assets: service.partition === null ? service.host.size : service.partition.heldAssets(),
    ...(service.partition === null ? {} : { engine: service.partition.self }),
    ...(service.api === null ? {} : { port: service.api.port, metrics_port: service.api.metricsPort }),
    store: service.store.kind,
    nats: service.natsUrl,
    methodology: m.version,
    methodology_status: m.status,
  });
  const statsTimer = setInterval(() => {
    log("info", "stats", { link: service.link.stats, projected: service.projected, ...(service.partition === null ? {} : { leases: service.partition.leases.stats }) });
  }, 60_000);
  statsTimer.unref();

  const reason = await Promise.race([
    signalled.then((s) => ({ kind: "signal" as const, detail: s })),
    ended.then((e) => ({ kind: "feed" as const, detail: e })),
  ]);
  log("info", "shutting down", { reason: reason.kind === "signal" ? reason.detail : reason.detail === null ? "feed completed" : "feed failed" });
  clearInterval(statsTimer);
  let code: number = reason.kind === "feed" && reason.detail !== null ? EXIT.failure : EXIT.ok;
  try {
    await service.stop();
    log("info", "stopped");
  } catch (e) {
    log("error", "shutdown finished with errors", { error: e instanceof Error ? e.message : String(e) });
    code = EXIT.failure;
  }
  // Everything is closed; should a library still hold a handle, do not hang on it.
  setTimeout(() => process.exit(code), 2_000).unref();
  return code;
}
