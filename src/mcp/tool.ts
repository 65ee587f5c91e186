/**
 * One agent tool: a name, a description written for a language model (what it answers, when to call it, what each
 * argument means), zod schemas of its input and structured output (published as JSON Schema, draft 7, the dialect the
 * MCP SDK's clients validate with) and its handler. Paid tools carry their x402 price key.
 */
import { z } from "zod";
import type { CallToolResult, Tool, ToolAnnotations } from "@modelcontextprotocol/sdk/types.js";
import { failureResult } from "./errors.ts";
import type { PaidTool } from "../x402/index.ts";

/** What a handler gets besides its arguments. */
export interface ToolContext {
  /** Aborted when the client cancels the call or goes away. */
  readonly signal: AbortSignal;
}

export interface ToolDef<I extends z.ZodType = z.ZodType, O extends z.ZodType = z.ZodType> {
  readonly name: string;
  readonly title: string;
  readonly description: string;
  readonly input: I;
  readonly output: O;
  readonly annotations?: ToolAnnotations;
  /** The x402 price key of a paid tool (X402_PRICES); absent: free. */
  readonly paid?: PaidTool;
  run(args: z.output<I>, ctx: ToolContext): Promise<z.output<O>>;
}

/** A ToolDef with its types erased, for lists of tools. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyToolDef = ToolDef<any, any>;

/** Declares a tool (keeps the handler's argument and result types tied to the schemas). */
export function defineTool<I extends z.ZodType, O extends z.ZodType>(def: ToolDef<I, O>): ToolDef<I, O> {
  return def;
}

type JsonSchemaObject = Tool["inputSchema"];

/**
 * The JSON Schema (draft 7) of a zod schema, as MCP lists it: an object schema without `$schema`. A union of object
 * schemas (a paid tool's result or PaymentRequired) is an object schema with `anyOf`.
 */
export function jsonSchemaOf(schema: z.ZodType, io: "input" | "output"): JsonSchemaObject {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, { target: "draft-7", io, unrepresentable: "any" }) as Record<string, unknown>;
  const anyOf = rest["anyOf"];
  if (rest["type"] === undefined && Array.isArray(anyOf) && anyOf.every((s) => (s as Record<string, unknown>)["type"] === "object")) rest["type"] = "object";
  if (rest["type"] !== "object") throw new Error("an MCP tool schema must be a JSON object schema");
  return rest as JsonSchemaObject;
}

/**
 * The `tools/list` entry of a tool (computed once per tool: schemas do not change at run time). `alternative`: another
 * shape its structured content may take (a paid tool's PaymentRequired).
 */
export function listing(def: AnyToolDef, extraDescription = "", alternative?: z.ZodType): Tool {
  return {
    name: def.name,
    title: def.title,
    description: def.description + extraDescription,
    inputSchema: jsonSchemaOf(def.input, "input"),
    outputSchema: jsonSchemaOf(alternative === undefined ? def.output : z.union([def.output, alternative]), "output"),
    ...(def.annotations === undefined ? {} : { annotations: def.annotations }),
  };
}

/** "path: message" lines of a zod error, for an `invalid_input` answer a model can act on. */
export function issuesText(error: z.ZodError): string {
  return error.issues
    .slice(0, 8)
    .map((i) => `${i.path.length === 0 ? "(arguments)" : i.path.join(".")}: ${i.message}`)
    .join("; ");
}

/** The result of a successful call: the output as structured content and as JSON text (validated against its schema). */
export function okResult(def: AnyToolDef, output: unknown, onInternal?: (e: unknown) => void): CallToolResult {
  const checked = def.output.safeParse(output);
  if (!checked.success) {
    return failureResult(new Error(`tool ${def.name} produced output outside its schema: ${issuesText(checked.error)}`), onInternal);
  }
  return { structuredContent: checked.data as Record<string, unknown>, content: [{ type: "text", text: JSON.stringify(checked.data) }] };
}
