/**
 * `peg-oracle mcp`: the agent tools over stdio, for an MCP client on this machine (Claude Desktop, an IDE, an agent
 * framework that spawns its servers). Free tools only (`verify_alert`, `list_assets`, `get_peg_state`) and the
 * resources: paid tools need the service's remote endpoint (`/mcp`), where payments are settled.
 *
 * It opens the configured store the way `serve` does (DATABASE_URL, or the embedded PGlite in DATA_DIR/pg) and reads
 * it through the same routes the REST API serves. Embedded PGlite serves one process at a time: while a service has
 * DATA_DIR/pg open (PGlite's postmaster.pid is there) the command refuses and points at `/mcp`, rather than open the
 * database a second time. stdout is the protocol channel; logs are JSON lines on stderr. Exit 0 when the client
 * closes the connection, 1 when the store cannot be opened, 2 usage.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { Catalog } from "../catalog/index.ts";
import { systemClock } from "../clock.ts";
import type { Config } from "../config.ts";
import { createStoreReadModel } from "../http/read-model-store.ts";
import type { Readiness } from "../http/read-model.ts";
import { publicRoutes } from "../http/routes/index.ts";
import { agentSpec } from "../mcp/agent.ts";
import { serveStdio } from "../mcp/stdio.ts";
import { openStore, type Store } from "../store/index.ts";
import type { LogFn } from "../streams/jetstream/index.ts";
import { EXIT, writeLine, type CliIO } from "./io.ts";
import { prepareDataDir } from "./local-state.ts";

export const MCP_USAGE = "usage: peg-oracle mcp    (MCP over stdio: free agent tools; configuration from the environment)";

const LEVELS = { debug: 10, info: 20, warn: 30, error: 40 } as const;

function stderrLog(io: CliIO, min: keyof typeof LEVELS): LogFn {
  return (level, msg, fields = {}) => {
    if (LEVELS[level] >= LEVELS[min]) writeLine(io.stderr, JSON.stringify({ ts: new Date(systemClock.now()).toISOString(), level, msg, ...fields }));
  };
}

/** Why the embedded database cannot be opened here, or null. */
export function embeddedDatabaseBusy(config: Config): string | null {
  if (config.database.kind !== "pglite") return null;
  const pid = join(config.database.dataDir, "postmaster.pid");
  if (!existsSync(pid)) return null;
  return (
    `the embedded database ${config.database.dataDir} is open in another process (a running service?): PGlite serves one process at a time. ` +
    `Connect your MCP client to the service's Streamable HTTP endpoint instead (http://<HOST>:<PORT>/mcp), or run the service on PostgreSQL (DATABASE_URL). ` +
    `If no service is running, the file ${pid} was left by a crash: start and stop the service once.`
  );
}

export async function mcpCommand(args: readonly string[], io: CliIO, deps: { config: Config; catalog: Catalog }): Promise<number> {
  if (args.length > 0) {
    writeLine(io.stderr, MCP_USAGE);
    return args.length === 1 && (args[0] === "--help" || args[0] === "-h") ? EXIT.ok : EXIT.usage;
  }
  if (io.stdin === undefined) {
    writeLine(io.stderr, "peg-oracle mcp needs a stdin to read MCP messages from");
    return EXIT.usage;
  }
  const { config, catalog } = deps;
  const log = stderrLog(io, config.logLevel);
  const busy = embeddedDatabaseBusy(config);
  if (busy !== null) {
    log("error", busy);
    return EXIT.failure;
  }
  let store: Store;
  try {
    prepareDataDir(config, log);
    store = await openStore(config.database.kind === "postgres" ? { kind: "postgres", url: config.database.url, max: 2 } : { kind: "pglite", dataDir: config.database.dataDir }, systemClock);
  } catch (e) {
    log("error", "cannot open the store", { error: e instanceof Error ? e.message : String(e) });
    return EXIT.failure;
  }
  const readiness = async (): Promise<Readiness> => ({ database: true, nats: false, engine: false, snapshot_age_secs: null });
  const readModel = createStoreReadModel({ store, catalog, clock: systemClock, config, readiness });
  const spec = agentSpec({
    routes: publicRoutes(readModel),
    catalog,
    rpcUrl: config.anchor.enabled ? config.sources.solanaRpcUrl : null,
    onInternal: (e) => log("error", "tool failed", { error: e instanceof Error ? (e.stack ?? e.message) : String(e) }),
  });
  const session = await serveStdio(spec, io.stdin, io.stdout);
  log("info", "mcp serving on stdio", { store: store.kind, tools: spec.listings.map((t) => t.name) });
  const onSignal = () => void session.stop();
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  await session.closed;
  process.off("SIGINT", onSignal);
  process.off("SIGTERM", onSignal);
  await store.close();
  log("info", "mcp stopped");
  return EXIT.ok;
}
