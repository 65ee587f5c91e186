/**
 * Which IP addresses a webhook may reach (interface 6.3.2, addendum F): only globally routable unicast. IPv4 is a
 * deny list of the IANA special-purpose ranges; IPv6 is an allow list (global unicast 2000::/3 minus its special
 * blocks), because the special IPv6 space is large and keeps growing. Forms that carry an IPv4 address inside IPv6
 * (IPv4-mapped, NAT64 64:ff9b::/96, 6to4 2002::/16) are judged by the IPv4 address they carry.
 */
import { BlockList, isIPv4, isIPv6 } from "node:net";

/** The verdict on one address. `address` is the canonical text to connect to (a mapped address becomes IPv4). */
export type AddressVerdict =
  | { readonly allowed: true; readonly address: string; readonly family: 4 | 6 }
  | { readonly allowed: false; readonly address: string; readonly range: string; readonly loopback: boolean };

interface Range {
  readonly label: string;
  readonly list: BlockList;
  readonly loopback?: true;
}

function range(label: string, cidr: string, family: "ipv4" | "ipv6", loopback = false): Range {
  const [net, bits] = cidr.split("/");
  const list = new BlockList();
  list.addSubnet(net!, Number(bits), family);
  return loopback ? { label, list, loopback } : { label, list };
}

/** Most specific first, so the message names the narrowest range. */
const V4_DENY: readonly Range[] = [
  range("cloud metadata (169.254.169.254)", "169.254.169.254/32", "ipv4"),
  range("cloud metadata (100.100.100.200)", "100.100.100.200/32", "ipv4"),
  range("cloud metadata (192.0.0.192)", "192.0.0.192/32", "ipv4"),
  range("limited broadcast (255.255.255.255)", "255.255.255.255/32", "ipv4"),
  range("this network (0.0.0.0/8)", "0.0.0.0/8", "ipv4"),
  range("private (10.0.0.0/8)", "10.0.0.0/8", "ipv4"),
  range("shared address space / CGNAT (100.64.0.0/10)", "100.64.0.0/10", "ipv4"),
  range("loopback (127.0.0.0/8)", "127.0.0.0/8", "ipv4", true),
  range("link-local (169.254.0.0/16)", "169.254.0.0/16", "ipv4"),
  range("private (172.16.0.0/12)", "172.16.0.0/12", "ipv4"),
  range("IETF protocol assignments (192.0.0.0/24)", "192.0.0.0/24", "ipv4"),
  range("documentation (192.0.2.0/24)", "192.0.2.0/24", "ipv4"),
  range("6to4 relay anycast (192.88.99.0/24)", "192.88.99.0/24", "ipv4"),
  range("private (192.168.0.0/16)", "192.168.0.0/16", "ipv4"),
  range("benchmarking (198.18.0.0/15)", "198.18.0.0/15", "ipv4"),
  range("documentation (198.51.100.0/24)", "198.51.100.0/24", "ipv4"),
  range("documentation (203.0.113.0/24)", "203.0.113.0/24", "ipv4"),
  range("multicast (224.0.0.0/4)", "224.0.0.0/4", "ipv4"),
  range("reserved (240.0.0.0/4)", "240.0.0.0/4", "ipv4"),
];

/** Special blocks inside (or checked before) global unicast 2000::/3. */
const V6_DENY: readonly Range[] = [
  range("unspecified (::)", "::/128", "ipv6"),
  range("loopback (::1)", "::1/128", "ipv6", true),
  range("IPv4-compatible (::/96, deprecated)", "::/96", "ipv6"),
  range("local-use NAT64 (64:ff9b:1::/48)", "64:ff9b:1::/48", "ipv6"),
  range("discard-only (100::/64)", "100::/64", "ipv6"),
  range("Teredo (2001::/32)", "2001::/32", "ipv6"),
  range("IETF protocol assignments (2001::/23)", "2001::/23", "ipv6"),
  range("documentation (2001:db8::/32)", "2001:db8::/32", "ipv6"),
  range("documentation (3fff::/20)", "3fff::/20", "ipv6"),
  range("SRv6 SIDs (5f00::/16)", "5f00::/16", "ipv6"),
  range("cloud metadata (fd00:ec2::254)", "fd00:ec2::254/128", "ipv6"),
  range("unique local (fc00::/7)", "fc00::/7", "ipv6"),
  range("link-local (fe80::/10)", "fe80::/10", "ipv6"),
  range("site-local (fec0::/10, deprecated)", "fec0::/10", "ipv6"),
  range("multicast (ff00::/8)", "ff00::/8", "ipv6"),
];

const GLOBAL_UNICAST = range("global unicast", "2000::/3", "ipv6");

/** The 16 bytes of an IPv6 address (no zone id), or null if it is not one. */
export function ipv6Bytes(text: string): Uint8Array | null {
  if (!isIPv6(text) || text.includes("%")) return null;
  let s = text;
  const tail: number[] = [];
  const lastColon = s.lastIndexOf(":");
  if (s.includes(".", lastColon)) {
    const v4 = s.slice(lastColon + 1);
    if (!isIPv4(v4)) return null;
    for (const part of v4.split(".")) tail.push(Number(part));
    s = s.slice(0, lastColon + 1) + "0:0"; // placeholder groups, replaced below
  }
  const [head, rest] = s.includes("::") ? s.split("::") : [s, undefined];
  const groups = (x: string | undefined): string[] => (x === undefined || x === "" ? [] : x.split(":"));
  const h = groups(head);
  const r = groups(rest);
  const fill = rest === undefined ? 0 : 8 - h.length - r.length;
  const all = [...h, ...Array<string>(fill).fill("0"), ...r];
  if (all.length !== 8) return null;
  const out = new Uint8Array(16);
  all.forEach((g, i) => {
    const v = parseInt(g, 16);
    out[i * 2] = v >> 8;
    out[i * 2 + 1] = v & 0xff;
  });
  if (tail.length === 4) out.set(tail, 12);
  return out;
}

function v4At(bytes: Uint8Array, at: number): string {
  return `${bytes[at]}.${bytes[at + 1]}.${bytes[at + 2]}.${bytes[at + 3]}`;
}

function startsWith(bytes: Uint8Array, prefix: readonly number[]): boolean {
  return prefix.every((b, i) => bytes[i] === b);
}

function classifyV4(address: string): AddressVerdict {
  for (const r of V4_DENY) {
    if (r.list.check(address, "ipv4")) return { allowed: false, address, range: r.label, loopback: r.loopback === true };
  }
  return { allowed: true, address, family: 4 };
}

/** Wraps the verdict on an embedded IPv4 address so the message names both forms. */
function embedded(address: string, kind: string, v4: string): AddressVerdict {
  const inner = classifyV4(v4);
  if (inner.allowed) return kind === "IPv4-mapped" ? inner : { allowed: true, address, family: 6 };
  return { allowed: false, address, range: `${kind} ${v4}: ${inner.range}`, loopback: inner.loopback };
}

/**
 * Classifies one IP address (IPv4 dotted decimal or IPv6 text, as `net.isIP` accepts; other notations are the URL
 * parser's job). Anything that is not a plain IP address, including an IPv6 zone id (`fe80::1%eth0`), is refused.
 */
export function classifyAddress(text: string): AddressVerdict {
  if (isIPv4(text)) return classifyV4(text);
  if (text.includes("%")) return { allowed: false, address: text, range: "scoped address (zone id)", loopback: false };
  const bytes = ipv6Bytes(text);
  if (bytes === null) return { allowed: false, address: text, range: "not an IP address", loopback: false };
  const ZERO10 = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
  if (startsWith(bytes, [...ZERO10, 0xff, 0xff])) return embedded(text, "IPv4-mapped", v4At(bytes, 12));
  if (startsWith(bytes, [0x00, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0])) return embedded(text, "NAT64", v4At(bytes, 12));
  if (startsWith(bytes, [0x20, 0x02])) return embedded(text, "6to4", v4At(bytes, 2));
  for (const r of V6_DENY) {
    if (r.list.check(text, "ipv6")) return { allowed: false, address: text, range: r.label, loopback: r.loopback === true };
  }
  if (!GLOBAL_UNICAST.list.check(text, "ipv6")) {
    return { allowed: false, address: text, range: "outside global unicast (2000::/3)", loopback: false };
  }
  return { allowed: true, address: text, family: 6 };
}
