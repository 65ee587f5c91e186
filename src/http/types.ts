/**
 * What a route handler sees and returns: plain data, no sockets, so every handler is unit-testable in-process. The
 * uWS adapter copies everything a handler needs out of the uWS request before any await.
 */
export type Method = "GET" | "HEAD" | "POST" | "PUT" | "PATCH" | "DELETE" | "OPTIONS";

export interface HttpRequest {
  readonly method: Method | string;
  /** The raw path, percent-encoded as received. */
  readonly path: string;
  /** Path parameters, percent-decoded. */
  readonly params: Readonly<Record<string, string>>;
  readonly query: URLSearchParams;
  /** Lower-case header names. */
  readonly headers: Readonly<Record<string, string>>;
  /** The client address (after TRUST_PROXY rules). */
  readonly ip: string;
  readonly requestId: string;
  readonly body: Uint8Array | null;
}

export interface HttpResult {
  readonly status: number;
  readonly headers?: Readonly<Record<string, string>>;
  /** A JSON value (serialised by the adapter), or text/bytes with an explicit content type. */
  readonly json?: unknown;
  readonly text?: string | Uint8Array;
  readonly contentType?: string;
}

export type Handler = (req: HttpRequest) => Promise<HttpResult> | HttpResult;

export const ok = (json: unknown, headers?: Readonly<Record<string, string>>): HttpResult =>
  headers === undefined ? { status: 200, json } : { status: 200, json, headers };
