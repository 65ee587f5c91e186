/**
 * uWebSockets.js in one place (STYLE.md 7). The rules it keeps: `onAborted` is registered before anything async;
 * everything the handler needs is copied out of the uWS request synchronously (it is invalid after the first
 * await); bodies are read with `onData` and capped at 16 KiB (413 beyond); every write happens inside `cork`; nothing
 * is written after an abort. The native binary is required: the package's JavaScript fallback is refused.
 */
import uws from "uWebSockets.js";
import type { HttpResponse, TemplatedApp, us_listen_socket } from "uWebSockets.js";
import { randomUUID } from "node:crypto";
import { createServer } from "node:net";
import { STATUS_CODES } from "node:http";
import { canonicalIp, canonicalSet } from "./client-ip.ts";
import { ApiError } from "./errors.ts";
import type { Handled, HandledResult, RawRequest } from "./pipeline.ts";

export const MAX_BODY_BYTES = 16 * 1024;

/** The uWS native binary did not load (the package would silently run a slow JavaScript shim). */
export class UwsFallbackError extends Error {
  readonly code = "uws_fallback";
  constructor() {
    super(
      "uWebSockets.js is running its JavaScript fallback (native binary not loaded for this platform/Node ABI); " +
        "refusing to serve: reinstall on a supported platform (linux x64 with Node 20) or unset UWS_USE_FALLBACK",
    );
    this.name = "UwsFallbackError";
  }
}

/** True when the native uWS binary is loaded. */
export function uwsIsNative(): boolean {
  const cfg = (uws as unknown as { _cfg?: unknown })._cfg;
  return typeof cfg === "function" && Function.prototype.toString.call(cfg).includes("[native code]");
}

const BODY_METHODS = new Set(["POST", "PUT", "PATCH", "DELETE"]);

const STATUS_LINES = new Map<number, string>();
function statusLine(status: number): string {
  let line = STATUS_LINES.get(status);
  if (line === undefined) STATUS_LINES.set(status, (line = `${status} ${STATUS_CODES[status] ?? "Status"}`));
  return line;
}

/** Handlers only read the query; requests without one share this instance. */
const NO_QUERY = new URLSearchParams();
const JSON_CONTENT_TYPE = "application/json";

/**
 * The client address. Without a trusted proxy it is the socket's peer. Behind trusted proxies it is the right-most
 * X-Forwarded-For hop that is not itself a trusted proxy (hops further left were written by the client and prove
 * nothing), in canonical form (`canonicalIp`). With `trustProxy` and no list, the connected peer is the one trusted
 * proxy. A hop that is not an IP address never becomes the client (it would be a rate-limit key anyone can mint):
 * the answer is then the socket's peer. `trusted` holds canonical addresses (`canonicalSet`).
 */
export function clientAddress(peer: string, xff: string | undefined, trustProxy: boolean, trusted: ReadonlySet<string>): string {
  if (!trustProxy || xff === undefined) return peer;
  if (trusted.size > 0 && !trusted.has(canonicalIp(peer) ?? peer)) return peer; // a direct client cannot speak for anyone else
  const hops = xff.split(",").map((s) => s.trim()).filter((s) => s !== "");
  let hop: string | null = null;
  for (let i = hops.length - 1; i >= 0; i--) {
    hop = hops[i]!.length <= 64 ? canonicalIp(hops[i]!) : null;
    if (hop === null) return peer;
    if (!trusted.has(hop)) return hop;
  }
  return hop ?? peer; // every hop a trusted proxy: the left-most
}

/**
 * True when a request's `Connection` header lists `close` (RFC 9112 9.6). uWS itself honours only a value of exactly
 * five characters (`close` in any case); a list such as `keep-alive, close` is read here.
 */
export function wantsClose(connection: string | undefined): boolean {
  if (connection === undefined || connection.length < 5) return false;
  for (const token of connection.split(",")) if (token.trim().toLowerCase() === "close") return true;
  return false;
}

/**
 * Writes a result: status, headers, then the body (none for 204/304 and HEAD), all inside one cork. `close`: the
 * request asked for the connection to close after this response (`wantsClose`).
 *
 * HEAD writes its Content-Length itself and ends without a reported length: `endWithoutBody(length)` in this uWS
 * build (v20.43) leaves the response pending, waiting for `length` body bytes that never come, so `Connection:
 * close` was never honoured, the connection had no timeout at all, and the next request on it closed it
 * unanswered. A response without a body cannot pass `close` to uWS (its only way to end one with closeConnection
 * reports a length): there the request's own `Connection: close` is what uWS honours, which covers the usual
 * spelling (docs/http-edge.md).
 */
export function send(res: HttpResponse, method: string, r: HandledResult, close = false): void {
  res.cork(() => {
    res.writeStatus(statusLine(r.status));
    const headers = r.headers;
    for (const k in headers) res.writeHeader(k, headers[k]!);
    if (r.status === 204 || r.status === 304) {
      res.endWithoutBody();
      return;
    }
    let body: string | Uint8Array;
    if (r.text !== undefined) {
      res.writeHeader("content-type", r.contentType ?? "text/plain; charset=utf-8");
      body = r.text;
    } else {
      res.writeHeader("content-type", JSON_CONTENT_TYPE);
      body = JSON.stringify(r.json ?? null);
    }
    if (method === "HEAD") {
      res.writeHeader("content-length", String(Buffer.byteLength(body)));
      res.endWithoutBody();
    } else res.end(body, close);
  });
}

const INTERNAL: HandledResult = { status: 500, headers: {}, json: { error: "internal", message: "internal error" } };

interface AbortFlag {
  aborted: boolean;
}

/** Registers onAborted (which must happen before a handler returns without answering) and reports it as a flag. */
function abortFlag(res: HttpResponse): AbortFlag {
  const flag: AbortFlag = { aborted: false };
  res.onAborted(() => {
    flag.aborted = true;
  });
  return flag;
}

/**
 * Runs the pipeline and sends its answer: at once when it is synchronous; otherwise onAborted is registered (if it is
 * not yet) before returning, and the answer is sent when it settles unless the client went away meanwhile.
 */
function answer(res: HttpResponse, method: string, handle: (req: RawRequest) => Handled, raw: RawRequest, onError?: (e: unknown) => void, flag?: AbortFlag): void {
  const close = wantsClose(raw.headers["connection"]);
  let r: Handled;
  try {
    r = handle(raw);
  } catch (e) {
    onError?.(e);
    if (flag?.aborted !== true) send(res, method, { ...INTERNAL, headers: { "x-request-id": randomUUID() } }, close);
    return;
  }
  if (!(r instanceof Promise)) {
    if (flag?.aborted !== true) send(res, method, r, close);
    return;
  }
  const aborted = flag ?? abortFlag(res);
  r.then(
    (ok) => {
      if (!aborted.aborted) send(res, method, ok, close);
    },
    (e: unknown) => {
      onError?.(e);
      if (!aborted.aborted) send(res, method, { ...INTERNAL, headers: { "x-request-id": randomUUID() } }, close);
    },
  );
}

export interface UwsServer {
  readonly app: TemplatedApp;
  readonly port: number;
  /** Stops accepting connections. Idempotent. */
  close(): void;
}

/**
 * Serves `handle` (the pipeline) on uWS at host:port (port 0 picks a free one). Extra exact-path GET handlers (such
 * as /metrics) bypass the pipeline.
 */
export function serveUws(
  handle: (req: RawRequest) => Handled,
  opts: {
    host: string;
    port: number;
    trustProxy: boolean;
    trustedProxies?: readonly string[];
    onError?: (e: unknown) => void;
    /** Registers routes that take precedence over the pipeline (WebSocket, static files), before the catch-all. */
    configure?: (app: TemplatedApp) => void;
  },
): Promise<UwsServer> {
  if (!uwsIsNative()) return Promise.reject(new UwsFallbackError());
  const app = uws.App();
  opts.configure?.(app);
  const trusted = canonicalSet(opts.trustedProxies ?? []);
  // After close(): uWS stops listening but keeps open keep-alive connections. A request arriving on one (a client's
  // pooled connection) is answered 503 and its connection closed, so it never meets a closing store.
  const state = { closed: false };
  app.any("/*", (res, req) => {
    if (state.closed) {
      const body = JSON.stringify(new ApiError("not_ready", "the server is shutting down").toBody());
      res.cork(() => {
        res.writeStatus(statusLine(503)).writeHeader("content-type", "application/json").writeHeader("retry-after", "1").end(body, true);
      });
      return;
    }
    // Copy everything now: the uWS request object dies when this handler returns.
    const method = req.getCaseSensitiveMethod().toUpperCase();
    const path = req.getUrl();
    const rawQuery = req.getQuery();
    const query = rawQuery === undefined || rawQuery === "" ? NO_QUERY : new URLSearchParams(rawQuery);
    const headers: Record<string, string> = {};
    req.forEach((k, v) => {
      headers[k] = v;
    });
    const ip = clientAddress(Buffer.from(res.getRemoteAddressAsText()).toString("latin1"), headers["x-forwarded-for"], opts.trustProxy, trusted);
    if (!BODY_METHODS.has(method)) {
      // Answered before this handler returns when the pipeline is synchronous (a cached body); else `answer`
      // registers onAborted before returning.
      answer(res, method, handle, { method, path, query, headers, ip, body: null }, opts.onError);
      return;
    }
    const aborted = abortFlag(res);
    const chunks: Buffer[] = [];
    let size = 0;
    let refused = false;
    const run = (body: Uint8Array | null, refusal?: "payload_too_large") =>
      answer(res, method, handle, { method, path, query, headers, ip, body, ...(refusal === undefined ? {} : { refused: refusal }) }, opts.onError, aborted);
    res.onData((chunk, isLast) => {
      if (refused || aborted.aborted) return;
      size += chunk.byteLength;
      if (size > MAX_BODY_BYTES) {
        refused = true;
        run(null, "payload_too_large"); // answered by the pipeline: request id, CORS and the ApiError shape
        return;
      }
      chunks.push(Buffer.from(chunk.slice(0))); // the ArrayBuffer is only valid during this callback
      if (isLast) run(Buffer.concat(chunks));
    });
  });
  return portIsFree(opts.host, opts.port).then(() => listen(app, opts.host, opts.port, () => (state.closed = true)));
}

function listen(app: TemplatedApp, host: string, port: number, onClose: () => void): Promise<UwsServer> {
  return new Promise((resolve, reject) => {
    app.listen(host, port, (socket: us_listen_socket | false) => {
      if (socket === false) return reject(new Error(`cannot listen on ${host}:${port}`));
      let closed = false;
      resolve({
        app,
        port: uws.us_socket_local_port(socket as never),
        close: () => {
          if (closed) return;
          closed = true;
          onClose();
          uws.us_listen_socket_close(socket);
        },
      });
    });
  });
}

/**
 * uWS listens with SO_REUSEPORT, so a second process on the same port would silently share the traffic. A plain
 * (exclusive) bind first makes a port in use an error, as with any other server.
 */
function portIsFree(host: string, port: number): Promise<void> {
  if (port === 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", (e: NodeJS.ErrnoException) => reject(new Error(`cannot listen on ${host}:${port}: ${e.code ?? e.message}`)));
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve()));
  });
}
