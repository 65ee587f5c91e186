/** The paid half of the agent tools in a serving process (loaded only with X402_PAY_TO): the gate and /x402/* routes. */
import type { Clock } from "../clock.ts";
import type { Config } from "../config.ts";
import type { Route } from "../http/router.ts";
import type { SecretBox } from "../secret-box.ts";
import type { Executor } from "../store/index.ts";
import { startPayments, type PaymentGate, type X402Metrics } from "../x402/index.ts";
import type { ApiCaller } from "./api.ts";
import type { TransitionEvents } from "./events.ts";
import { x402Routes } from "./x402-routes.ts";

export interface PaidServiceOptions {
  readonly config: Config;
  readonly db: Executor;
  readonly secrets: SecretBox;
  readonly clock: Clock;
  readonly log: (level: "info" | "warn" | "error", msg: string, fields?: Record<string, unknown>) => void;
}

export interface PaidSetup {
  readonly gate: PaymentGate;
  readonly metrics: X402Metrics;
  routes(deps: { api: ApiCaller; events: TransitionEvents; baseUrl: string }): Route[];
}

export async function preparePaid(opts: PaidServiceOptions): Promise<PaidSetup | null> {
  const { config } = opts;
  const payments = await startPayments({
    config: config.x402,
    rpcUrl: config.sources.solanaRpcUrl,
    keypairPath: config.anchor.keypairPath,
    db: opts.db,
    secrets: opts.secrets,
    clock: opts.clock,
    log: opts.log,
  });
  if (payments === null) return null;
  return { gate: payments.gate, metrics: payments.metrics, routes: (deps) => x402Routes({ gate: payments.gate, ...deps }) };
}
