/**
 * The errors an MCP tool answers with (STYLE.md 6: few, named, each with a stable `code`). A tool never throws to the
 * SDK: every failure becomes a tool result with `isError: true` and the error object `{error, message, ...}` as JSON
 * in `content[0].text`, so a language model can read it and an agent can branch on `error`. The object is not also
 * sent as `structuredContent`: MCP clients (the official SDK's among them) check structured content against the
 * tool's output schema, error or not. Payment refusals of the paid tools are not here: they answer with the x402
 * `PaymentRequired` object, which their output schema admits (src/mcp/paid-call.ts).
 */
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";

export const TOOL_ERROR_CODES = {
  /** The arguments do not match the tool's input schema (or a rule it states, such as "one of alert_id or bundle"). */
  invalid_input: "invalid_input",
  /** No active asset with that symbol or mint. */
  asset_not_found: "asset_not_found",
  /** No alert (receipt) with that id, or no snapshot of the asset yet. */
  not_found: "not_found",
  /** The alert is known but its receipt is not persisted yet: call again after `retry_after_secs`. */
  receipt_pending: "receipt_pending",
  /** The receipt could not be persisted and was dead-lettered: it will never become available. */
  receipt_gone: "receipt_gone",
  /** A dependency of the tool is not ready (the positions book is loading, the store is unreachable): retry later. */
  not_ready: "not_ready",
  /** The Solana RPC or the x402 facilitator did not answer: the payment was not charged; retry later with it. */
  payment_unavailable: "payment_unavailable",
  /** An unexpected failure; the server logged it. */
  internal: "internal",
} as const;

export type ToolErrorCode = keyof typeof TOOL_ERROR_CODES;

/** A tool failure with its code and what the caller may do about it. */
export class ToolError extends Error {
  constructor(
    readonly code: ToolErrorCode,
    message: string,
    readonly extra: Readonly<Record<string, unknown>> = {},
  ) {
    super(message);
    this.name = "ToolError";
  }

  toBody(): Record<string, unknown> {
    return { ...this.extra, error: this.code, message: this.message };
  }
}

/** The tool result of an error object: `isError` and the object as JSON text. */
export function errorResult(body: Readonly<Record<string, unknown>>): CallToolResult {
  return { isError: true, content: [{ type: "text", text: JSON.stringify(body) }] };
}

/** The tool result of a failure: a ToolError as it is, anything else as `internal` (reported through `onInternal`). */
export function failureResult(e: unknown, onInternal?: (e: unknown) => void): CallToolResult {
  if (e instanceof ToolError) return errorResult(e.toBody());
  onInternal?.(e);
  return errorResult({ error: TOOL_ERROR_CODES.internal, message: "internal error; the server logged it" });
}
