/**
 * Value parsers of the settings. Each returns what it expected on failure, so the error line tells the operator
 * what to write (src/config.ts collects those lines).
 */
import { readFileSync } from "node:fs";
import { isIP } from "node:net";
import { MethodologyRegistryError, ownRelease, parseDecimal, parseRegistry, type MethodologyRelease } from "../methodology/index.ts";
import type { FeedConfig, LogLevel, Role } from "./kinds.ts";

/** A parsed value, or what was expected instead. */
export type Parsed<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly expected: string };
export const ok = <T>(value: T): Parsed<T> => ({ ok: true, value });
export const bad = (expected: string): Parsed<never> => ({ ok: false, expected });

export function integerIn(min: number, max: number): (text: string) => Parsed<number> {
  const expected = `expected an integer from ${min} to ${max}`;
  return (text) => {
    if (!/^\d{1,16}$/.test(text)) return bad(expected);
    const n = Number(text);
    return n >= min && n <= max ? ok(n) : bad(expected);
  };
}

export function parseBoolean(text: string): Parsed<boolean> {
  const t = text.toLowerCase();
  if (t === "true" || t === "1" || t === "yes") return ok(true);
  if (t === "false" || t === "0" || t === "no") return ok(false);
  return bad("expected a boolean: true, false, 1, 0, yes or no");
}

/** TRUST_PROXY: a boolean, or the list of trusted proxy addresses (which implies true). */
export function parseTrustProxy(text: string): Parsed<{ trust: boolean; proxies: readonly string[] }> {
  const b = parseBoolean(text);
  if (b.ok) return ok({ trust: b.value, proxies: [] });
  const parts = text.split(",").map((p) => p.trim()).filter((p) => p !== "");
  if (parts.length === 0 || parts.some((p) => isIP(p) === 0)) {
    return bad("expected true, false, 1, 0, yes, no, or a comma-separated list of trusted proxy IP addresses");
  }
  return ok({ trust: true, proxies: parts });
}

/** WEBHOOK_ALLOWED_PORTS: destination ports 1-65535, without leading zeros; duplicates dropped, ascending. */
export function parsePortList(text: string): Parsed<readonly number[]> {
  const ports = new Set<number>();
  const wrong: string[] = [];
  for (const entry of splitList(text)) {
    const n = /^[1-9]\d{0,4}$/.test(entry) ? Number(entry) : NaN;
    if (n <= 65_535) ports.add(n);
    else wrong.push(JSON.stringify(entry.slice(0, 20)));
  }
  if (wrong.length > 0) return bad(`expected comma-separated ports 1-65535 such as 8443,9443; not ports: ${wrong.join(", ")}`);
  return ok([...ports].sort((a, b) => a - b));
}

export function parseSpeed(text: string): Parsed<number> {
  const expected = "expected a positive decimal multiplier such as 1, 10 or 0.5";
  if (!/^\d+(?:\.\d+)?$/.test(text)) return bad(expected);
  const d = parseDecimal(text);
  if (d === null || !d.gt(0)) return bad(expected);
  const n = d.toNumber();
  return Number.isFinite(n) && n > 0 ? ok(n) : bad(expected);
}

export function parseDataDir(text: string): Parsed<string> {
  return text.includes("\0") ? bad("expected a directory path") : ok(text);
}

const HOST_NAME = /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

export function parseHost(text: string): Parsed<string> {
  return isIP(text) !== 0 || HOST_NAME.test(text) ? ok(text) : bad("expected an IP address or host name, e.g. 0.0.0.0 or ::");
}

export function parseFeed(text: string): Parsed<FeedConfig> {
  if (text === "sim") return ok({ kind: "sim" });
  if (text === "live") return ok({ kind: "live" });
  const name = text.startsWith("scenario:") ? text.slice("scenario:".length) : null;
  // The name becomes a file name under scenarios/, so dots-only names (".", "..") are refused with the charset check.
  if (name !== null && /^[A-Za-z0-9_.-]{1,100}$/.test(name) && !/^\.+$/.test(name)) return ok({ kind: "scenario", name });
  // Or a scenario file of one's own: a path (with a slash) to a .jsonl file.
  if (name !== null && name.includes("/") && name.endsWith(".jsonl") && name.length <= 4096 && !name.includes("\0")) return ok({ kind: "scenario", name });
  return bad("expected sim, live, scenario:<name> (name of letters, digits, _ . -) or scenario:<path/to/file.jsonl>");
}

/** METHODOLOGY_REGISTRY: reads and validates the file, and picks this build's own version from it. */
export function parseMethodologyRegistry(path: string): Parsed<MethodologyRelease> {
  if (path.includes("\0")) return bad("expected the path of a JSON file");
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    return bad(`cannot read the registry file: ${e instanceof Error ? e.message : String(e)}`);
  }
  try {
    return ok(ownRelease(parseRegistry(JSON.parse(text))));
  } catch (e) {
    if (e instanceof SyntaxError) return bad(`the registry file is not JSON: ${e.message}`);
    if (e instanceof MethodologyRegistryError) return bad(e.message);
    throw e;
  }
}

export function parseRole(text: string): Parsed<Role> {
  const t = text.toLowerCase();
  return t === "engine" || t === "api" || t === "all" ? ok(t) : bad("expected engine, api or all");
}

export function parseLogLevel(text: string): Parsed<LogLevel> {
  const t = text.toLowerCase();
  return t === "debug" || t === "info" || t === "warn" || t === "error" ? ok(t) : bad("expected debug, info, warn or error");
}

export function parseGitSha(text: string): Parsed<string> {
  // Lower-cased so the same commit always hashes to the same receipt bytes.
  return /^[0-9a-f]{7,40}$/i.test(text) ? ok(text.toLowerCase()) : bad("expected a hex commit id of 7 to 40 digits");
}

export function parseJwtSecret(text: string): Parsed<string> {
  const bytes = Buffer.byteLength(text, "utf8");
  return bytes >= 32
    ? ok(text)
    : bad(`is ${bytes} bytes; an HS256 key must be at least 32 bytes (or unset JWT_SECRET to disable login)`);
}

export function parseToken(text: string): Parsed<string> {
  return /[\s\0]/.test(text) ? bad("must not contain whitespace") : ok(text);
}

export function parseIp(text: string): Parsed<string> {
  return isIP(text) !== 0 ? ok(text) : bad(`${JSON.stringify(text)} is not an IPv4 or IPv6 address`);
}

export function parseOrigin(text: string): Parsed<string> {
  const expected = `${JSON.stringify(text)} is not an http(s) origin such as https://app.example.com (no path, query or credentials)`;
  const url = tryUrl(text);
  if (url === null || (url.protocol !== "http:" && url.protocol !== "https:")) return bad(expected);
  if (url.username !== "" || url.password !== "" || url.pathname !== "/" || url.search !== "" || url.hash !== "") return bad(expected);
  // A bare trailing slash is tolerated; `origin` is what browsers send, so that is what we store.
  if (text.replace(/\/$/, "").includes("/", url.protocol.length + 2)) return bad(expected);
  return ok(url.origin);
}

/** A Host header value: a host name, IPv4 address or bracketed IPv6 address, with an optional port; stored lower-case. */
export function parseHostHeader(text: string): Parsed<string> {
  const m = /^(\[[0-9a-f:.]+\]|[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?)(?::(\d{1,5}))?$/i.exec(text);
  const port = m?.[2] === undefined ? null : Number(m[2]);
  const v6 = m?.[1]?.startsWith("[") === true ? m[1].slice(1, -1) : null;
  if (m === null || (port !== null && (port < 1 || port > 65_535)) || (v6 !== null && isIP(v6) !== 6)) {
    return bad(`${JSON.stringify(text)} is not a host such as oracle.example.com, oracle.example.com:8443 or [::1]:8080`);
  }
  return ok(text.toLowerCase());
}

export function parseHttpUrl(text: string): Parsed<string> {
  const url = tryUrl(text);
  if (url === null || (url.protocol !== "http:" && url.protocol !== "https:") || url.hostname === "") {
    return bad("expected an http:// or https:// URL");
  }
  // Stored without a trailing slash so callers can append `/path`.
  return ok(url.search === "" && url.hash === "" ? text.replace(/\/+$/, "") : text);
}

export function parseDatabaseUrl(text: string): Parsed<string> {
  const url = tryUrl(text);
  return url !== null && (url.protocol === "postgres:" || url.protocol === "postgresql:")
    ? ok(text)
    : bad("expected a postgres:// or postgresql:// URL (or leave unset for the embedded database)");
}

export function parseNatsUrls(text: string): Parsed<readonly string[]> {
  const servers = splitList(text);
  const wrong = servers.filter((s) => {
    const url = tryUrl(s);
    return url === null || (url.protocol !== "nats:" && url.protocol !== "tls:") || url.hostname === "";
  });
  if (servers.length === 0 || wrong.length > 0) {
    return bad("expected nats:// or tls:// URLs, comma-separated (or leave unset to start an embedded nats-server)");
  }
  return ok(servers);
}

/** Parses a comma-separated list; blank entries (a trailing comma) are ignored and duplicates dropped. */
export function listOf(parse: (entry: string) => Parsed<string>, what: string): (text: string) => Parsed<readonly string[]> {
  return (text) => {
    const values: string[] = [];
    const problems: string[] = [];
    for (const entry of splitList(text)) {
      const r = parse(entry);
      if (r.ok) values.push(r.value);
      else problems.push(r.expected);
    }
    if (problems.length > 0) return bad(`expected comma-separated ${what}: ${problems.join("; ")}`);
    return ok([...new Set(values)]);
  };
}

export function splitList(text: string): string[] {
  return text.split(",").map((s) => s.trim()).filter((s) => s !== "");
}

export function tryUrl(text: string): URL | null {
  try {
    return new URL(text);
  } catch {
    return null;
  }
}
