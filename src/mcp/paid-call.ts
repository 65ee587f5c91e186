/**
 * A paid tool call over MCP, in the x402 MCP transport's tool-result binding (x402 specs/transports-v2/mcp.md):
 *
 * 1. no `params._meta["x402/payment"]`: a tool result with `isError: true`, the PaymentRequired object in
 *    `structuredContent` and, JSON-encoded, in `content[0].text`;
 * 2. a payment: verified and claimed (a refusal is the same PaymentRequired answer, its `error` saying why), the tool
 *    runs, then the payment is settled; the result goes out only after settlement, with the SettleResponse in
 *    `_meta["x402/payment-response"]`. A tool that fails gives its payment back unused (nothing is charged); a
 *    settlement that fails answers the PaymentRequired again with the failed SettleResponse in its
 *    `x402/payment-response`, never the tool's content;
 * 3. the RPC or facilitator unreachable: the tool error `payment_unavailable`; nothing is charged;
 * 4. a payment already settled for the same tool and arguments (its answer lost to a crash or a dropped connection),
 *    presented again within the answer window: the same result it bought, with the same SettleResponse.
 */
import canonicalize from "canonicalize";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { PaidTool, PaymentGate, PaymentRequired, ResourceInfo, SettleResponse, Unavailable } from "../x402/index.ts";
import { errorResult, failureResult, TOOL_ERROR_CODES } from "./errors.ts";
import { okResult, type AnyToolDef, type ToolContext } from "./tool.ts";

/** The ResourceInfo of a paid tool (the x402 MCP transport names tools `mcp://tool/<name>`). */
export function toolResource(def: AnyToolDef): ResourceInfo {
  return { url: `mcp://tool/${def.name}`, description: def.title, mimeType: "application/json" };
}

/** The PaymentRequired answer; after a failed settlement it also carries the failed SettleResponse (mcp.md, Settlement Failure). */
function paymentRequiredResult(pr: PaymentRequired, settlement?: SettleResponse): CallToolResult {
  const answer = settlement === undefined ? { ...pr } : { ...pr, "x402/payment-response": settlement };
  return { isError: true, structuredContent: answer, content: [{ type: "text", text: JSON.stringify(answer) }] };
}

function unavailableResult(u: Unavailable): CallToolResult {
  return errorResult({ error: TOOL_ERROR_CODES.payment_unavailable, message: `${u.message}; nothing was charged: call again later (the same payment may be sent again)`, retry_after_secs: 5 });
}

/** What a paid call asks, as the gate binds a payment to it: the tool and its arguments (canonical JSON). */
export function toolRequest(tool: string, args: unknown): string {
  return `mcp ${tool} ${canonicalize(args) ?? "null"}`;
}

export async function paidCall(gate: PaymentGate, def: AnyToolDef, args: unknown, payment: unknown, ctx: ToolContext, onInternal?: (e: unknown) => void): Promise<CallToolResult> {
  const tool = def.paid as PaidTool;
  const resource = toolResource(def);
  if (payment === undefined) {
    const pr = await gate.required(tool, resource);
    return "kind" in pr ? unavailableResult(pr) : paymentRequiredResult(pr);
  }
  const verified = await gate.verify(tool, resource, payment, toolRequest(def.name, args));
  if (verified.kind === "unavailable") return unavailableResult(verified);
  if (verified.kind === "refused") return paymentRequiredResult(verified.paymentRequired);
  if (verified.kind === "owed") {
    await gate.delivered(verified);
    return { ...(verified.answer as CallToolResult), _meta: { "x402/payment-response": verified.settlement } };
  }
  let output: unknown;
  try {
    output = await def.run(args, ctx);
  } catch (e) {
    await gate.release(verified);
    return failureResult(e, onInternal);
  }
  const result = okResult(def, output, onInternal);
  if (result.isError === true) {
    await gate.release(verified);
    return result;
  }
  const settled = await gate.settle(verified, resource, result);
  if (settled.kind === "unavailable") return unavailableResult(settled);
  if (settled.kind === "refused") return paymentRequiredResult(settled.paymentRequired, settled.settlement);
  await gate.delivered(verified);
  return { ...result, _meta: { "x402/payment-response": settled.settlement } };
}
