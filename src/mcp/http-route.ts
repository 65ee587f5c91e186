/**
 * `POST /mcp` (mounted by src/mcp/service.ts): the MCP Streamable HTTP transport on the service's own port, as a
 * route of the HTTP pipeline (request ids, CORS, a per-IP rate budget of its own, the 16 KiB body cap, shutdown 503s
 * and the uWebSockets.js rules all apply as to any route; Host and Origin are checked before this runs,
 * src/mcp/request-guard.ts). The SDK's web-standard transport runs stateless with JSON responses: each POST gets a
 * fresh transport and server over the shared tool definitions and read model, and answers one JSON body (no SSE
 * stream, no session to keep). A GET (the optional server-to-client SSE stream) or DELETE (session end) is a 405, as the transport
 * specification provides for a server that offers neither.
 */
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { HttpRequest, HttpResult } from "../http/types.ts";
import { serverFor, type PreparedSpec } from "./server.ts";

/** Response headers that belong to the transport's own framing, not to the answer. */
const FRAMING = new Set(["content-length", "transfer-encoding", "connection", "content-type"]);

/** Runs one MCP POST through a fresh stateless transport and server; resolves with the HTTP answer. */
export async function handleMcpPost(spec: PreparedSpec, req: Pick<HttpRequest, "headers" | "body" | "path">): Promise<HttpResult> {
  const transport = new WebStandardStreamableHTTPServerTransport({ enableJsonResponse: true }); // no session id generator: stateless
  const server = serverFor(spec);
  await server.connect(transport);
  try {
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) headers.set(k, v);
    const request = new Request(`http://mcp.invalid${req.path}`, { method: "POST", headers, body: req.body ?? new Uint8Array() });
    const response = await transport.handleRequest(request);
    const text = await response.text();
    const out: Record<string, string> = { "cache-control": "no-store" };
    response.headers.forEach((v, k) => {
      if (!FRAMING.has(k)) out[k] = v;
    });
    return { status: response.status, headers: out, text, contentType: response.headers.get("content-type") ?? "application/json" };
  } finally {
    await server.close();
  }
}
