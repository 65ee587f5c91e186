/**
 * The payment gate of the paid tools (src/x402/types.ts), on the x402 project's libraries: `@x402/core`'s resource
 * server builds the requirements and the PaymentRequired object and matches a payload to them; the facilitator
 * (`@x402/svm`'s `exact` scheme in this process, or a remote one) verifies and settles. Around them:
 *
 * - the payload is read and checked before anything else (src/x402/payload.ts);
 * - a payment is claimed in the store (`x402_payments`, keyed by its transaction message hash) before it is verified,
 *   so a replay, or a second request racing the first, is refused with `reused`, durably;
 * - the facilitator's refusal codes become this server's reasons (amount, mint, recipient, signature, expired,
 *   instructions, simulation, ...) in the PaymentRequired's `error`, with the library's code for detail;
 * - an RPC or facilitator that does not answer gives the claim back and answers `unavailable`: nothing was charged;
 * - the answer is stored before the settlement is sent, so a settled payment presented again for the same request
 *   gets its answer (`Owed`) within the answer window, across crashes and restarts; what a crash leaves unfinished is
 *   reconciled at start and while payments come in (src/x402/reconcile.ts).
 */
import { createHash, randomUUID } from "node:crypto";
import type { PaymentRequirements } from "@x402/core/types";
import { x402ResourceServer, type FacilitatorClient } from "@x402/core/server";
import { getBase64Encoder, getTransactionDecoder } from "@solana/kit";
import { transactionMessageHash } from "@x402/svm";
import { ExactSvmScheme } from "@x402/svm/exact/server";
import type { Clock } from "../clock.ts";
import { claimPayment, countOwed, finishPayment, markServed, paymentByKey, recordAnswer, releasePayment, type Executor, type PaymentRecord } from "../store/index.ts";
import { PAID_TOOLS, USDC_DECIMALS, priceAtomic, type PaidTool, type X402Config } from "./config.ts";
import { withTrouble } from "./facilitator.ts";
import type { X402Metrics } from "./metrics.ts";
import { readPayment } from "./payload.ts";
import type { SettlementProbe } from "./probe.ts";
import { DEFAULT_CLAIM_GRACE_MS, finishSettling, holderId, reconcilePass, type ReconcileDeps } from "./reconcile.ts";
import type { Owed, PaymentGate, PaymentPayload, PaymentRequired, RefusalReason, Refused, ResourceInfo, SettleResponse, Settled, Ticket, Unavailable } from "./types.ts";

/** How often, at most, a reconciliation pass runs while payments come in. */
const PASS_EVERY_MS = 60_000;

export interface GateOptions {
  /** The x402 configuration; `payTo` must be set. */
  readonly config: X402Config;
  readonly facilitator: FacilitatorClient;
  /** Where a settlement stands on chain (src/x402/probe.ts), for what a crash left `settling`. */
  readonly probe: SettlementProbe;
  /** How long a claim may stay unfinished before a pass gives it back, ms. Default 2 min. */
  readonly claimGraceMs?: number;
  /** Where the payment ledger is. */
  readonly db: Executor;
  readonly clock: Clock;
  readonly metrics?: X402Metrics;
  readonly log?: (level: "info" | "warn" | "error", msg: string, fields?: Record<string, unknown>) => void;
  /** How long a payment stays valid after the challenge, seconds (the requirements' maxTimeoutSeconds). Default 60. */
  readonly maxTimeoutSeconds?: number;
}

/** A verified payment and what it was verified against (kept for the settlement). */
interface VerifiedTicket extends Ticket {
  readonly payload: PaymentPayload;
  readonly requirements: PaymentRequirements;
  readonly amount: bigint;
}

/** The library's refusal codes (facilitator verify and settle) and this server's reason for each. */
const LIBRARY_REASONS: readonly (readonly [RegExp, RefusalReason])[] = [
  [/amount_mismatch/, "amount"],
  [/mint_mismatch/, "mint"],
  [/recipient_mismatch/, "recipient"],
  [/signature_invalid/, "signature"],
  [/could_not_be_decoded|payload_transaction$/, "malformed"],
  [/unsupported_scheme|network_mismatch/, "unsupported"],
  [/missing_fee_payer|fee_payer_not_managed|fee_payer_mismatch/, "requirements_mismatch"],
  [/duplicate_settlement/, "reused"],
  [/instruction|transfer|memo|signers|fee_payer_transferring/, "instructions"],
  [/transaction_failed|settlement_pending|post_settlement/, "settlement"],
];

function reasonOf(code: string | undefined, detail: string | undefined): RefusalReason {
  if (code !== undefined && /simulation_failed/.test(code)) return /BlockhashNotFound|blockhash not found/i.test(detail ?? "") ? "expired" : "simulation";
  for (const [re, reason] of LIBRARY_REASONS) if (code !== undefined && re.test(code)) return reason;
  return "simulation";
}

const WHY: Readonly<Record<RefusalReason, string>> = {
  missing: "payment required",
  malformed: "the payment is malformed",
  unsupported: "the payment is not one this server accepts",
  requirements_mismatch: "the payment's requirements or resource are not this tool's",
  amount: "the transfer does not pay the price",
  mint: "the transfer does not move USDC",
  recipient: "the transfer does not go to payTo's USDC account",
  signature: "a signature is missing or invalid",
  expired: "the transaction's blockhash has expired",
  instructions: "the transaction has instructions a payment may not have",
  simulation: "the transaction would fail",
  reused: "this payment was already presented",
  settlement: "the payment could not be settled",
};

const usdc = (atomic: bigint): string => {
  const s = atomic.toString().padStart(USDC_DECIMALS + 1, "0");
  return `${s.slice(0, -USDC_DECIMALS)}.${s.slice(-USDC_DECIMALS)}`.replace(/\.?0+$/, "");
};

export async function createPaymentGate(opts: GateOptions): Promise<PaymentGate> {
  const { config, db, clock } = opts;
  if (config.payTo === null) throw new Error("createPaymentGate needs X402_PAY_TO");
  const payTo = config.payTo;
  const network = config.network;
  const server = new x402ResourceServer(opts.facilitator).register(network.caip2, new ExactSvmScheme());
  const maxTimeoutSeconds = opts.maxTimeoutSeconds ?? 60;
  const amounts = Object.fromEntries(PAID_TOOLS.map((t) => [t, priceAtomic(config.prices[t])])) as Record<PaidTool, bigint>;
  const answerWindowMs = config.answerWindowMs;
  const holder = holderId(randomUUID());
  const ledger: ReconcileDeps = {
    db,
    clock,
    facilitator: opts.facilitator,
    probe: opts.probe,
    holder,
    network: network.caip2,
    claimGraceMs: opts.claimGraceMs ?? DEFAULT_CLAIM_GRACE_MS,
    answerWindowMs,
    ...(opts.metrics === undefined ? {} : { metrics: opts.metrics }),
    ...(opts.log === undefined ? {} : { log: opts.log }),
  };
  if (opts.metrics !== undefined) opts.metrics.owedSource = () => countOwed(db, clock.now() - answerWindowMs);

  // Reconciliation: once at start (awaited by startPayments), then at most every PASS_EVERY_MS while payments come in.
  let lastPass = Number.NEGATIVE_INFINITY;
  let passing: Promise<void> | null = null;
  const pass = (): Promise<void> =>
    (passing ??= reconcilePass(ledger)
      .then(
        () => undefined,
        (e: unknown) => opts.log?.("warn", "x402 reconciliation pass failed; it runs again later", { error: e instanceof Error ? e.message : String(e) }),
      )
      .finally(() => {
        lastPass = clock.now();
        passing = null;
      }));
  /** Keys this process is settling right now (a `settling` row not in here is unfinished: the chain decides). */
  const settling = new Set<string>();
  const maybePass = (): void => {
    if (clock.now() - lastPass >= PASS_EVERY_MS) void pass();
  };

  // The facilitator's capabilities (its fee payer) are read once; a remote facilitator that does not answer at start
  // is asked again at the next call.
  let ready: Promise<void> | null = null;
  const init = (): Promise<void> => {
    if (ready === null) {
      const attempt = withTrouble(() => server.initialize()).then((r) => {
        if ("error" in r) throw r.error instanceof Error ? r.error : new Error(String(r.error));
      });
      ready = attempt;
      attempt.catch(() => {
        if (ready === attempt) ready = null;
      });
    }
    return ready;
  };
  init().catch((e: unknown) => opts.log?.("warn", "x402 facilitator not reachable yet; paid tools answer unavailable until it is", { error: e instanceof Error ? e.message : String(e) }));

  const cache = new Map<PaidTool, PaymentRequirements[]>();
  async function requirements(tool: PaidTool): Promise<PaymentRequirements[]> {
    const known = cache.get(tool);
    if (known !== undefined) return known;
    await init();
    const reqs = await server.buildPaymentRequirements({ scheme: "exact", payTo, network: network.caip2, price: { amount: amounts[tool].toString(), asset: network.usdcMint }, maxTimeoutSeconds });
    cache.set(tool, reqs);
    return reqs;
  }

  const unavailable = (message: string): Unavailable => {
    opts.metrics?.unavailable.inc();
    opts.log?.("warn", "x402 payment unavailable", { message });
    return { kind: "unavailable", message };
  };

  async function challenge(tool: PaidTool, resource: ResourceInfo, error: string): Promise<PaymentRequired | Unavailable> {
    try {
      return await server.createPaymentRequiredResponse(await requirements(tool), resource, error);
    } catch (e) {
      return unavailable(`the x402 facilitator is not reachable (${e instanceof Error ? e.message : String(e)})`);
    }
  }

  async function refuse(tool: PaidTool, resource: ResourceInfo, reason: RefusalReason, detail: string, settlement?: SettleResponse): Promise<Refused | Unavailable> {
    opts.metrics?.refusals.inc({ reason });
    const message = `${WHY[reason]}: ${detail}`;
    const pr = await challenge(tool, resource, `${reason}: ${message}`);
    return "kind" in pr ? pr : { kind: "refused", reason, message, paymentRequired: pr, ...(settlement === undefined ? {} : { settlement }) };
  }

  /** The SettleResponse of a failed settlement, as the transports send it back (`success: false`). */
  const failedSettlement = (errorReason: string, s: Partial<SettleResponse> = {}): SettleResponse => ({
    success: false,
    errorReason,
    ...(s.errorMessage === undefined ? {} : { errorMessage: s.errorMessage }),
    ...(s.payer === undefined ? {} : { payer: s.payer }),
    transaction: s.transaction ?? "",
    network: network.caip2,
  });

  /**
   * A payment presented again (its claim failed): a settled one bought for this same request, within the answer
   * window, is owed its answer; otherwise what the client should do, by the ledger's state of the payment. One that
   * another request holds (`claimed`) may still be given back (that request answers `unavailable`), so the client
   * waits for that answer and may send the same payment again; one being settled gets its answer once settled (a
   * settlement another process left unfinished is finished here, by the chain); only a finished one (settled for
   * another request or long ago, refused, failed, unconfirmed) asks for a new one.
   */
  async function presentedAgain(tool: PaidTool, key: string, request: string): Promise<Owed | { kind: "taken"; why: string }> {
    let known: PaymentRecord | undefined = await paymentByKey(db, key);
    if (known?.status === "settling" && !settling.has(key)) {
      await finishSettling(ledger, known);
      known = await paymentByKey(db, key);
    }
    const taken = (why: string) => ({ kind: "taken" as const, why });
    if (known === undefined) return taken("another request had it and gave it back just now (it answered unavailable): send this same payment again");
    if (known.status === "claimed") {
      return taken("another request is handling this payment right now: wait for that request's answer; if it answered unavailable, send this same payment again (no new payment is needed)");
    }
    if (known.status === "settling") return taken("this payment is being settled right now: send this same payment again in a few seconds to get its answer (no new payment is needed)");
    if ((known.status === "settled" || known.status === "served") && known.answer !== null && known.settlement !== null) {
      if (known.request !== request) return taken("a payment pays for one call, and this one bought the answer to another request (other arguments or query): create a new one for this call");
      if (clock.now() - known.created_at <= answerWindowMs) {
        opts.metrics?.served.inc({ tool });
        return { kind: "owed", tool, key, answer: JSON.parse(known.answer) as unknown, settlement: JSON.parse(known.settlement) as SettleResponse };
      }
    }
    return taken(`a payment pays for one call, and this one is finished (${known.status}): create a new one for this call`);
  }

  /** Which field of `accepted` differs from the requirements (the most specific reason). */
  function mismatch(p: PaymentPayload, reqs: readonly PaymentRequirements[]): { reason: RefusalReason; detail: string } {
    const r = reqs[0]!;
    const a = p.accepted;
    if (a.asset !== r.asset) return { reason: "mint", detail: `accepted.asset is ${a.asset}, this tool is paid in USDC (${r.asset})` };
    if (a.payTo !== r.payTo) return { reason: "recipient", detail: `accepted.payTo is ${a.payTo}, this tool is paid to ${r.payTo}` };
    if (a.amount !== r.amount) return { reason: "amount", detail: `accepted.amount is ${a.amount}, the price is ${r.amount} (${usdc(BigInt(r.amount))} USDC)` };
    return { reason: "requirements_mismatch", detail: "accepted does not repeat the PaymentRequired's accepts entry (maxTimeoutSeconds, extra.feePayer): pay exactly what it lists" };
  }

  /** The settlement of a payment whose answer is stored (`settling`). */
  async function settleStored(t: VerifiedTicket, resource: ResourceInfo): Promise<Settled | Refused | Unavailable> {
    const r = await withTrouble(() => opts.facilitator.settle(t.payload, t.requirements));
    const pending = "error" in r || r.value.errorReason === "settlement_pending";
    if (pending) {
      // Sent, or perhaps sent, and not confirmed: it may still land. The row stays `settling` with its answer; the
      // chain decides at the next look (this payment presented again, or a reconciliation pass).
      const why = `${"error" in r ? (r.trouble.unavailable ?? "the settlement got no answer") : "the settlement was not confirmed in time"}; if it lands, this same payment gets its answer: send it again in a few seconds`;
      return refuse(t.tool, resource, "settlement", why, failedSettlement("error" in r ? "settle_unanswered" : "settlement_pending", "error" in r ? { errorMessage: why } : r.value));
    }
    const s = r.value;
    if (!s.success) {
      const sent = s.transaction !== "";
      if (!sent && r.trouble.unavailable !== null) {
        if (await releasePayment(db, t.key, "settling")) opts.metrics?.released.inc({ why: "unavailable" });
        return unavailable(r.trouble.unavailable);
      }
      const reason = reasonOf(s.errorReason, s.errorMessage);
      const status = sent ? "failed" : "refused";
      await finishPayment(db, t.key, { status, at: clock.now(), payer: s.payer ?? null, tx_sig: sent ? s.transaction : null, reason: s.errorReason ?? reason });
      return refuse(t.tool, resource, reason, `${s.errorReason ?? "settlement failed"}${s.errorMessage === undefined ? "" : ` (${s.errorMessage})`}${sent ? `; transaction ${s.transaction}` : ""}`, failedSettlement(s.errorReason ?? reason, s));
    }
    await finishPayment(db, t.key, { status: "settled", at: clock.now(), payer: s.payer ?? t.payer, tx_sig: s.transaction, settlement: JSON.stringify(s) });
    opts.metrics?.paidCalls.inc({ tool: t.tool });
    opts.metrics?.receivedUsdc.inc({ tool: t.tool }, Number(t.amount) / 10 ** USDC_DECIMALS);
    opts.log?.("info", "x402 payment settled", { tool: t.tool, payer: s.payer ?? t.payer, tx: s.transaction, usdc: usdc(t.amount) });
    return { kind: "settled", settlement: s };
  }


  return {
    prices: config.prices,

    async required(tool, resource, error = "payment required") {
      opts.metrics?.refusals.inc({ reason: "missing" });
      return challenge(tool, resource, `missing: ${error}: call again with an x402 payment of ${config.prices[tool]} USDC`);
    },

    refuse,

    async verify(tool, resource, payment, requestText) {
      maybePass();
      const request = createHash("sha256").update(requestText).digest("hex");
      const read = readPayment(payment);
      if (!read.ok) return refuse(tool, resource, read.reason, read.message);
      const p = read.payload;
      if (p.accepted.scheme !== "exact" || p.accepted.network !== network.caip2) {
        return refuse(tool, resource, "unsupported", `scheme ${p.accepted.scheme} on ${p.accepted.network}; this server takes scheme exact on ${network.caip2} (${network.name})`);
      }
      // A payment pays for the resource it was challenged for: one made for another tool or route (even of the same
      // price) is refused before it is claimed, so it still pays for its own resource.
      if (p.resource?.url !== resource.url) {
        const made = p.resource === undefined ? "the payment does not name the resource it pays for" : `the payment was made for ${p.resource.url}`;
        return refuse(tool, resource, "requirements_mismatch", `${made}, this is ${resource.url}: pay this resource's own challenge`);
      }
      let reqs: PaymentRequirements[];
      try {
        reqs = await requirements(tool);
      } catch (e) {
        return unavailable(`the x402 facilitator is not reachable (${e instanceof Error ? e.message : String(e)})`);
      }
      const match = server.findMatchingRequirements(reqs, p);
      if (match === undefined) {
        const m = mismatch(p, reqs);
        return refuse(tool, resource, m.reason, m.detail);
      }
      // The ledger key is the x402 Solana scheme's own duplicate key: the SHA-256 of the transaction message.
      let key: string;
      try {
        const wire = p.payload["transaction"];
        if (typeof wire !== "string") throw new Error("no transaction");
        key = transactionMessageHash(getTransactionDecoder().decode(getBase64Encoder().encode(wire)));
      } catch {
        return refuse(tool, resource, "malformed", "payload.transaction is not a base64 Solana transaction");
      }
      const amount = amounts[tool];
      if (!(await claimPayment(db, { key, tool, network: network.caip2, amount, at: clock.now(), holder }))) {
        const again = await presentedAgain(tool, key, request);
        return again.kind === "owed" ? again : refuse(tool, resource, "reused", again.why);
      }
      const r = await withTrouble(() => opts.facilitator.verify(p, match));
      if (r.trouble.unavailable !== null || "error" in r) {
        if (await releasePayment(db, key)) opts.metrics?.released.inc({ why: "unavailable" });
        if ("error" in r && r.trouble.unavailable === null) opts.log?.("error", "x402 verification failed unexpectedly", { error: r.error instanceof Error ? r.error.message : String(r.error) });
        return unavailable(r.trouble.unavailable ?? "the payment could not be verified right now");
      }
      const v = r.value;
      if (!v.isValid) {
        const reason = reasonOf(v.invalidReason, v.invalidMessage);
        await finishPayment(db, key, { status: "refused", at: clock.now(), payer: v.payer ?? null, reason: v.invalidReason ?? reason });
        return refuse(tool, resource, reason, `${v.invalidReason ?? "invalid"}${v.invalidMessage === undefined ? "" : ` (${v.invalidMessage})`}`);
      }
      const ticket: VerifiedTicket = { kind: "verified", tool, key, payer: v.payer ?? "", request, payload: p, requirements: match, amount };
      return ticket;
    },

    async release(ticket) {
      if (await releasePayment(db, ticket.key)) opts.metrics?.released.inc({ why: "work_failed" });
    },

    async settle(ticket, resource, answer): Promise<Settled | Refused | Unavailable> {
      const t = ticket as VerifiedTicket;
      // The answer first: once the settlement may be sent, a crash must leave what the next start needs to owe it.
      let txSig: string | null = null;
      try {
        txSig = await opts.probe.transactionId(t.payload);
      } catch {
        txSig = null; // not readable: the chain is asked by the settlement's own answer only
      }
      const stored = await recordAnswer(db, t.key, {
        request: t.request,
        answer: JSON.stringify(answer),
        payload: JSON.stringify(t.payload),
        requirements: JSON.stringify(t.requirements),
        payer: t.payer,
        tx_sig: txSig,
        at: clock.now(),
      });
      if (!stored) return unavailable("this payment's claim was given back while the work ran (it was idle too long); nothing was charged");
      settling.add(t.key);
      try {
        return await settleStored(t, resource);
      } finally {
        settling.delete(t.key);
      }
    },

    async delivered(paid) {
      try {
        await markServed(db, paid.key, clock.now());
      } catch (e) {
        // The answer goes out all the same; the row stays `settled` (owed), which only means it may be served again.
        opts.log?.("warn", "x402 payment could not be marked served", { key: paid.key, error: e instanceof Error ? e.message : String(e) });
      }
    },

    reconcile: pass,
  };
}
