import { loadShippedCatalog } from "../catalog/index.ts";
import { ConfigError, parseConfig } from "../config.ts";
import { EXIT, writeLine, type CliIO } from "./io.ts";

export type { CliIO } from "./io.ts";

const USAGE = `peg-oracle — peg-risk oracle for Solana tokens (methodology 1.0.0)

usage:
  peg-oracle serve                                  run the service (configuration from the environment)
  peg-oracle replay <scenario.jsonl|name> [--bundles DIR] [--until RFC3339]
                                                    replay a scenario through the engine on a simulated clock
  peg-oracle verify <bundle.json|url> [--json] [--rpc URL --signer ADDR[,ADDR] [--id ID] [--tx SIG | --api BASE]]
                                                    verify a replay bundle offline (exit 0 pass, 1 mismatch,
                                                    2 invalid input, 3 other methodology version) and, with
                                                    --rpc, its on-chain commit (4 commit contradicts the
                                                    receipt or the signer list, 5 commit not verifiable yet)
  peg-oracle scenarios [--json]                     list the shipped scenario library
  peg-oracle catalog [--json] [--all]               list the tracked assets
  peg-oracle webhook-keys rotate [--json]           rotate the running service's webhook signing key (the old
                                                    key stays listed as retiring for 7 days)
  peg-oracle mcp                                    the agent tools (MCP) over stdio for a local MCP client: free
                                                    tools; paid tools are on the service's /mcp endpoint
  peg-oracle build-info [--dir DIR]                 write DIR/build-info.json (default DIR: the repository root) naming
                                                    the commit (GIT_SHA, else the checkout's HEAD), for a copy of the
                                                    code that runs without .git`;

/**
 * Runs one CLI command and resolves with its exit code. `serve` resolves when the service has shut down. Each command's
 * module is loaded when it runs: `serve` never loads the verifier's Solana client, the offline commands never the feeds.
 */
export async function runCli(argv: readonly string[], io: CliIO): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === "help" || command === "--help" || command === "-h") {
    writeLine(command === undefined ? io.stderr : io.stdout, USAGE);
    return command === undefined ? EXIT.usage : EXIT.ok;
  }
  if (command === "verify") return (await import("./verify.ts")).verifyCommand(rest, io);
  if (command === "scenarios") return (await import("./scenarios.ts")).scenariosCommand(rest, io);
  let config;
  try {
    config = parseConfig(io.env, io.build === undefined ? {} : { gitSha: io.build.sha });
  } catch (e) {
    if (e instanceof ConfigError) {
      writeLine(io.stderr, e.message);
      return EXIT.usage;
    }
    throw e;
  }
  const catalog = loadShippedCatalog();
  switch (command) {
    case "replay": {
      const { replayCommand } = await import("./replay.ts");
      return replayCommand(rest, io, {
        catalog,
        gitSha: config.gitSha,
        intrinsicLivenessGate: config.intrinsicLivenessGate,
      });
    }
    case "catalog":
      return (await import("./catalog.ts")).catalogCommand(rest, io, catalog);
    case "webhook-keys": {
      const { webhookKeysCommand } = await import("./webhook-keys.ts");
      return webhookKeysCommand(rest, io, config);
    }
    case "build-info":
      return (await import("./build-info.ts")).buildInfoCommand(rest, io, config.gitSha);
    case "mcp":
      return (await import("./mcp.ts")).mcpCommand(rest, io, { config, catalog });
    case "serve": {
      const { serveCommand } = await import("./serve.ts");
      return serveCommand(rest, io, { config, catalog });
    }
    default:
      writeLine(io.stderr, `unknown command "${command}"\n\n${USAGE}`);
      return EXIT.usage;
  }
}
