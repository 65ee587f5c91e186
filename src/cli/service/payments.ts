import type { Catalog } from "../../catalog/index.ts";
import type { Clock } from "../../clock.ts";
import type { Config } from "../../config.ts";
import type { SecretBox } from "../../secret-box.ts";
import type { Store } from "../../store/index.ts";
import type { LogFn } from "../../streams/jetstream/index.ts";

/**
 * The agent tools (docs/agents.md): POST /mcp, and with X402_PAY_TO the paid tools and GET /x402/* (their payments:
 * gate, facilitator, ledger). Loaded only by a process that serves the API; handed to it as its extra routes.
 */
export async function agentRoutes(config: Config, catalog: Catalog, store: Store, secrets: SecretBox, clock: Clock, log: LogFn) {
  const { prepareAgentRoutes } = await import("../../mcp/service.ts");
  return prepareAgentRoutes({ config, catalog, db: store.db, secrets, clock, log });
}
