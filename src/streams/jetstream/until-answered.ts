import type { LogFn } from "./sample-recorder.ts";

/**
 * Whether a NATS or JetStream failure says "not now" rather than "no": a request that timed out (a loaded or
 * re-electing cluster, a link that stalls), nobody listening yet (JetStream's API before the meta group has a
 * leader), or JetStream's own "temporarily unavailable" (error 10008, during an election).
 */
export function isTransientNatsError(e: unknown): boolean {
  if (!(e instanceof Error)) return false;
  if (e.name === "TimeoutError" || e.name === "NoRespondersError" || e.name === "JetStreamNotEnabled") return true;
  const api = (e as { api_error?: { err_code?: number } }).api_error;
  if (api?.err_code === 10008) return true;
  return /timeout|temporarily unavailable|no responders/i.test(e.message);
}

export interface UntilAnsweredOptions {
  readonly log?: LogFn;
  /** Give up (rethrow the last failure) once this long has passed since the first try. Default 60 s. */
  readonly budgetMs?: number;
  /** First wait between tries, doubled up to 2 s. Default 250 ms. */
  readonly firstWaitMs?: number;
}

/**
 * Runs `step` (an idempotent start-up step against NATS) until it succeeds, trying again after a transient failure
 * (`isTransientNatsError`) for up to `budgetMs`; any other failure, or the last one, is thrown. A start-up under load
 * or during a cluster election otherwise fails on the first JetStream request that times out, and the whole process
 * exits (bench:cluster lost engines and API processes so: issue 26).
 */
export async function untilAnswered<T>(what: string, step: () => Promise<T>, o: UntilAnsweredOptions = {}): Promise<T> {
  const budget = o.budgetMs ?? 60_000;
  const started = performance.now();
  let wait = o.firstWaitMs ?? 250;
  for (let attempt = 1; ; attempt++) {
    try {
      return await step();
    } catch (e) {
      if (!isTransientNatsError(e) || performance.now() - started + wait > budget) throw e;
      o.log?.("warn", `${what}: NATS did not answer; trying again`, { attempt, error: e instanceof Error ? e.message : String(e) });
      await new Promise((r) => setTimeout(r, wait));
      wait = Math.min(wait * 2, 2_000);
    }
  }
}
