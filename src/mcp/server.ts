/**
 * The agent-tool MCP server on the official SDK's low-level `Server`: tools with JSON Schema inputs and structured
 * outputs, the resources, and x402 payments on the paid tools (the x402 MCP transport's tool-result binding). Input is
 * validated here, so bad arguments always get a tool error with a stable code (src/mcp/errors.ts), never a crash;
 * what the protocol makes a JSON-RPC error is one: an unknown tool (-32602), an unknown resource (-32002). One server
 * per connection (stdio) or per request (stateless Streamable HTTP): the tool definitions and their JSON Schemas are
 * built once and shared.
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  CallToolRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
  McpError,
  ErrorCode,
  type CallToolResult,
  type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import { METHODOLOGY_VERSION } from "../methodology/index.ts";
import type { PaymentGate } from "../x402/index.ts";
import { errorResult, failureResult, TOOL_ERROR_CODES } from "./errors.ts";
import { paidCall } from "./paid-call.ts";
import { PaymentRequiredSchema } from "./payment-schema.ts";
import { resourceNotFound, type ResourceDef, type ResourceTemplateDef } from "./resources.ts";
import { issuesText, listing, okResult, type AnyToolDef, type ToolContext } from "./tool.ts";

export const SERVER_NAME = "peg-oracle";

const INSTRUCTIONS =
  `Peg-risk oracle for Solana tokens (methodology ${METHODOLOGY_VERSION}): whether stablecoins and liquid-staking tokens hold their peg. ` +
  "list_assets and get_peg_state read the current states; verify_alert re-derives an alert's receipt independently. " +
  "Discounts are decimal strings (0.0050 = 50 bps below intrinsic). Paid tools, when listed, answer an unpaid call with an x402 PaymentRequired " +
  "(isError, structuredContent); retry with the payment payload in params._meta[\"x402/payment\"].";

/** Everything the server is built from; shared by every connection. */
export interface McpServerSpec {
  readonly version: string;
  readonly tools: readonly AnyToolDef[];
  readonly resources: readonly ResourceDef[];
  /** Resource families by URI template (the asset cards); absent: none. */
  readonly templates?: readonly ResourceTemplateDef[];
  /** The payment gate of the paid tools; absent: paid tools are not offered. */
  readonly gate?: PaymentGate;
  /** Reported with every `internal` tool error. */
  readonly onInternal?: (e: unknown) => void;
}

/** What `serverFor` needs, prepared once. */
export interface PreparedSpec extends McpServerSpec {
  readonly listings: readonly Tool[];
  readonly byName: ReadonlyMap<string, AnyToolDef>;
}

/** Validates the tool set and computes the listings (paid tools only with a gate). */
export function prepare(spec: McpServerSpec): PreparedSpec {
  const offered = spec.tools.filter((t) => t.paid === undefined || spec.gate !== undefined);
  const byName = new Map<string, AnyToolDef>();
  for (const t of offered) {
    if (byName.has(t.name)) throw new Error(`duplicate tool ${t.name}`);
    byName.set(t.name, t);
  }
  const listings = offered.map((t) => {
    if (t.paid === undefined) return listing(t);
    const price = spec.gate!.prices[t.paid];
    const note = ` Paid: ${price} USDC per call (x402 on Solana): an unpaid call answers isError with the x402 PaymentRequired as structured content; call again with the payment in _meta["x402/payment"].`;
    return { ...listing(t, note, PaymentRequiredSchema), _meta: { "x402/price": { amount: price, currency: "USDC" } } };
  });
  return { ...spec, tools: offered, byName, listings };
}

/** A new SDK server over the prepared tools and resources (connect it to one transport). */
export function serverFor(spec: PreparedSpec): Server {
  const server = new Server(
    { name: SERVER_NAME, title: "Peg-risk oracle", version: spec.version },
    { capabilities: { tools: {}, resources: {} }, instructions: INSTRUCTIONS },
  );
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [...spec.listings] }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const def = spec.byName.get(request.params.name);
    // MCP server/tools, Error Handling: an unknown tool is a protocol error (-32602), not a tool result.
    if (def === undefined) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${JSON.stringify(request.params.name.slice(0, 64))}; tools/list names them`);
    const parsed = def.input.safeParse(request.params.arguments ?? {});
    if (!parsed.success) return errorResult({ error: TOOL_ERROR_CODES.invalid_input, message: issuesText(parsed.error) });
    const ctx: ToolContext = { signal: extra.signal };
    if (def.paid !== undefined && spec.gate !== undefined) {
      return paidCall(spec.gate, def, parsed.data, request.params._meta?.["x402/payment"], ctx, spec.onInternal);
    }
    try {
      return okResult(def, await def.run(parsed.data, ctx), spec.onInternal);
    } catch (e) {
      return failureResult(e, spec.onInternal);
    }
  });
  server.setRequestHandler(ListResourcesRequestSchema, () => ({
    resources: spec.resources.map(({ read: _read, ...r }) => r),
  }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({
    resourceTemplates: (spec.templates ?? []).map(({ read: _read, ...t }) => t),
  }));
  server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
    const uri = request.params.uri;
    const r = spec.resources.find((x) => x.uri === uri);
    if (r !== undefined) return { contents: [{ uri, ...(r.mimeType === undefined ? {} : { mimeType: r.mimeType }), text: await r.read() }] };
    for (const t of spec.templates ?? []) {
      const text = t.read(uri);
      if (text !== null) return { contents: [{ uri, ...(t.mimeType === undefined ? {} : { mimeType: t.mimeType }), text: await text }] };
    }
    throw resourceNotFound(uri, "no resource has this URI; resources/list and resources/templates/list name them");
  });
  return server;
}
