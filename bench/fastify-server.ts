/**
 * The Fastify 5 comparison server for the HTTP benchmark (bench/http.bench.ts). It serves exactly what the uWS
 * adapter (src/http/uws-adapter.ts) serves: one catch-all route copies the Fastify request into the pipeline's
 * RawRequest (method, raw path, raw query, lower-case headers, client address, raw body) and replies with the
 * pipeline's result the same way the adapter does: the status, the pipeline's headers, then either the `text` with
 * its content type or `JSON.stringify(json ?? null)` as `application/json`; no body for 204/304 and HEAD. Request
 * bodies stay raw bytes (no JSON parsing by Fastify), capped at 16 KiB like the adapter.
 *
 * Production settings: logger off (so no request logging), no plugins, no hooks.
 */
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import type { AddressInfo } from "node:net";
import type { Handled, HandledResult, RawRequest } from "../src/http/pipeline.ts";
import { MAX_BODY_BYTES } from "../src/http/uws-adapter.ts";

const METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] as const;

export interface FastifyBenchServer {
  readonly app: FastifyInstance;
  readonly port: number;
  close(): Promise<void>;
}

function headersOf(req: FastifyRequest): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) {
    if (v === undefined) continue;
    out[k] = Array.isArray(v) ? v.join(", ") : v;
  }
  return out;
}

function reply(res: FastifyReply, method: string, r: HandledResult): FastifyReply {
  res.code(r.status);
  for (const [k, v] of Object.entries(r.headers)) res.header(k, v);
  if (r.status === 204 || r.status === 304) return res.send();
  let body: string | Uint8Array;
  if (r.text !== undefined) {
    res.header("content-type", r.contentType ?? "text/plain; charset=utf-8");
    body = r.text;
  } else {
    res.header("content-type", "application/json");
    body = JSON.stringify(r.json ?? null);
  }
  if (method === "HEAD") {
    res.header("content-length", String(typeof body === "string" ? Buffer.byteLength(body) : body.byteLength));
    return res.send();
  }
  // As bytes: Fastify would otherwise append "; charset=utf-8" to a JSON content type the adapter sends as is.
  return res.send(typeof body === "string" ? Buffer.from(body, "utf8") : Buffer.from(body.buffer, body.byteOffset, body.byteLength));
}

/** Serves `handle` (the pipeline) on Fastify 5 at host:port (port 0 picks a free one). */
export async function serveFastify(
  handle: (req: RawRequest) => Handled,
  opts: { host: string; port: number; onError?: (e: unknown) => void },
): Promise<FastifyBenchServer> {
  const app = Fastify({ logger: false, bodyLimit: MAX_BODY_BYTES, trustProxy: false });
  // Bodies reach the pipeline as raw bytes, whatever their content type (the adapter does not parse them either).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", { parseAs: "buffer" }, (_req, body, done) => done(null, body));
  const handler = async (req: FastifyRequest, res: FastifyReply): Promise<FastifyReply> => {
    const method = req.method.toUpperCase();
    const url = req.raw.url ?? "/";
    const q = url.indexOf("?");
    const raw: RawRequest = {
      method,
      path: q === -1 ? url : url.slice(0, q),
      query: new URLSearchParams(q === -1 ? "" : url.slice(q + 1)),
      headers: headersOf(req),
      ip: req.socket.remoteAddress ?? "",
      body: Buffer.isBuffer(req.body) ? req.body : null,
    };
    try {
      return reply(res, method, await handle(raw));
    } catch (e) {
      opts.onError?.(e);
      return reply(res, method, { status: 500, headers: {}, json: { error: "internal", message: "internal error" } });
    }
  };
  app.route({ method: [...METHODS], url: "/*", handler });
  // Methods outside the list (the adapter hands every method to the pipeline, which answers 404/405).
  app.setNotFoundHandler(handler);
  // Fastify's own refusals (body over the limit, unreadable body) in the adapter's error shape.
  app.setErrorHandler((e: { statusCode?: number }, req, res) => {
    const status = e.statusCode ?? 500;
    const json =
      status === 413
        ? { error: "payload_too_large", message: `request bodies are limited to ${MAX_BODY_BYTES} bytes` }
        : status < 500
          ? { error: "invalid_body", message: "unreadable request body" }
          : { error: "internal", message: "internal error" };
    if (status >= 500) opts.onError?.(e);
    return reply(res, req.method.toUpperCase(), { status, headers: {}, json });
  });
  await app.listen({ host: opts.host, port: opts.port });
  const port = (app.server.address() as AddressInfo).port;
  return { app, port, close: () => app.close() };
}
