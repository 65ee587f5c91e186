/**
 * The agent-tool server of one process: its tools, resources and payment gate over that process's public routes
 * (and so its read model and caches), prepared once and shared by every MCP connection and request.
 */
import { readFileSync } from "node:fs";
import type { Catalog } from "../catalog/index.ts";
import type { Route } from "../http/router.ts";
import type { PaymentGate } from "../x402/index.ts";
import { routeCaller, type ApiCaller } from "./api.ts";
import { resources, resourceTemplates } from "./resources.ts";
import { prepare, type PreparedSpec } from "./server.ts";
import type { AnyToolDef } from "./tool.ts";
import { getPegStateTool, listAssetsTool } from "./tools/assets.ts";
import { paidTools, type PaidToolDeps } from "./tools/paid.ts";
import { verifyAlertTool } from "./tools/verify-alert.ts";

/** package.json's version: the MCP server's `serverInfo.version`. */
export const SERVER_VERSION: string = (JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }).version;

export interface AgentDeps {
  /** The public REST routes the tools read through (the API's own list, or one built over the store). */
  readonly routes: readonly Route[];
  readonly catalog: Catalog;
  /** Solana JSON-RPC URL to read anchor commits back from (verify_alert); null: commits are reported, not read. */
  readonly rpcUrl: string | null;
  /** The payment gate and what the paid tools read; absent: free tools only. */
  readonly paid?: { readonly gate: PaymentGate } & Omit<PaidToolDeps, "api">;
  readonly onInternal?: (e: unknown) => void;
}

/** The free tools over an API caller. */
export function freeTools(api: ApiCaller, rpcUrl: string | null): AnyToolDef[] {
  return [verifyAlertTool({ api, rpcUrl }), listAssetsTool(api), getPegStateTool(api)];
}

export function agentSpec(deps: AgentDeps): PreparedSpec {
  const api = routeCaller(deps.routes);
  const tools = [...freeTools(api, deps.rpcUrl), ...(deps.paid === undefined ? [] : paidTools({ ...deps.paid, api }))];
  return prepare({
    version: SERVER_VERSION,
    tools,
    resources: resources(api, deps.catalog),
    templates: resourceTemplates(api),
    ...(deps.paid === undefined ? {} : { gate: deps.paid.gate }),
    ...(deps.onInternal === undefined ? {} : { onInternal: deps.onInternal }),
  });
}
