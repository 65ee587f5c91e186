/**
 * DNS-rebinding protection of `/mcp` (MCP 2025-11-25, basic/transports, Security Warning: a server MUST validate the
 * `Origin` header and answer 403 to an invalid one). A web page an attacker controls can make a browser send requests
 * to this port under the attacker's own host name (rebound to this machine's address): such a request carries the
 * attacker's name in `Host` and its page's origin in `Origin`, so both are checked before anything runs.
 *
 * The semantics are the official SDK's: `hostHeaderValidation` (server/middleware) compares the Host's host name
 * with an allow-list, port-agnostic, and refuses a missing Host; the transport's `allowedOrigins` refuses an Origin
 * not listed and lets a request without one through (non-browser clients send none). Here an allow-list entry may
 * also pin a port (`localhost:8080`), and a same-origin page (its Origin names the very host it called, which passed
 * the Host check) is allowed too. Refusals have the SDK's shape: 403 with a JSON-RPC error, code -32000, id null.
 */
import type { HttpResult } from "../http/types.ts";
import { jsonRpcError, TRANSPORT_REFUSED } from "./json-rpc.ts";

/** What `/mcp` accepts. */
export interface McpAccess {
  /** `Host` values, lower-case: `name` (any port) or `name:port`; IPv6 in brackets. */
  readonly hosts: readonly string[];
  /** Browser origins allowed besides same-origin pages (`https://app.example.com`). */
  readonly origins: readonly string[];
}

/** What the allow-lists are derived from (src/config.ts). */
export interface McpAccessConfig {
  readonly port: number;
  /** Listen address: a specific one (not 0.0.0.0 or ::) is a host clients may name. */
  readonly host: string;
  /** The service's public base URL (PUBLIC_BASE_URL): its host is accepted. */
  readonly publicBaseUrl: string;
  /** The base URL of webhook links (WEBHOOK_BASE_URL): its host is accepted too. */
  readonly webhookBaseUrl: string;
  readonly corsOrigins: readonly string[];
  readonly mcpAllowedHosts: readonly string[];
}

const WILDCARDS = new Set(["0.0.0.0", "::", "[::]"]);

/** The default allow-lists: loopback names on PORT, the listen address, the public URLs' hosts, MCP_ALLOWED_HOSTS; CORS_ORIGINS. */
export function mcpAccess(c: McpAccessConfig): McpAccess {
  const hosts = ["localhost", "127.0.0.1", "[::1]"].map((h) => `${h}:${c.port}`);
  const listen = c.host.includes(":") && !c.host.startsWith("[") ? `[${c.host}]` : c.host;
  if (!WILDCARDS.has(listen)) hosts.push(`${listen.toLowerCase()}:${c.port}`);
  for (const base of [c.publicBaseUrl, c.webhookBaseUrl]) {
    try {
      hosts.push(new URL(base).host.toLowerCase());
    } catch {
      // Validated by the configuration; nothing to add otherwise.
    }
  }
  hosts.push(...c.mcpAllowedHosts);
  return { hosts: [...new Set(hosts)], origins: c.corsOrigins };
}

interface HostPort {
  readonly name: string;
  readonly port: string | null;
}

/** Splits a Host value (`name`, `name:port`, `[v6]`, `[v6]:port`); null when it is not one. */
function splitHost(text: string): HostPort | null {
  const m = /^(\[[0-9a-f:.]+\]|[a-z0-9._-]+)(?::(\d{1,5}))?$/.exec(text.toLowerCase());
  return m === null ? null : { name: m[1]!, port: m[2] ?? null };
}

function hostAllowed(entries: readonly HostPort[], host: HostPort): boolean {
  return entries.some((e) => e.name === host.name && (e.port === null || e.port === host.port));
}

/** Whether `origin` is the origin of a page served from `host` (its default port when Host names none). */
function sameOrigin(origin: string, host: HostPort): boolean {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false; // "null" (a sandboxed frame, a file) and anything else that is not an origin
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return false;
  const port = url.port === "" ? (url.protocol === "https:" ? "443" : "80") : url.port;
  return url.hostname === host.name && (host.port === null ? url.port === "" : host.port === port);
}

/** A checker of one request's headers: null when it may proceed, else the 403 to answer. */
export function requestGuard(access: McpAccess): (headers: Readonly<Record<string, string>>) => HttpResult | null {
  const entries = access.hosts.map(splitHost).filter((h): h is HostPort => h !== null);
  const origins = new Set(access.origins);
  const refuse = (message: string): HttpResult => ({ status: 403, json: jsonRpcError(TRANSPORT_REFUSED, message), headers: { "cache-control": "no-store" } });
  return (headers) => {
    const hostText = headers["host"];
    if (hostText === undefined || hostText === "") return refuse("Missing Host header");
    const host = splitHost(hostText);
    if (host === null || !hostAllowed(entries, host)) {
      return refuse(`Invalid Host header: ${JSON.stringify(hostText.slice(0, 200))} is not a host this server answers as (MCP_ALLOWED_HOSTS)`);
    }
    const origin = headers["origin"];
    if (origin === undefined || origins.has(origin) || sameOrigin(origin, host)) return null;
    return refuse(`Invalid Origin header: ${JSON.stringify(origin.slice(0, 200))} is not allowed (CORS_ORIGINS)`);
  };
}
