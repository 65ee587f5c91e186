/**
 * The SSRF guard for webhook destinations (interface 6.3.1-2, addendum F). Run it when a webhook is registered or
 * updated, and again before every delivery attempt: the name is resolved once, through the injected resolver, every
 * resolved address must be allowed, and the delivery then connects to the checked address (`pinnedAddress`) instead
 * of resolving the name a second time, so DNS rebinding between check and connect cannot steer it elsewhere.
 *
 * Normalisation is the WHATWG URL parser's: it already turns every IPv4 notation (`2130706433`, `0x7f000001`,
 * `0177.0.0.1`, `127.1`, full-width digits) into dotted decimal, decodes percent-escapes and IDNA in host names, and
 * compresses IPv6, so the rules below only ever see canonical text.
 */
import { isIP } from "node:net";
import { classifyAddress } from "./ip-ranges.ts";

/** Resolves a host name to its IP addresses (A and AAAA), in the order they should be tried. */
export type Resolve = (hostname: string) => Promise<readonly string[]>;

export interface CheckDestinationOptions {
  /** Called at most once per check, and only for a host name (never for an IP literal). */
  readonly resolve: Resolve;
  /**
   * Tests only: let loopback through (127.0.0.0/8, ::1, the names `localhost` and `*.localhost`) so a receiver on
   * this machine can be reached. Every other rule still applies, https included. Default false.
   */
  readonly allowLoopbackForTests?: boolean;
  /**
   * Destination ports allowed besides 443 (the https default), from WEBHOOK_ALLOWED_PORTS. Default none: a URL on any
   * other port is refused, so registration, `/test` and delivery errors cannot be used to probe ports of public hosts.
   */
  readonly allowedPorts?: readonly number[];
}

/** Why a destination was refused (stable codes for logs and tests). */
export type RefusalReason =
  | "invalid_url"
  | "not_https"
  | "userinfo"
  | "bad_port"
  | "forbidden_name"
  | "forbidden_address"
  | "unresolvable"
  | "resolves_to_forbidden_address";

export interface DestinationRefused {
  readonly ok: false;
  readonly reason: RefusalReason;
  /** For the user: what is wrong with the URL. */
  readonly message: string;
  /** The API error code when the URL comes in a request body (addendum B: schema-invalid body). */
  readonly apiError: "invalid_body";
  /** The delivery record's `error` when the check fails at delivery time (addendum A). */
  readonly deliveryError: "ssrf_blocked" | "dns";
}

export interface DestinationAccepted {
  readonly ok: true;
  /** The normalised URL (WHATWG serialisation). */
  readonly url: string;
  /** Host name without a trailing dot, or the IP literal without brackets. */
  readonly hostname: string;
  readonly port: number;
  /** Path and query to request (a fragment is never sent). */
  readonly path: string;
  /** The checked address to connect to: no other lookup may happen before connecting. */
  readonly pinnedAddress: string;
  readonly family: 4 | 6;
  /** Every address the name resolved to, all checked, `pinnedAddress` first. */
  readonly addresses: readonly string[];
  /** Value of the `Host` header: the name (or bracketed literal) plus `:port` when not 443. */
  readonly hostHeader: string;
  /** TLS SNI and certificate name; undefined for an IP literal (SNI carries names only, RFC 6066). */
  readonly servername: string | undefined;
}

export type DestinationCheck = DestinationAccepted | DestinationRefused;

/** The https default port, always allowed. */
const HTTPS_PORT = 443;

/** Longest URL accepted. */
export const MAX_URL_LENGTH = 2048;

/**
 * Top-level names that never reach the public internet: RFC 6761/6762 special-use names, `.internal` (cloud
 * metadata such as `metadata.google.internal`), `home.arpa` and the rest of `.arpa`, and the common intranet TLDs.
 */
const FORBIDDEN_SUFFIXES: readonly string[] = [
  "localhost",
  "local",
  "internal",
  "home.arpa",
  "arpa",
  "localdomain",
  "lan",
  "home",
  "corp",
  "intranet",
  "private",
  "test",
  "invalid",
  "onion",
];

/** Cloud metadata names, named in the refusal (the suffix rules would refuse them too). */
const METADATA_NAMES: ReadonlySet<string> = new Set(["metadata.google.internal", "instance-data.ec2.internal", "metadata"]);

function refuse(reason: RefusalReason, message: string): DestinationRefused {
  return { ok: false, reason, message, apiError: "invalid_body", deliveryError: reason === "unresolvable" ? "dns" : "ssrf_blocked" };
}

function portRefusal(port: number, allowedPorts: readonly number[]): DestinationRefused {
  const allowed = [HTTPS_PORT, ...allowedPorts];
  return refuse("bad_port", `port ${port} is not allowed: webhook URLs may use port${allowed.length > 1 ? "s" : ""} ${allowed.join(", ")} only`);
}

function isLoopbackName(name: string): boolean {
  return name === "localhost" || name.endsWith(".localhost");
}

/** The reason a host name is refused before resolution, or null. */
function nameRefusal(name: string, allowLoopback: boolean): string | null {
  if (name === "" || name.split(".").some((label) => label === "")) return "the host name has an empty label";
  if (allowLoopback && isLoopbackName(name)) return null;
  if (METADATA_NAMES.has(name)) return `${name} is a cloud metadata endpoint`;
  for (const suffix of FORBIDDEN_SUFFIXES) {
    if (name === suffix || name.endsWith(`.${suffix}`)) return `names under .${suffix} are not publicly reachable`;
  }
  if (!name.includes(".")) return `single-label host ${name} is not a public name`;
  return null;
}

/**
 * Checks a webhook URL and, when it is acceptable, returns where exactly to connect. Never throws; a resolver that
 * throws or returns nothing gives `unresolvable`.
 */
export async function checkDestination(url: string, opts: CheckDestinationOptions): Promise<DestinationCheck> {
  const allowLoopback = opts.allowLoopbackForTests === true;
  if (url.length > MAX_URL_LENGTH) return refuse("invalid_url", `the URL is longer than ${MAX_URL_LENGTH} characters`);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return refuse("invalid_url", "not a valid absolute URL");
  }
  if (parsed.protocol !== "https:") return refuse("not_https", `the URL must use https, not ${parsed.protocol.slice(0, -1)}`);
  if (parsed.username !== "" || parsed.password !== "") return refuse("userinfo", "the URL must not contain a user name or password");
  const port = parsed.port === "" ? 443 : Number(parsed.port);
  if (port < 1 || port > 65_535) return refuse("bad_port", `port ${port} is not a valid destination port`);
  // Checked after the host's own rules (so a private host is refused as such) and before any resolution.
  const allowedPorts = opts.allowedPorts ?? [];
  const portRefused = port === HTTPS_PORT || allowedPorts.includes(port) ? null : portRefusal(port, allowedPorts);

  const rawHost = parsed.hostname.startsWith("[") ? parsed.hostname.slice(1, -1) : parsed.hostname;
  const path = parsed.pathname + parsed.search;
  const withPort = (h: string): string => (port === 443 ? h : `${h}:${port}`);

  if (isIP(rawHost) !== 0) {
    const verdict = classifyAddress(rawHost);
    if (!verdict.allowed && !(allowLoopback && verdict.loopback)) {
      return refuse("forbidden_address", `${rawHost} is not a public address: ${verdict.range}`);
    }
    if (portRefused !== null) return portRefused;
    const address = verdict.allowed ? verdict.address : rawHost;
    return {
      ok: true,
      url: parsed.href,
      hostname: rawHost,
      port,
      path,
      pinnedAddress: address,
      family: isIP(address) === 6 ? 6 : 4,
      addresses: [address],
      hostHeader: withPort(isIP(rawHost) === 6 ? `[${rawHost}]` : rawHost),
      servername: undefined,
    };
  }

  const name = rawHost.replace(/\.+$/, "");
  const why = nameRefusal(name, allowLoopback);
  if (why !== null) return refuse("forbidden_name", why);
  if (portRefused !== null) return portRefused;

  let resolved: readonly string[];
  try {
    resolved = await opts.resolve(name);
  } catch (err) {
    return refuse("unresolvable", `${name} did not resolve: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (resolved.length === 0) return refuse("unresolvable", `${name} has no addresses`);

  const addresses: string[] = [];
  for (const candidate of resolved) {
    const verdict = classifyAddress(candidate);
    if (!verdict.allowed && !(allowLoopback && verdict.loopback)) {
      return refuse("resolves_to_forbidden_address", `${name} resolves to ${candidate}, which is not public: ${verdict.range}`);
    }
    const address = verdict.allowed ? verdict.address : candidate;
    if (!addresses.includes(address)) addresses.push(address);
  }
  const pinnedAddress = addresses[0]!;
  return {
    ok: true,
    url: parsed.href,
    hostname: name,
    port,
    path,
    pinnedAddress,
    family: isIP(pinnedAddress) === 6 ? 6 : 4,
    addresses,
    hostHeader: withPort(name),
    servername: name,
  };
}
