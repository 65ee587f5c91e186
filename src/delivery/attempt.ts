/**
 * One delivery attempt (interface 6.3, addendum F): re-check the destination with the SSRF guard at delivery time,
 * connect to the address that check approved (no second lookup), POST the body over https, and classify the outcome
 * into the delivery record's `error` codes (addendum A). Never throws; every failure is a result.
 *
 * The time budget (default 5 s) covers everything: resolution, connect, TLS, request and response headers. A 2xx
 * whose headers arrive within it is `delivered`; the body is then read, while budget remains, up to 64 KiB, and its
 * first 1 KiB kept for the record. Redirects are never followed (Node's https does not follow them) and count as
 * `redirect`, wherever they point. The budget is a real network timer, not the injected clock: it bounds real
 * sockets. `now` only stamps the duration and interprets a `Retry-After` date.
 *
 * Error codes: `ssrf_blocked` (the destination, re-checked now, is forbidden), `dns` (it does not resolve),
 * `timeout` (the budget ran out before a response), `tls` (handshake or certificate failure), `redirect` (3xx),
 * `http_status` (any other non-2xx), `refused` (the connection was refused, reset or closed without an answer).
 */
import { request } from "node:https";
import type { IncomingMessage } from "node:http";
import type { EpochMs } from "../methodology/index.ts";
import { pinnedRequestOptions } from "./pinned-request.ts";
import { DELIVERY_TIMEOUT_MS, RESPONSE_BODY_LIMIT_BYTES } from "./policy.ts";
import { checkDestination, type DestinationAccepted, type Resolve } from "./ssrf.ts";

/** The delivery record's `error` (addendum A). */
export type AttemptError = "timeout" | "dns" | "tls" | "refused" | "ssrf_blocked" | "redirect" | "http_status";

/** Bytes of the response body kept in the delivery record (`response_body_excerpt`, addendum A). */
export const RESPONSE_EXCERPT_BYTES = 1024;

export interface AttemptInput {
  /** The destination URL (checked again here, whatever was checked at registration). */
  readonly url: string;
  /** The exact body bytes (the signed body for a generic webhook). */
  readonly body: string | Uint8Array;
  /** Request headers (signed delivery headers, or `content-type` for chat); `host` and `content-length` are set here. */
  readonly headers: Readonly<Record<string, string>>;
  /** The resolver handed to `checkDestination` (production: `systemResolve`). */
  readonly resolve: Resolve;
  /** Epoch-ms clock, for `durationMs` and `Retry-After` dates. */
  readonly now: () => EpochMs;
  /** Total budget in ms, default `DELIVERY_TIMEOUT_MS` (5000). */
  readonly timeoutMs?: number;
  /** Extra trusted CA certificates (PEM), e.g. a test receiver's. */
  readonly ca?: string | Buffer | ReadonlyArray<string | Buffer>;
  /** Tests only: let loopback destinations through the SSRF guard (see `checkDestination`). Default false. */
  readonly allowLoopbackForTests?: boolean;
  /** Destination ports allowed besides 443 (WEBHOOK_ALLOWED_PORTS, see `checkDestination`). Default none. */
  readonly allowedPorts?: readonly number[];
}

export interface AttemptResult {
  readonly status: "delivered" | "failed";
  /** HTTP status of the response, null when none arrived. */
  readonly responseStatus: number | null;
  /** Null exactly when delivered. */
  readonly error: AttemptError | null;
  /** Whole milliseconds from the start of the attempt to its outcome (by `now`). */
  readonly durationMs: number;
  /** The first 1 KiB of the response body (UTF-8, cut at a character boundary), null when no response arrived. */
  readonly responseBodyExcerpt: string | null;
  /** From a 429's `Retry-After` (delta seconds or HTTP date), in ms from now; null otherwise. */
  readonly retryAfterMs: number | null;
  /** The address connected to (the pinned one), null when the destination was refused before connecting. */
  readonly address: string | null;
}

/** `Retry-After` (RFC 9110 10.2.3): delay-seconds or an HTTP date, as milliseconds from `now`; null if unusable. */
export function parseRetryAfter(value: string | undefined, now: EpochMs): number | null {
  if (value === undefined) return null;
  const v = value.trim();
  if (/^[0-9]{1,10}$/.test(v)) return Number(v) * 1000;
  // HTTP dates always name a weekday and the GMT zone; anything else (e.g. a bare number with a sign) is refused.
  if (!/GMT$/.test(v)) return null;
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/** The first `limit` bytes as UTF-8 text, never ending inside a multi-byte character. */
export function utf8Excerpt(bytes: Buffer, limit = RESPONSE_EXCERPT_BYTES): string {
  if (bytes.length <= limit) return bytes.toString("utf8");
  let end = limit;
  // Back up over continuation bytes (10xxxxxx) to the start of the character the cut would split.
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString("utf8");
}

const TLS_CODE = /^(ERR_TLS_|ERR_SSL_|UNABLE_TO_|SELF_SIGNED_|DEPTH_ZERO_|CERT_|EPROTO$|HOSTNAME_MISMATCH$)/;

function classify(err: unknown, timedOut: boolean): AttemptError {
  if (timedOut) return "timeout";
  const e = err as { code?: unknown; name?: unknown };
  if (e.name === "AbortError") return "timeout";
  const code = typeof e.code === "string" ? e.code : "";
  if (code === "ENOTFOUND" || code === "EAI_AGAIN") return "dns";
  if (TLS_CODE.test(code)) return "tls";
  return "refused";
}

/** Runs one delivery attempt; see the module comment. */
export async function attemptDelivery(input: AttemptInput): Promise<AttemptResult> {
  const started = input.now();
  const timeoutMs = input.timeoutMs ?? DELIVERY_TIMEOUT_MS;
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), timeoutMs);
  const elapsed = (): number => Math.max(0, Math.round(input.now() - started));
  const failed = (error: AttemptError, address: string | null): AttemptResult => ({
    status: "failed",
    responseStatus: null,
    error,
    durationMs: elapsed(),
    responseBodyExcerpt: null,
    retryAfterMs: null,
    address,
  });
  try {
    const timedOut = new Promise<"timeout">((resolve) => ctl.signal.addEventListener("abort", () => resolve("timeout"), { once: true }));
    const checked = await Promise.race([
      checkDestination(input.url, {
        resolve: input.resolve,
        allowLoopbackForTests: input.allowLoopbackForTests === true,
        ...(input.allowedPorts === undefined ? {} : { allowedPorts: input.allowedPorts }),
      }),
      timedOut,
    ]);
    if (checked === "timeout") return failed("timeout", null);
    if (!checked.ok) return failed(checked.deliveryError, null);
    return await send(input, checked, ctl.signal, started, elapsed);
  } finally {
    clearTimeout(timer);
  }
}

function send(
  input: AttemptInput,
  checked: DestinationAccepted,
  signal: AbortSignal,
  started: EpochMs,
  elapsed: () => number,
): Promise<AttemptResult> {
  const body = typeof input.body === "string" ? Buffer.from(input.body, "utf8") : Buffer.from(input.body);
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(input.headers)) if (k.toLowerCase() !== "content-length") headers[k] = v;
  headers["content-length"] = String(body.length);
  const address = checked.pinnedAddress;

  return new Promise<AttemptResult>((resolve) => {
    let settled = false;
    let response: IncomingMessage | null = null;
    const chunks: Buffer[] = [];
    let size = 0;

    const settle = (result: AttemptResult): void => {
      if (settled) return;
      settled = true;
      resolve(result);
      // Free the socket whatever state it is in (agent: false, so it serves nothing else).
      req.destroy();
    };
    const fromResponse = (res: IncomingMessage): void => {
      const status = res.statusCode ?? 0;
      const delivered = status >= 200 && status <= 299;
      const error: AttemptError | null = delivered ? null : status >= 300 && status <= 399 ? "redirect" : "http_status";
      const retryAfterHeader = res.headers["retry-after"];
      settle({
        status: delivered ? "delivered" : "failed",
        responseStatus: status,
        error,
        durationMs: elapsed(),
        responseBodyExcerpt: utf8Excerpt(Buffer.concat(chunks)),
        retryAfterMs: status === 429 ? parseRetryAfter(typeof retryAfterHeader === "string" ? retryAfterHeader : undefined, started + elapsed()) : null,
        address,
      });
    };

    const req = request(pinnedRequestOptions(checked, { headers, signal, ...(input.ca !== undefined ? { ca: input.ca } : {}) }), (res) => {
      response = res;
      res.on("data", (chunk: Buffer) => {
        const room = RESPONSE_BODY_LIMIT_BYTES - size;
        if (room <= 0) return;
        const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
        chunks.push(part);
        size += part.length;
        // Read at most 64 KiB: stop here rather than drain a large or endless body.
        if (size >= RESPONSE_BODY_LIMIT_BYTES) fromResponse(res);
      });
      res.on("end", () => fromResponse(res));
      // The budget ran out or the peer closed mid-body: the status already arrived, so it decides.
      res.on("error", () => fromResponse(res));
      res.on("aborted", () => fromResponse(res));
      res.on("close", () => fromResponse(res));
    });
    req.on("error", (err) => {
      if (response !== null) fromResponse(response);
      else settle(failedResult(classify(err, signal.aborted), elapsed(), address));
    });
    // Closed with neither a response nor an error event: the peer went away without answering.
    req.on("close", () => {
      if (response !== null) fromResponse(response);
      else settle(failedResult(signal.aborted ? "timeout" : "refused", elapsed(), address));
    });
    req.end(body);
  });
}

function failedResult(error: AttemptError, durationMs: number, address: string): AttemptResult {
  return { status: "failed", responseStatus: null, error, durationMs, responseBodyExcerpt: null, retryAfterMs: null, address };
}
