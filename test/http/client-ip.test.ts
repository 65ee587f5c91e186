/**
 * Rate-limit keys of client addresses (issue 14, security): IPv6 clients share one budget per prefix
 * (RATE_LIMIT_IPV6_PREFIX, /64 by default), an IPv4-mapped IPv6 client is its IPv4 address, and with TRUST_PROXY a
 * forwarded value that is not an IP address never becomes a key (the socket's peer is used). Without TRUST_PROXY,
 * X-Forwarded-For is ignored: rotating it does not buy a new budget. The WebSocket per-address connection limit keys
 * clients the same way.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { SimulatedClock } from "../../src/clock.ts";
import { ConfigError, parseConfig } from "../../src/config.ts";
import { canonicalIp, canonicalSet, rateLimitKey } from "../../src/http/client-ip.ts";
import { createPipeline } from "../../src/http/pipeline.ts";
import { Router } from "../../src/http/router.ts";
import { clientAddress, serveUws, type UwsServer } from "../../src/http/uws-adapter.ts";
import { WsHub } from "../../src/http/ws/hub.ts";
import { WS_LIMITS } from "../../src/http/ws/protocol.ts";
import { attachWs, uwsTransport } from "../../src/http/ws/uws.ts";
import { catalog } from "./fixtures.ts";

const T0 = Date.UTC(2026, 5, 12, 10, 0, 0);
const router = new Router([{ method: "GET", path: "/v1/whoami", handler: (r) => ({ status: 200, json: { ip: r.ip } }) }]);

function limited(ipv6Prefix?: number) {
  const clock = new SimulatedClock(T0);
  const handle = createPipeline({ router, clock, ratePerMinute: 5, corsOrigins: [], ...(ipv6Prefix === undefined ? {} : { ipv6Prefix }) });
  return async (ip: string): Promise<number> => (await handle({ method: "GET", path: "/v1/whoami", query: new URLSearchParams(), headers: {}, ip, body: null })).status;
}

describe("canonicalIp", () => {
  it("canonicalises addresses and refuses everything else", () => {
    expect(canonicalIp("203.0.113.5")).toBe("203.0.113.5");
    expect(canonicalIp("::FFFF:203.0.113.5")).toBe("203.0.113.5");
    expect(canonicalIp("::ffff:cb00:7105")).toBe("203.0.113.5");
    expect(canonicalIp("2001:0DB8:0000:0000:0000:0000:0000:0001")).toBe("2001:db8::1");
    expect(canonicalIp("2001:db8:0:0:1:0:0:1")).toBe("2001:db8::1:0:0:1");
    expect(canonicalIp("fe80::1%eth0")).toBe("fe80::1");
    for (const bad of ["", "unknown", "example.com", "203.0.113.5:4711", "[2001:db8::1]", "[2001:db8::1]:443", "01.2.3.4", "1.2.3", "_gateway", "2001:db8::1::2"]) {
      expect(canonicalIp(bad), bad).toBeNull();
    }
  });
});

describe("rateLimitKey", () => {
  it("keys IPv6 by its /64 network by default, IPv4 and IPv4-mapped IPv6 by the IPv4 address", () => {
    expect(rateLimitKey("2001:db8:1:2:aaaa:bbbb:cccc:dddd")).toBe("2001:db8:1:2::/64");
    expect(rateLimitKey("2001:DB8:1:2::1")).toBe("2001:db8:1:2::/64");
    expect(rateLimitKey("2001:db8:1:3::1")).toBe("2001:db8:1:3::/64");
    expect(rateLimitKey("203.0.113.5")).toBe("203.0.113.5");
    expect(rateLimitKey("::ffff:203.0.113.5")).toBe("203.0.113.5");
    expect(rateLimitKey("::1")).toBe("::/64");
  });

  it("takes the prefix length", () => {
    expect(rateLimitKey("2001:db8:1:2::1", 48)).toBe("2001:db8:1::/48");
    expect(rateLimitKey("2001:db8:1:2::1", 56)).toBe("2001:db8:1::/56");
    expect(rateLimitKey("2001:db8:1:2ff::1", 60)).toBe("2001:db8:1:2f0::/60");
    expect(rateLimitKey("2001:db8:1:2::1", 128)).toBe("2001:db8:1:2::1/128");
    expect(rateLimitKey("2001:db8:1:2::1", 1)).toBe("::/1");
    expect(rateLimitKey("8001:db8::1", 1)).toBe("8000::/1");
  });

  it("RATE_LIMIT_IPV6_PREFIX is an integer 1-128, 64 by default", () => {
    expect(parseConfig({}).rateLimitIpv6Prefix).toBe(64);
    expect(parseConfig({ RATE_LIMIT_IPV6_PREFIX: "48" }).rateLimitIpv6Prefix).toBe(48);
    expect(parseConfig({ RATE_LIMIT_IPV6_PREFIX: "128" }).rateLimitIpv6Prefix).toBe(128);
    for (const bad of ["0", "129", "-1", "64.5", "/64", "abc"]) {
      expect(() => parseConfig({ RATE_LIMIT_IPV6_PREFIX: bad }), bad).toThrow(ConfigError);
    }
  });
});

describe("the pipeline's per-client budget", () => {
  it("one /64 is one client: rotating addresses inside it buys nothing; another /64 has its own budget", async () => {
    const take = limited();
    const statuses: number[] = [];
    for (let i = 1; i <= 8; i++) statuses.push(await take(`2001:db8:aaaa:1:${i.toString(16)}:${(i * 7919).toString(16)}::${i}`));
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429, 429]);
    expect(await take("2001:db8:aaaa:2::1")).toBe(200);
  });

  it("a wider prefix groups more, /128 keys every address", async () => {
    const wide = limited(48);
    for (let i = 0; i < 5; i++) expect(await wide(`2001:db8:bbbb:${i}::1`)).toBe(200);
    expect(await wide("2001:db8:bbbb:ff::1")).toBe(429);
    const exact = limited(128);
    for (let i = 0; i < 8; i++) expect(await exact(`2001:db8:cccc:1::${i + 1}`)).toBe(200);
  });

  it("an IPv4 client is one client whether it arrives as IPv4 or IPv4-mapped IPv6", async () => {
    const take = limited();
    const statuses: number[] = [];
    for (const ip of ["198.51.100.9", "::ffff:198.51.100.9", "::FFFF:c633:6409", "198.51.100.9", "::ffff:198.51.100.9", "198.51.100.9"]) statuses.push(await take(ip));
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
  });
});

describe("clientAddress with TRUST_PROXY", () => {
  const none = canonicalSet([]);
  const proxies = canonicalSet(["10.0.0.2", "2001:DB8::10"]);

  it("never takes a forwarded value that is not an IP address: the socket's peer instead", () => {
    for (const xff of ["unknown", "evil-key-1", "203.0.113.9:4711", "[2001:db8::5]", "<script>", "198.51.100.7, garbage", "  ,  ", `${"1".repeat(70)}`]) {
      expect(clientAddress("10.0.0.2", xff, true, none), xff).toBe("10.0.0.2");
      expect(clientAddress("10.0.0.2", xff, true, proxies), xff).toBe("10.0.0.2");
    }
  });

  it("takes the right-most untrusted hop in canonical form; a mapped or differently written peer is still the proxy", () => {
    expect(clientAddress("10.0.0.2", "garbage, 198.51.100.7", true, none)).toBe("198.51.100.7");
    expect(clientAddress("10.0.0.2", "::ffff:198.51.100.7", true, none)).toBe("198.51.100.7");
    expect(clientAddress("10.0.0.2", "2001:0db8:0:0::7", true, none)).toBe("2001:db8::7");
    expect(clientAddress("::ffff:10.0.0.2", "198.51.100.7, 2001:db8::10", true, proxies)).toBe("198.51.100.7");
    expect(clientAddress("2001:db8:0::10", "198.51.100.7", true, proxies)).toBe("198.51.100.7");
    expect(clientAddress("203.0.113.1", "198.51.100.7", true, proxies)).toBe("203.0.113.1");
  });
});

describe("X-Forwarded-For over a real server", () => {
  let plain: UwsServer;
  let proxied: UwsServer;
  const clock = new SimulatedClock(T0);
  beforeAll(async () => {
    const handle = createPipeline({ router, clock, ratePerMinute: 3, corsOrigins: [] });
    plain = await serveUws(handle, { host: "127.0.0.1", port: 0, trustProxy: false });
    proxied = await serveUws(createPipeline({ router, clock, ratePerMinute: 1000, corsOrigins: [] }), { host: "127.0.0.1", port: 0, trustProxy: true });
  });
  afterAll(() => {
    plain?.close();
    proxied?.close();
  });

  const whoami = async (s: UwsServer, xff: string) => {
    const r = await fetch(`http://127.0.0.1:${s.port}/v1/whoami`, { headers: { "x-forwarded-for": xff } });
    return { status: r.status, ip: r.status === 200 ? ((await r.json()) as { ip: string }).ip : null };
  };

  it("is ignored by default: the client is the socket's peer, and rotating the header buys no budget", async () => {
    const seen = [];
    for (let i = 1; i <= 5; i++) seen.push(await whoami(plain, `198.51.100.${i}, 2001:db8::${i}`));
    expect(seen.map((s) => s.status)).toEqual([200, 200, 200, 429, 429]);
    expect(seen.slice(0, 3).map((s) => s.ip)).toEqual(["127.0.0.1", "127.0.0.1", "127.0.0.1"]);
  });

  it("with TRUST_PROXY=true, a valid forwarded address is the client and anything else falls back to the peer", async () => {
    expect(await whoami(proxied, "198.51.100.7")).toEqual({ status: 200, ip: "198.51.100.7" });
    expect(await whoami(proxied, "6.6.6.6, ::FFFF:198.51.100.8")).toEqual({ status: 200, ip: "198.51.100.8" });
    for (const xff of ["not-an-ip", "198.51.100.7:80", "rotating-key-42"]) expect(await whoami(proxied, xff), xff).toEqual({ status: 200, ip: "127.0.0.1" });
  });
});

describe("WebSocket connections per client", () => {
  let server: UwsServer;
  let hub: WsHub;
  beforeAll(async () => {
    const transport = uwsTransport();
    hub = new WsHub({ catalog, clock: new SimulatedClock(T0), transport });
    const handle = createPipeline({ router, clock: new SimulatedClock(T0), ratePerMinute: 1000, corsOrigins: [] });
    server = await serveUws(handle, {
      host: "127.0.0.1",
      port: 0,
      trustProxy: true,
      configure: (app) => {
        transport.bind(app);
        attachWs(app, hub, { trustProxy: true });
      },
    });
  });
  afterAll(() => {
    hub?.stop();
    server?.close();
  });

  /** Opens a connection as `xff` (the peer is the trusted proxy); resolves with its first message, or its close. */
  const open = (xff: string): Promise<{ ws: WebSocket; first: Record<string, unknown> }> =>
    new Promise((resolve, reject) => {
      const ws = new WebSocket(`ws://127.0.0.1:${server.port}/v1/ws`, { headers: { "x-forwarded-for": xff } });
      ws.once("message", (data) => resolve({ ws, first: JSON.parse(data.toString()) as Record<string, unknown> }));
      ws.once("error", reject);
    });

  it("counts every address of one /64 against the same 20 connections", async () => {
    const opened: WebSocket[] = [];
    try {
      for (let i = 1; i <= WS_LIMITS.connectionsPerIp; i++) {
        const c = await open(`2001:db8:dddd:1:${i.toString(16)}::${i}`);
        opened.push(c.ws);
        expect(c.first["type"], `connection ${i}`).toBe("hello");
      }
      const refused = await open("2001:db8:dddd:1:ffff:ffff:ffff:ffff");
      opened.push(refused.ws);
      expect(refused.first).toMatchObject({ type: "error", error: "too_many_connections" });
      const other = await open("2001:db8:dddd:2::1");
      opened.push(other.ws);
      expect(other.first["type"]).toBe("hello");
    } finally {
      for (const ws of opened) ws.close();
    }
  });
});
