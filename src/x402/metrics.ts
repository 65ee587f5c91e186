/**
 * Prometheus series of the paid tools (served by the /metrics listener): paid calls, USDC received, refusals by
 * reason, and the ledger's debts (answers owed, served again, claims released, what reconciliation found). Created
 * unregistered, so the gate can exist before the API's registry does; `registerX402Metrics` adds them.
 */
import { Counter, Gauge, type Registry } from "prom-client";
import { PAID_TOOLS } from "./config.ts";
import { REFUSAL_REASONS } from "./types.ts";

/** Why a claim was given back (nothing charged). */
export const RELEASE_REASONS = ["unavailable", "work_failed", "reconciled"] as const;
/** What reconciliation made of a payment a crash left unfinished. */
export const RECONCILE_OUTCOMES = ["owed", "released", "failed", "unconfirmed"] as const;

export interface X402Metrics {
  /** Settled payments (calls whose result went out), by tool (a paid tool, or an /x402 route's tool). */
  readonly paidCalls: Counter<"tool">;
  /** USDC received in settled payments, by tool. */
  readonly receivedUsdc: Counter<"tool">;
  /** Payments refused, by reason (REFUSAL_REASONS); `missing` counts unpaid calls answered with the challenge. */
  readonly refusals: Counter<"reason">;
  /** Calls answered "unavailable" (the RPC or facilitator did not answer; nothing charged). */
  readonly unavailable: Counter;
  /** Settled payments whose answer is owed (settled, not handed out: a crash or a lost connection), in the window. */
  readonly owed: Gauge;
  /** Owed (or already handed out) answers served again to the same payment presented again, by tool. */
  readonly served: Counter<"tool">;
  /** Claims given back, nothing charged, by why (RELEASE_REASONS). */
  readonly released: Counter<"why">;
  /** Payments a crash left claimed or settling, by what reconciliation made of them (RECONCILE_OUTCOMES). */
  readonly reconciled: Counter<"outcome">;
  /** Where the owed gauge reads from (set by the gate: a count in the ledger). */
  owedSource: (() => Promise<number>) | null;
}

export function x402Metrics(): X402Metrics {
  const m: X402Metrics = {
    paidCalls: new Counter({ name: "peg_oracle_x402_paid_calls_total", help: "Paid agent-tool calls whose x402 payment was settled, by tool", labelNames: ["tool"], registers: [] }),
    receivedUsdc: new Counter({ name: "peg_oracle_x402_received_usdc_total", help: "USDC received through settled x402 payments, by tool", labelNames: ["tool"], registers: [] }),
    refusals: new Counter({ name: "peg_oracle_x402_refusals_total", help: "x402 payments refused (or missing), by reason", labelNames: ["reason"], registers: [] }),
    unavailable: new Counter({ name: "peg_oracle_x402_unavailable_total", help: "Paid calls answered unavailable because the Solana RPC or the facilitator did not answer (nothing charged)", registers: [] }),
    owed: new Gauge({
      name: "peg_oracle_x402_owed_answers",
      help: "Settled x402 payments whose answer has not been handed out (a crash or a dropped connection), within the answer window: the same payment presented again gets it",
      registers: [],
      async collect() {
        if (m.owedSource !== null) this.set(await m.owedSource());
      },
    }),
    served: new Counter({ name: "peg_oracle_x402_owed_served_total", help: "Answers of settled x402 payments served again to the same payment presented again, by tool", labelNames: ["tool"], registers: [] }),
    released: new Counter({ name: "peg_oracle_x402_released_total", help: "x402 payment claims given back with nothing charged, by why (unavailable, work_failed, reconciled)", labelNames: ["why"], registers: [] }),
    reconciled: new Counter({ name: "peg_oracle_x402_reconciled_total", help: "x402 payments a crash left unfinished, by what reconciliation made of them (owed, released, failed, unconfirmed)", labelNames: ["outcome"], registers: [] }),
    owedSource: null,
  };
  // Every series exists from the start (a rate over a series that appears later starts from nothing).
  for (const tool of PAID_TOOLS) {
    m.paidCalls.inc({ tool }, 0);
    m.receivedUsdc.inc({ tool }, 0);
    m.served.inc({ tool }, 0);
  }
  for (const reason of Object.keys(REFUSAL_REASONS)) m.refusals.inc({ reason }, 0);
  for (const why of RELEASE_REASONS) m.released.inc({ why }, 0);
  for (const outcome of RECONCILE_OUTCOMES) m.reconciled.inc({ outcome }, 0);
  return m;
}

export function registerX402Metrics(m: X402Metrics, registry: Registry): void {
  registry.registerMetric(m.paidCalls);
  registry.registerMetric(m.receivedUsdc);
  registry.registerMetric(m.refusals);
  registry.registerMetric(m.unavailable);
  registry.registerMetric(m.owed);
  registry.registerMetric(m.served);
  registry.registerMetric(m.released);
  registry.registerMetric(m.reconciled);
}
