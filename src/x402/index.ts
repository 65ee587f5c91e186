/**
 * x402 payments (protocol v2, scheme `exact`, USDC on Solana) for the agent tools: the configuration, the payment
 * gate (challenge, verification, settlement, the once-only ledger) and its metrics. Sits beside anchor: it uses the
 * store, the catalog's base58 and the anchor fee payer, never http, mcp or cli.
 */
export {
  DEFAULT_PRICES,
  DEFAULT_PRICES_TEXT,
  MAX_PRICE_USDC,
  PAID_TOOLS,
  USDC_DECIMALS,
  X402_NETWORKS,
  parseNetwork,
  parsePayTo,
  parsePrices,
  priceAtomic,
  type PaidTool,
  type X402Config,
  type X402Network,
} from "./config.ts";
export {
  REFUSAL_REASONS,
  type PaymentGate,
  type PaymentPayload,
  type PaymentRequired,
  type RefusalReason,
  type Refused,
  type ResourceInfo,
  type SettleResponse,
  type Settled,
  type Ticket,
  type Unavailable,
} from "./types.ts";
export { MAX_PAYMENT_HEADER_BYTES, readPayment, readPaymentHeader, type PayloadRead } from "./payload.ts";
export { localFacilitator, remoteFacilitator, svmSigner } from "./facilitator.ts";
export { createPaymentGate, type GateOptions } from "./gate.ts";
export { registerX402Metrics, x402Metrics, type X402Metrics } from "./metrics.ts";
export { startPayments, type PaymentsSetup, type StartPaymentsOptions } from "./start.ts";
