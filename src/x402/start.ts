/**
 * The payment gate of a serving process, from the configuration: off without X402_PAY_TO; with it, settled by the
 * configured facilitator (X402_FACILITATOR_URL) or by this process through SOLANA_RPC_URL, the settlement fee paid by
 * the anchoring fee payer (ANCHOR_KEYPAIR, or the key generated and sealed in the store), whose address is logged so
 * the operator can fund it. Building the 402 challenge needs no RPC.
 */
import type { KeyPairSigner } from "@solana/kit";
import { openFeePayer } from "../anchor/index.ts";
import type { Clock } from "../clock.ts";
import type { SecretBox } from "../secret-box.ts";
import type { Executor } from "../store/index.ts";
import type { X402Config } from "./config.ts";
import { localFacilitator, remoteFacilitator } from "./facilitator.ts";
import { createPaymentGate } from "./gate.ts";
import { chainProbe } from "./probe.ts";
import { x402Metrics, type X402Metrics } from "./metrics.ts";
import type { PaymentGate } from "./types.ts";

export interface PaymentsSetup {
  readonly gate: PaymentGate;
  readonly metrics: X402Metrics;
  /** The address that pays settlement fees (self-facilitated), or null with a remote facilitator. */
  readonly feePayer: string | null;
}

export interface StartPaymentsOptions {
  readonly config: X402Config;
  readonly rpcUrl: string;
  /** ANCHOR_KEYPAIR, or null: the fee payer kept in the store. */
  readonly keypairPath: string | null;
  readonly db: Executor;
  readonly secrets: SecretBox;
  readonly clock: Clock;
  readonly log?: (level: "info" | "warn" | "error", msg: string, fields?: Record<string, unknown>) => void;
}

/** The gate, or null when X402_PAY_TO is unset. */
export async function startPayments(opts: StartPaymentsOptions): Promise<PaymentsSetup | null> {
  const { config } = opts;
  if (config.payTo === null) return null;
  const metrics = x402Metrics();
  let facilitator;
  let signer: KeyPairSigner | null = null;
  if (config.facilitatorUrl !== null) facilitator = remoteFacilitator(config.facilitatorUrl);
  else {
    signer = await openFeePayer(opts.db, opts.keypairPath, opts.clock.now(), opts.secrets);
    facilitator = localFacilitator({ feePayer: signer, rpcUrl: opts.rpcUrl, network: config.network });
  }
  const feePayer = signer?.address ?? null;
  const gate = await createPaymentGate({
    config,
    facilitator,
    probe: chainProbe({ rpcUrl: opts.rpcUrl, feePayer: signer }),
    db: opts.db,
    clock: opts.clock,
    metrics,
    ...(opts.log === undefined ? {} : { log: opts.log }),
  });
  // What a crash left in the ledger is finished before the first payment is taken (src/x402/reconcile.ts).
  await gate.reconcile();
  opts.log?.("info", "x402 paid tools on", {
    pay_to: config.payTo,
    network: config.network.name,
    prices: config.prices,
    ...(feePayer === null ? { facilitator: config.facilitatorUrl } : { facilitator: "self", fee_payer: feePayer }),
  });
  return { gate, metrics, feePayer };
}
