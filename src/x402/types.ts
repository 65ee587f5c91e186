/**
 * What the transports (MCP tool results, the /x402/* HTTP routes) see of the payment gate. The flow is x402's: an
 * unpaid call gets the PaymentRequired object; a paid call is verified and claimed, the work runs, then the payment
 * is settled and only a settled payment releases the result. A claim is durable: a payment is accepted once.
 */
import type { PaymentPayload, PaymentRequired, ResourceInfo, SettleResponse } from "@x402/core/types";
import type { PaidTool } from "./config.ts";

export type { PaymentPayload, PaymentRequired, ResourceInfo, SettleResponse };

/** Why a payment was refused (the `reason` of a refusal, a label of the refusals metric). */
export const REFUSAL_REASONS = {
  /** No payment came with the call. */
  missing: "missing",
  /** The header or `_meta` value is not a payment payload (not base64 JSON, wrong shape, too large). */
  malformed: "malformed",
  /** Not x402 v2, not scheme exact, or another network than the one configured. */
  unsupported: "unsupported",
  /**
   * The payload's `accepted` requirements are not the ones this tool asks for (amount, asset, payTo, fee payer), or its
   * `resource` is not the tool or route it is presented to (a payment pays for the resource it was challenged for).
   */
  requirements_mismatch: "requirements_mismatch",
  /** The transfer pays less (or more) than the price. */
  amount: "amount",
  /** The transfer moves another token than USDC. */
  mint: "mint",
  /** The transfer goes to another account than payTo's USDC account. */
  recipient: "recipient",
  /** A missing or invalid signature (the payer's, or a signature slot the fee payer must not sign). */
  signature: "signature",
  /** The transaction's blockhash has expired (or is unknown): the payment can no longer land. */
  expired: "expired",
  /** Instructions other than the allowed compute-budget, TransferChecked and memo ones, or a fee payer misuse. */
  instructions: "instructions",
  /** The transaction would fail (insufficient USDC, missing account). */
  simulation: "simulation",
  /** This payment was already accepted (or is being processed right now): a payment pays for one call. */
  reused: "reused",
  /** The settlement transaction failed or did not confirm. */
  settlement: "settlement",
} as const;

export type RefusalReason = keyof typeof REFUSAL_REASONS;

/**
 * A refused payment: the PaymentRequired to answer with (its `error` says why) and the reason code. A refusal by the
 * settlement also carries the failed SettleResponse (`success: false`), which the transports send back as x402's
 * transports-v2 put it: the `PAYMENT-RESPONSE` header over HTTP, `x402/payment-response` in the MCP tool result.
 */
export interface Refused {
  readonly kind: "refused";
  readonly reason: RefusalReason;
  readonly message: string;
  readonly paymentRequired: PaymentRequired;
  /** Set when the settlement failed (the payment was verified, the work done, the transfer not made or not confirmed). */
  readonly settlement?: SettleResponse;
}

/** The Solana RPC or the facilitator did not answer: nothing was charged, the same payment may be sent again. */
export interface Unavailable {
  readonly kind: "unavailable";
  readonly message: string;
}

/** A verified payment, claimed for one call: settle it after the work succeeded, or release it. */
export interface Ticket {
  readonly kind: "verified";
  readonly tool: PaidTool;
  /** The ledger key (SHA-256 of the transaction message). */
  readonly key: string;
  readonly payer: string;
  /** SHA-256 (hex) of the request this payment pays for (see `PaymentGate.verify`). */
  readonly request: string;
}

/**
 * A payment already settled for this same request, presented again within the answer window: the answer it bought
 * (stored before the settlement was sent) and its SettleResponse. Nothing is charged again.
 */
export interface Owed {
  readonly kind: "owed";
  readonly tool: PaidTool;
  readonly key: string;
  /** The answer as the transport stored it (`settle`'s `answer`). */
  readonly answer: unknown;
  readonly settlement: SettleResponse;
}

export interface Settled {
  readonly kind: "settled";
  readonly settlement: SettleResponse;
}

/** The payment gate of the paid tools. */
export interface PaymentGate {
  /** The paid tools and their USDC prices. */
  readonly prices: Readonly<Record<PaidTool, string>>;
  /** The PaymentRequired object of an unpaid call (`error` defaults to "payment required"). */
  required(tool: PaidTool, resource: ResourceInfo, error?: string): Promise<PaymentRequired | Unavailable>;
  /** The refusal of a payment the transport could not even read (a PAYMENT-SIGNATURE header that is not base64 JSON). */
  refuse(tool: PaidTool, resource: ResourceInfo, reason: RefusalReason, detail: string): Promise<Refused | Unavailable>;
  /**
   * Checks a payment (any JSON value: it is validated here) and claims it for this call. `request` names what is
   * asked (the tool and its arguments, or the route and its query): a payment settled for the same request is `Owed`
   * its answer again; for another request it is refused as reused.
   */
  verify(tool: PaidTool, resource: ResourceInfo, payment: unknown, request: string): Promise<Ticket | Owed | Refused | Unavailable>;
  /** Gives a claimed payment back unused (the work failed before any result went out): nothing is charged. */
  release(ticket: Ticket): Promise<void>;
  /**
   * Settles a claimed payment; only a settled payment releases the call's result. `answer` (JSON) is stored before
   * the settlement is sent: from then on the answer is owed to this payment, whatever happens to this process.
   */
  settle(ticket: Ticket, resource: ResourceInfo, answer: unknown): Promise<Settled | Refused | Unavailable>;
  /** The answer of a settled (or owed) payment was handed to the transport. */
  delivered(paid: Ticket | Owed): Promise<void>;
  /** Finishes what a crash left in the ledger (src/x402/reconcile.ts); also runs by itself while payments come in. */
  reconcile(): Promise<void>;
}
