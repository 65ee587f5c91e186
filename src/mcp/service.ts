/**
 * The agent tools in the serving process (ROLE=all or api): `POST /mcp` (MCP Streamable HTTP) on the API's port and,
 * with X402_PAY_TO, the paid tools and `GET /x402/*`. Prepared before the API starts (the payment gate needs the
 * store and the fee payer), then built over the API's own public routes and read model when it does; the x402
 * counters join its /metrics registry. Nothing heavy is loaded to start: the MCP SDK at the first /mcp request, the
 * x402 libraries only when X402_PAY_TO is set.
 */
import type { Catalog } from "../catalog/index.ts";
import { publicBaseUrlNotice } from "../config.ts";
import type { Metrics } from "../http/metrics.ts";
import type { DocumentedRoute } from "../http/routes/index.ts";
import type { Route } from "../http/router.ts";
import { registerX402Metrics } from "../x402/metrics.ts";
import type { PaidServiceOptions } from "./paid-service.ts";
import type { PreparedSpec } from "./server.ts";
import { routeCaller } from "./api.ts";
import { storeEvents } from "./events.ts";
import { jsonRpcFromApiError } from "./json-rpc.ts";
import { mcpAccess, requestGuard } from "./request-guard.ts";

export interface AgentServiceOptions extends PaidServiceOptions {
  readonly catalog: Catalog;
}

/** What `startApi` takes as `extraRoutes`. */
export type AgentRoutes = (ctx: { readonly routes: readonly DocumentedRoute[]; readonly metrics: Metrics }) => readonly Route[];

export const MCP_PATH = "/mcp";

export async function prepareAgentRoutes(opts: AgentServiceOptions): Promise<AgentRoutes> {
  const { config, catalog, db, clock, log } = opts;
  const paid = config.x402.payTo === null ? null : await (await import("./paid-service.ts")).preparePaid(opts);
  const events = storeEvents(db, clock);
  const guard = requestGuard(mcpAccess(config));
  // The serving process gives absolute URLs out (x402 challenges): say at start when they name only this machine.
  const notice = publicBaseUrlNotice(config);
  if (notice !== null) log("warn", notice);
  return (ctx) => {
    const api = routeCaller(ctx.routes);
    if (paid !== null) registerX402Metrics(paid.metrics, ctx.metrics.registry);
    let spec: Promise<PreparedSpec> | null = null;
    const specOnce = () =>
      (spec ??= import("./agent.ts").then((m) =>
        m.agentSpec({
          routes: ctx.routes,
          catalog,
          rpcUrl: config.anchor.enabled ? config.sources.solanaRpcUrl : null,
          ...(paid === null ? {} : { paid: { gate: paid.gate, events } }),
          onInternal: (e) => log("error", "agent tool failed", { error: e instanceof Error ? (e.stack ?? e.message) : String(e) }),
        }),
      ));
    const mcp: Route = {
      method: "POST",
      path: MCP_PATH,
      budget: { name: "mcp", perMinute: config.mcpRateLimitPerMin },
      errorBody: jsonRpcFromApiError,
      handler: async (req) => {
        const refused = guard(req.headers);
        if (refused !== null) return refused;
        const [{ handleMcpPost }, s] = await Promise.all([import("./http-route.ts"), specOnce()]);
        return handleMcpPost(s, req);
      },
    };
    return [mcp, ...(paid === null ? [] : paid.routes({ api, events, baseUrl: config.publicBaseUrl }))];
  };
}
