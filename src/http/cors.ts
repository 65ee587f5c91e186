/** CORS for the configured allow-list of browser origins (interface part 5.9). */
export const EXPOSED_HEADERS = [
  "ratelimit-limit",
  "ratelimit-remaining",
  "ratelimit-reset",
  "ratelimit",
  "ratelimit-policy",
  "x-ratelimit-limit",
  "x-ratelimit-remaining",
  "x-ratelimit-reset",
  "retry-after",
  "etag",
  "x-request-id",
  // The agent tools (docs/agents.md): x402's challenge and settlement headers.
  "payment-required",
  "payment-response",
  // /v1/assets/{symbol}/history: why a window older than what is kept is empty, and where what is kept starts.
  "x-history-reason",
  "x-history-kept-from",
].join(", ");

/** Request headers a browser may send: the API's, and the agent tools' (an x402 payment, the MCP protocol version). */
const ALLOWED_REQUEST_HEADERS = new Set(["authorization", "content-type", "if-none-match", "x-request-id", "payment-signature", "mcp-protocol-version"]);

/** Headers for a response to `origin`; none when the origin is absent or not allowed. */
export function corsHeaders(origins: ReadonlySet<string>, origin: string | undefined): Record<string, string> {
  if (origin === undefined || !origins.has(origin)) return {};
  return { "access-control-allow-origin": origin, vary: "Origin", "access-control-expose-headers": EXPOSED_HEADERS };
}

/** Adds the CORS response headers for `origin` to `into` (nothing when the origin is absent or not allowed). */
export function addCorsHeaders(into: Record<string, string>, origins: ReadonlySet<string>, origin: string | undefined): void {
  if (origin === undefined || !origins.has(origin)) return;
  into["access-control-allow-origin"] = origin;
  into["vary"] = "Origin";
  into["access-control-expose-headers"] = EXPOSED_HEADERS;
}

/**
 * The answer to a preflight: 204 with the allowed methods (`allow`: those of the requested path, as its `Allow`
 * header lists them) and headers, or null when the origin is not allowed.
 */
export function preflight(
  origins: ReadonlySet<string>,
  origin: string | undefined,
  requestedHeaders: string | undefined,
  allow: string,
): Record<string, string> | null {
  if (origin === undefined || !origins.has(origin)) return null;
  const asked = (requestedHeaders ?? "")
    .split(",")
    .map((h) => h.trim().toLowerCase())
    .filter((h) => ALLOWED_REQUEST_HEADERS.has(h));
  return {
    ...corsHeaders(origins, origin),
    "access-control-allow-methods": allow,
    "access-control-allow-headers": asked.length > 0 ? asked.join(", ") : [...ALLOWED_REQUEST_HEADERS].join(", "),
    "access-control-max-age": "600",
  };
}
