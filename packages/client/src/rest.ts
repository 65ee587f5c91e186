/**
 * The typed REST client: openapi-fetch over the types generated from the service's OpenAPI document, with one
 * difference in use: a call returns the success body, and every failure throws an `ApiError`. Idempotent calls are
 * retried (retry.ts), and the two list endpoints can be walked as one sequence of rows (paginate.ts).
 */
import createClient, { type Client, type FetchResponse, type MaybeOptionalInit } from "openapi-fetch";
import { ApiError, apiErrorFromResponse } from "./errors.ts";
import type { paths } from "./generated/schema.ts";
import { alertRows, auditRows, type AlertFilters, type AlertRow, type AuditFilters, type AuditRow, type PageOptions } from "./paginate.ts";
import { IDEMPOTENT_METHODS, fetchWithRetry, retryPolicy, type RetryOptions, type Transport } from "./retry.ts";
import type { StreamTimers } from "./stream-options.ts";

type Method = "get" | "put" | "post" | "patch" | "delete";

/** The API paths that have an operation for `M`. */
export type PathsWith<M extends Method> = { [P in keyof paths]: paths[P] extends { [K in M]: object } ? P : never }[keyof paths];

type RequiredKeys<T> = { [K in keyof T]-?: object extends Pick<T, K> ? never : K }[keyof T];
/** The init argument is optional exactly when the operation has no required parameter or body. */
type InitArgs<I> = [RequiredKeys<I>] extends [never] ? [init?: I] : [init: I];
type Operation<P extends keyof paths, M extends Method> = paths[P] extends { [K in M]: infer O extends Record<string | number, unknown> } ? O : never;
type Init<P extends keyof paths, M extends Method> = MaybeOptionalInit<{ [K in M]: Operation<P, M> }, M> & CallOptions;

/**
 * What a single call may add to openapi-fetch's init (`params`, `body`, `parseAs`, `headers`, `signal`, ...).
 *
 * @example
 * ```ts
 * const ac = new AbortController();
 * setTimeout(() => ac.abort(), 2_000);                        // give up after 2 s, retry waits included
 * const card = await client.get("/v1/assets/{symbol}", { params: { path: { symbol: "USDC" } }, signal: ac.signal, retry: { retries: 1 } });
 * await client.post("/v1/auth/logout", { idempotent: true });  // logging out twice does no harm: retry it
 * ```
 */
export interface CallOptions {
  /** This call's retries: `false` for none, or options over the client's (`PegClientOptions.retry`). */
  readonly retry?: RetryOptions | false;
  /**
   * Whether repeating the call is harmless, so it may be retried. Default: by method (GET, HEAD, OPTIONS, PUT and
   * DELETE yes; POST and PATCH no). A DELETE retried after its answer was lost may answer 404: it is gone either way.
   */
  readonly idempotent?: boolean;
  /**
   * Cancels the call: the request in flight, or the wait before a retry. It then fails with `ApiError`
   * `network_error` whose `cause` is the signal's reason.
   */
  readonly signal?: AbortSignal | null;
}

/** The success body of `M P` (for `parseAs: "text"` a string); `undefined` for an operation that answers no content. */
export type Success<P extends keyof paths, M extends Method, I = object> =
  [NonNullable<FetchResponse<Operation<P, M>, I, `${string}/${string}`>["data"]>] extends [never]
    ? undefined
    : NonNullable<FetchResponse<Operation<P, M>, I, `${string}/${string}`>["data"]>;

export interface PegClientOptions {
  /** The service's base URL, e.g. `http://localhost:8080` (`npm start`'s default). */
  readonly baseUrl: string;
  /**
   * Session token (JWT from `/v1/auth/messenger` or `/v1/auth/magic/consume`) sent as `Authorization: Bearer` on
   * every call; a function is asked before each call (return null for none). Only the `/v1/me/*` routes need it.
   */
  readonly token?: string | (() => string | null | undefined);
  /** Milliseconds before an attempt is abandoned with `network_error` (default 10,000; 0 for none); each retry has its own. */
  readonly timeoutMs?: number;
  /**
   * Retries of idempotent calls on no answer, 429, 502, 503 and 504 (default `{ retries: 3, baseMs: 500, maxMs:
   * 10_000, maxRetryAfterMs: 60_000 }`: waits of 0.25-0.5 s, 0.5-1 s, 1-2 s, or what `Retry-After` asks); `false`
   * for none. Per call: `CallOptions`.
   */
  readonly retry?: RetryOptions | false;
  /** The fetch to use (default `globalThis.fetch`). */
  readonly fetch?: (request: Request) => Promise<Response>;
  /** Headers sent on every call. */
  readonly headers?: Readonly<Record<string, string>>;
  /** Timers of the retry waits (default the global ones; tests drive them on a simulated clock). */
  readonly timers?: StreamTimers;
  /** Epoch-ms clock, to read a `Retry-After` HTTP date (default `Date.now`). */
  readonly now?: () => number;
  /** Uniform [0, 1) for the backoff jitter (default `Math.random`). */
  readonly random?: () => number;
}

const globalTimers: StreamTimers = {
  setTimeout: (fn, ms) => globalThis.setTimeout(fn, ms),
  clearTimeout: (h) => globalThis.clearTimeout(h as ReturnType<typeof setTimeout>),
};

/**
 * The service's REST API, typed from its OpenAPI document (`packages/client/src/generated/schema.ts`): paths,
 * parameters, bodies and answers are checked by the compiler. Decimals stay strings (see `parseDecimal`).
 *
 * @example
 * ```ts
 * const client = new PegClient({ baseUrl: "http://localhost:8080" });
 * const card = await client.get("/v1/assets/{symbol}", { params: { path: { symbol: "USDC" } } });
 * console.log(card.state, card.discount);                   // "PEGGED" "0.0001…" (a string, exact)
 * const alerts = await client.get("/v1/alerts", { params: { query: { limit: 10 } } });
 * for await (const row of client.auditLog({ asset: "USDC" }, { max: 500 })) console.log(row.id, row.to_state);
 * ```
 */
export class PegClient {
  /** The underlying openapi-fetch client (answers `{ data, error, response }` instead of throwing); it retries like the methods. */
  readonly raw: Client<paths>;
  readonly #timeoutMs: number;
  readonly #retry: RetryOptions | false | undefined;
  readonly #transport: Transport;

  constructor(options: PegClientOptions) {
    this.#timeoutMs = options.timeoutMs ?? 10_000;
    this.#retry = options.retry;
    const baseFetch = options.fetch ?? ((request: Request) => globalThis.fetch(request));
    this.#transport = {
      fetch: baseFetch,
      timeoutMs: this.#timeoutMs,
      timers: options.timers ?? globalTimers,
      now: options.now ?? Date.now,
      random: options.random ?? Math.random,
    };
    this.raw = createClient<paths>({
      baseUrl: options.baseUrl.replace(/\/+$/, ""),
      ...(options.headers === undefined ? {} : { headers: { ...options.headers } }),
      fetch: (request) => fetchWithRetry(request, IDEMPOTENT_METHODS.has(request.method) ? retryPolicy(this.#retry) : null, this.#transport),
    });
    const token = options.token;
    if (token !== undefined) {
      this.raw.use({
        onRequest: ({ request }) => {
          const t = typeof token === "function" ? token() : token;
          if (t !== null && t !== undefined && t !== "") request.headers.set("authorization", `Bearer ${t}`);
          return request;
        },
      });
    }
  }

  /** `GET path`: the success body, or throws `ApiError`. */
  get<P extends PathsWith<"get">, I extends Init<P, "get">>(path: P, ...init: InitArgs<I>): Promise<Success<P, "get", I>> {
    return this.#call("GET", path, init[0]);
  }

  /** `POST path`: the success body (undefined for 204), or throws `ApiError`. */
  post<P extends PathsWith<"post">, I extends Init<P, "post">>(path: P, ...init: InitArgs<I>): Promise<Success<P, "post", I>> {
    return this.#call("POST", path, init[0]);
  }

  /** `PUT path`: the success body, or throws `ApiError`. */
  put<P extends PathsWith<"put">, I extends Init<P, "put">>(path: P, ...init: InitArgs<I>): Promise<Success<P, "put", I>> {
    return this.#call("PUT", path, init[0]);
  }

  /** `PATCH path`: the success body, or throws `ApiError`. */
  patch<P extends PathsWith<"patch">, I extends Init<P, "patch">>(path: P, ...init: InitArgs<I>): Promise<Success<P, "patch", I>> {
    return this.#call("PATCH", path, init[0]);
  }

  /** `DELETE path`: the success body (undefined for 204), or throws `ApiError`. */
  delete<P extends PathsWith<"delete">, I extends Init<P, "delete">>(path: P, ...init: InitArgs<I>): Promise<Success<P, "delete", I>> {
    return this.#call("DELETE", path, init[0]);
  }

  /**
   * Every transition of `/v1/alerts` (newest first, down to `since` if given), fetched page by page as the loop asks;
   * a transition published during the walk is not yielded twice. Each page is a GET, retried like one.
   *
   * @example
   * ```ts
   * for await (const a of client.alerts({ since: "2026-11-01T00:00:00Z" }, { max: 1_000 })) {
   *   console.log(a.detected_at, a.asset, a.from_state, "->", a.to_state);
   * }
   * ```
   */
  alerts(filters: AlertFilters = {}, options: PageOptions = {}): AsyncGenerator<AlertRow, void, undefined> {
    return alertRows((query, signal) => this.get("/v1/alerts", { params: { query }, signal: signal ?? null }), filters, options);
  }

  /**
   * Every receipt of the audit ledger matching `filters` (newest first), following `next_before` until the last page.
   * Each page is a GET, retried like one. `signal` stops the walk, the request in flight included.
   *
   * @example
   * ```ts
   * const signal = AbortSignal.timeout(30_000);
   * for await (const row of client.auditLog({ state: "DEPEG", from: "2026-11-01T00:00:00Z", to: "2026-11-26T00:00:00Z" }, { signal })) {
   *   console.log(row.id, row.asset, row.to_state, row.receipt_sha256);
   * }
   * ```
   */
  auditLog(filters: AuditFilters = {}, options: PageOptions = {}): AsyncGenerator<AuditRow, void, undefined> {
    return auditRows((query, signal) => this.get("/v1/audit", { params: { query }, signal: signal ?? null }), filters, options);
  }

  async #call<T>(method: "GET" | "PUT" | "POST" | "PATCH" | "DELETE", path: string, init: unknown): Promise<T> {
    // The typed signatures above are openapi-fetch's; this untyped call is the one place they meet its runtime.
    const call = this.raw[method] as unknown as (path: string, init: unknown) => Promise<{ data?: unknown; error?: unknown; response: Response }>;
    const { retry, idempotent, ...rest } = (init ?? {}) as CallOptions & { fetch?: (request: Request) => Promise<Response> };
    const policy = (idempotent ?? IDEMPOTENT_METHODS.has(method)) ? retryPolicy(this.#retry, retry) : null;
    const transport = rest.fetch === undefined ? this.#transport : { ...this.#transport, fetch: rest.fetch };
    let r: { data?: unknown; error?: unknown; response: Response };
    try {
      r = await call(path, { ...rest, fetch: (request: Request) => fetchWithRetry(request, policy, transport) });
    } catch (e) {
      throw new ApiError("network_error", `${method} ${path}: ${this.#why(e, rest.signal)}`, { status: 0, cause: e });
    }
    // openapi-fetch reports an empty error answer (e.g. a bodiless 404) with `error` undefined: decide on the status.
    if (r.response.ok) return r.data as T;
    throw apiErrorFromResponse(r.response, r.error ?? null, this.#transport.now());
  }

  #why(e: unknown, signal: AbortSignal | null | undefined): string {
    const text = e instanceof Error ? e.message : String(e);
    if (signal?.aborted === true) return `aborted by the caller's signal (${text})`;
    if (e instanceof Error && e.name === "TimeoutError") return `no answer within ${this.#timeoutMs} ms`;
    return text;
  }
}
