/**
 * Client addresses: the canonical text of an IP address, and the key a client's rate-limit budget is kept under.
 *
 * IPv6 clients are keyed by a prefix (RATE_LIMIT_IPV6_PREFIX, /64 by default), not by their full address: a home or
 * cloud connection holds a whole /64, so keying by /128 would hand one client 2^64 budgets (and let it churn the
 * limiter's bounded client table until real clients are evicted). An IPv4-mapped IPv6 address (`::ffff:1.2.3.4`, what
 * a dual-stack listener reports for an IPv4 peer) is the IPv4 client it maps.
 */
import { isIP } from "node:net";
import { ipv6Bytes } from "../delivery/ip-ranges.ts";

/** Default of RATE_LIMIT_IPV6_PREFIX. */
export const DEFAULT_IPV6_PREFIX = 64;

/** The IPv4 address an IPv4-mapped IPv6 address (::ffff:0:0/96) carries, or null. */
function mappedV4(b: Uint8Array): string | null {
  for (let i = 0; i < 10; i++) if (b[i] !== 0) return null;
  if (b[10] !== 0xff || b[11] !== 0xff) return null;
  return `${b[12]}.${b[13]}.${b[14]}.${b[15]}`;
}

/** RFC 5952 text of 16 bytes: lower-case hex, no leading zeros, the longest run of two or more zero groups as `::`. */
function v6Text(b: Uint8Array): string {
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((b[i]! << 8) | b[i + 1]!);
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) [best, bestLen] = [i, j - i];
    i = j;
  }
  const hex = (g: readonly number[]) => g.map((x) => x.toString(16)).join(":");
  return best < 0 ? hex(groups) : `${hex(groups.slice(0, best))}::${hex(groups.slice(best + bestLen))}`;
}

/** The 16 bytes of an IPv6 address; a zone id (`fe80::1%eth0`) is dropped. Null when `text` is not IPv6. */
function v6Bytes(text: string): Uint8Array | null {
  const zone = text.indexOf("%");
  return ipv6Bytes(zone < 0 ? text : text.slice(0, zone));
}

/**
 * The canonical text of an IP address: IPv4 dotted decimal (an IPv4-mapped IPv6 address becomes its IPv4 address),
 * IPv6 in RFC 5952 form. Null when `text` is not an IP address (a host name, a port suffix, garbage).
 */
export function canonicalIp(text: string): string | null {
  const family = isIP(text);
  if (family === 4) return text;
  if (family !== 6) return null;
  const b = v6Bytes(text);
  if (b === null) return null;
  return mappedV4(b) ?? v6Text(b);
}

/**
 * The rate-limit key of a client address: an IPv4 address itself (mapped IPv6 included), an IPv6 address as its
 * `prefix`-bit network (`2001:db8:1:2::/64`). Text that is not an IP address is its own key.
 */
export function rateLimitKey(ip: string, prefix: number = DEFAULT_IPV6_PREFIX): string {
  if (!ip.includes(":")) return ip; // IPv4 (the common case), or not an address at all
  const b = v6Bytes(ip);
  if (b === null) return ip;
  const v4 = mappedV4(b);
  if (v4 !== null) return v4;
  const bits = Math.min(128, Math.max(1, Math.trunc(prefix)));
  for (let i = 0; i < 16; i++) {
    const keep = Math.min(8, Math.max(0, bits - i * 8));
    b[i] = b[i]! & ((0xff << (8 - keep)) & 0xff);
  }
  return `${v6Text(b)}/${bits}`;
}

/** The canonical set of configured proxy addresses (entries that are not addresses are left out). */
export function canonicalSet(addresses: readonly string[]): ReadonlySet<string> {
  const out = new Set<string>();
  for (const a of addresses) {
    const c = canonicalIp(a);
    if (c !== null) out.add(c);
  }
  return out;
}
