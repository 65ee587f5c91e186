/**
 * Prometheus counters of the paid tools (served by the /metrics listener): paid calls, USDC received and refusals by
 * reason. Created unregistered, so the gate can exist before the API's registry does; `registerX402Metrics` adds them.
 */
import { Counter, type Registry } from "prom-client";
import { PAID_TOOLS } from "./config.ts";
import { REFUSAL_REASONS } from "./types.ts";

export interface X402Metrics {
  /** Settled payments (calls whose result went out), by tool (a paid tool, or an /x402 route's tool). */
  readonly paidCalls: Counter<"tool">;
  /** USDC received in settled payments, by tool. */
  readonly receivedUsdc: Counter<"tool">;
  /** Payments refused, by reason (REFUSAL_REASONS); `missing` counts unpaid calls answered with the challenge. */
  readonly refusals: Counter<"reason">;
  /** Calls answered "unavailable" (the RPC or facilitator did not answer; nothing charged). */
  readonly unavailable: Counter;
}

export function x402Metrics(): X402Metrics {
  const m: X402Metrics = {
    paidCalls: new Counter({ name: "peg_oracle_x402_paid_calls_total", help: "Paid agent-tool calls whose x402 payment was settled, by tool", labelNames: ["tool"], registers: [] }),
    receivedUsdc: new Counter({ name: "peg_oracle_x402_received_usdc_total", help: "USDC received through settled x402 payments, by tool", labelNames: ["tool"], registers: [] }),
    refusals: new Counter({ name: "peg_oracle_x402_refusals_total", help: "x402 payments refused (or missing), by reason", labelNames: ["reason"], registers: [] }),
    unavailable: new Counter({ name: "peg_oracle_x402_unavailable_total", help: "Paid calls answered unavailable because the Solana RPC or the facilitator did not answer (nothing charged)", registers: [] }),
  };
  // Every series exists from the start (a rate over a series that appears later starts from nothing).
  for (const tool of PAID_TOOLS) {
    m.paidCalls.inc({ tool }, 0);
    m.receivedUsdc.inc({ tool }, 0);
  }
  for (const reason of Object.keys(REFUSAL_REASONS)) m.refusals.inc({ reason }, 0);
  return m;
}

export function registerX402Metrics(m: X402Metrics, registry: Registry): void {
  registry.registerMetric(m.paidCalls);
  registry.registerMetric(m.receivedUsdc);
  registry.registerMetric(m.refusals);
  registry.registerMetric(m.unavailable);
}
