/**
 * The x402 v2 PaymentRequired object as a JSON Schema for the paid tools' output schema: a paid tool answers either
 * its result or (with `isError: true`) this object, and MCP clients check structured content against the output
 * schema whatever `isError` says, so the schema admits both (x402 specs/transports-v2/mcp.md, tool-result binding).
 */
import { z } from "zod";

const Requirements = z.looseObject({
  scheme: z.string().describe("exact"),
  network: z.string().describe("CAIP-2 id of the Solana cluster, e.g. solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp (mainnet)."),
  amount: z.string().describe("Price in USDC atomic units (micro-USDC): 1000 = 0.001 USDC."),
  asset: z.string().describe("The USDC mint."),
  payTo: z.string().describe("The address paid (its USDC associated token account receives the transfer)."),
  maxTimeoutSeconds: z.int(),
  extra: z.record(z.string(), z.unknown()).describe("feePayer: the address that pays the Solana fee and co-signs."),
});

export const PaymentRequiredSchema = z
  .looseObject({
    x402Version: z.literal(2),
    error: z.string().optional().describe("Why payment is required: `missing: ...` for an unpaid call, else the refusal reason (amount, mint, recipient, signature, expired, reused, ...) and detail."),
    resource: z.looseObject({ url: z.string(), description: z.string().optional(), mimeType: z.string().optional() }),
    accepts: z.array(Requirements),
    extensions: z.record(z.string(), z.unknown()).optional(),
  })
  .describe('x402 PaymentRequired (with isError: true): pay one of `accepts` and call again with the PaymentPayload in params._meta["x402/payment"].');
