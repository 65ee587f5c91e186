/**
 * HTTP helpers shared by the polling adapters: URL building, Retry-After, a token-bucket request budget, a capped
 * body reader and `fetchText`, which applies the retry policy.
 *
 * Retry policy of `fetchText` (one request in flight per caller): 429 waits the server's Retry-After (or the backoff
 * when absent), capped at `maxRetryAfterMs`, and holds the shared budget for that long so no other request of the
 * same upstream goes out meanwhile; 5xx, timeouts and network failures back off exponentially; other statuses are
 * not retried. Each failed attempt counts in `errors`, each new attempt in `retries`. After `maxAttempts` it gives
 * up for this cycle (returns null): the next poll asks again.
 */
import type { SchedulerLike } from "rxjs";
import { redactUrlText } from "../../../config.ts";
import { HttpStatusError, MalformedPayloadError, PayloadTooLargeError, describeError } from "./errors.ts";
import { backoffDelay, sleep, type ResolvedOptions } from "./source.ts";

/**
 * `base` + `path` + query, keeping any query already on the base URL (providers put API keys there, e.g. Sanctum's
 * `?apiKey=`, a Helius RPC's `?api-key=`). Repeated keys are appended in order (`lst=a&lst=b`).
 */
export function endpointUrl(base: string, path: string, query: ReadonlyArray<readonly [string, string]> = []): string {
  const url = new URL(base);
  url.pathname = url.pathname.replace(/\/+$/, "") + path;
  for (const [k, v] of query) url.searchParams.append(k, v);
  return url.toString();
}

/** For log lines: no credentials, no query string (which may carry a key). */
export function safeUrl(url: string): string {
  return redactUrlText(url);
}

/**
 * Retry-After as milliseconds from `nowMs`: delay-seconds (`120`) or an HTTP-date. Null when absent or unreadable;
 * a date in the past is 0.
 */
export function parseRetryAfter(value: string | null, nowMs: number): number | null {
  if (value === null) return null;
  const text = value.trim();
  if (/^\d{1,9}$/.test(text)) return Number(text) * 1000;
  if (!/[a-z]/i.test(text)) return null; // "1.5" or "-3" are neither form
  const at = Date.parse(text);
  return Number.isNaN(at) ? null : Math.max(0, at - nowMs);
}

/** Options of a `RequestBudget`. */
export interface BudgetOptions {
  /** Sustained rate, requests per minute, > 0. */
  readonly perMinute: number;
  /** Bucket size: requests that may go out back to back after a quiet period, >= 1. Default 1 (evenly spaced). */
  readonly burst?: number;
}

/**
 * A token bucket on the scheduler's clock: `perMinute` tokens per minute, at most `burst` stored. With the default
 * burst of 1, requests are spaced evenly at 60 000 / perMinute ms, which also respects a 60-second sliding window
 * (Jupiter's plans). `holdFor` empties the bucket for a while (after a 429). Several loops may share one budget.
 */
export class RequestBudget {
  readonly #perMs: number;
  readonly #burst: number;
  readonly #scheduler: SchedulerLike;
  #tokens: number;
  #at: number;
  #heldUntil = -Infinity;

  constructor(options: BudgetOptions, scheduler: SchedulerLike) {
    if (!(options.perMinute > 0)) throw new RangeError("perMinute must be > 0");
    const burst = options.burst ?? 1;
    if (!(burst >= 1)) throw new RangeError("burst must be >= 1");
    this.#perMs = options.perMinute / 60_000;
    this.#burst = burst;
    this.#scheduler = scheduler;
    this.#tokens = burst;
    this.#at = scheduler.now();
  }

  /** Waits for a token and takes it. False when `signal` aborted first. */
  async take(signal: AbortSignal): Promise<boolean> {
    for (;;) {
      if (signal.aborted) return false;
      const now = this.#scheduler.now();
      this.#tokens = Math.min(this.#burst, this.#tokens + (now - this.#at) * this.#perMs);
      this.#at = now;
      const held = this.#heldUntil - now;
      if (held <= 0 && this.#tokens >= 1) {
        this.#tokens -= 1;
        return true;
      }
      const refill = this.#tokens >= 1 ? 0 : Math.ceil((1 - this.#tokens) / this.#perMs);
      await sleep(Math.max(held, refill, 1), this.#scheduler, signal);
    }
  }

  /** No request goes out for `ms` (a 429's Retry-After), and the bucket restarts empty. */
  holdFor(ms: number): void {
    const now = this.#scheduler.now();
    this.#heldUntil = Math.max(this.#heldUntil, now + ms);
    this.#tokens = 0;
    this.#at = Math.max(now, this.#heldUntil);
  }
}

/**
 * Reads a body as UTF-8 text, refusing more than `maxBytes` (PayloadTooLargeError) and invalid UTF-8
 * (MalformedPayloadError).
 */
export async function readBodyCapped(res: Response, maxBytes: number): Promise<string> {
  const declared = res.headers.get("content-length");
  if (declared !== null && /^\d+$/.test(declared) && Number(declared) > maxBytes) {
    await res.body?.cancel();
    throw new PayloadTooLargeError(maxBytes);
  }
  if (res.body === null) return "";
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel();
      throw new PayloadTooLargeError(maxBytes);
    }
    chunks.push(value);
  }
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(Buffer.concat(chunks));
  } catch {
    throw new MalformedPayloadError("body is not valid UTF-8");
  }
}

/** A request as `fetchText` sends it. */
export interface TextRequest {
  readonly url: string;
  readonly method?: "GET" | "POST";
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string;
  /** Names the request in log lines (`price batch 2/3`), instead of the URL. */
  readonly what: string;
}

/** Retry limits of `fetchText`. */
export interface RetryLimits {
  /** Attempts per request within one cycle, >= 1. Default 3. */
  readonly maxAttempts?: number;
  /** Longest Retry-After honoured, ms; a longer one is cut to this. Default 120 000. */
  readonly maxRetryAfterMs?: number;
  /** Largest body accepted, bytes. Default 4 MiB. */
  readonly maxBodyBytes?: number;
}

/**
 * GET/POST with the retry policy above. Returns the body of a 2xx answer, or null when the request was given up
 * (already counted and logged) or the subscription ended. Never throws.
 */
export async function fetchText(
  req: TextRequest,
  o: ResolvedOptions,
  budget: RequestBudget | null,
  signal: AbortSignal,
  limits: RetryLimits = {},
): Promise<string | null> {
  const maxAttempts = limits.maxAttempts ?? 3;
  const maxRetryAfterMs = limits.maxRetryAfterMs ?? 120_000;
  const maxBodyBytes = limits.maxBodyBytes ?? 4 * 1024 * 1024;
  for (let attempt = 0; ; attempt++) {
    if (budget !== null && !(await budget.take(signal))) return null;
    if (signal.aborted) return null;
    let delay: number;
    try {
      const res = await fetch(req.url, {
        method: req.method ?? "GET",
        headers: { accept: "application/json", ...req.headers },
        ...(req.body === undefined ? {} : { body: req.body }),
        signal: AbortSignal.any([signal, AbortSignal.timeout(o.requestTimeoutMs)]),
      });
      if (res.ok) return await readBodyCapped(res, maxBodyBytes);
      await res.body?.cancel();
      const err = new HttpStatusError(res.status, parseRetryAfter(res.headers.get("retry-after"), o.clock.now()));
      o.counters.errors++;
      if (res.status === 429) {
        delay = Math.min(err.retryAfterMs ?? backoffDelay(attempt, o.backoff, o.random), maxRetryAfterMs);
        budget?.holdFor(delay);
        o.log("warn", "rate limited by upstream", { what: req.what, status: 429, retryAfterMs: err.retryAfterMs, waitMs: delay });
      } else if (res.status >= 500) {
        delay = Math.min(err.retryAfterMs ?? backoffDelay(attempt, o.backoff, o.random), maxRetryAfterMs);
        o.log("warn", "upstream server error", { what: req.what, status: res.status, waitMs: delay });
      } else {
        o.log("error", "request refused by upstream, not retried", { what: req.what, status: res.status, url: safeUrl(req.url) });
        return null;
      }
    } catch (e) {
      if (signal.aborted) return null;
      if (e instanceof PayloadTooLargeError || e instanceof MalformedPayloadError) {
        o.counters.malformed++;
        o.log("warn", "response body dropped", { what: req.what, error: describeError(e) });
        return null;
      }
      o.counters.errors++;
      delay = backoffDelay(attempt, o.backoff, o.random);
      o.log("warn", "request failed", { what: req.what, error: describeError(e), waitMs: delay });
    }
    if (attempt + 1 >= maxAttempts) {
      o.log("warn", "giving up until the next poll", { what: req.what, attempts: attempt + 1 });
      return null;
    }
    o.counters.retries++;
    await sleep(delay, o.scheduler, signal);
  }
}
