/** X402_PAY_TO, X402_NETWORK, X402_PRICES, X402_FACILITATOR_URL and PUBLIC_BASE_URL: defaults, accepted values, refusals at start. */
import { describe, expect, it } from "vitest";
import { ConfigError, describeConfig, featureNotices, parseConfig, publicBaseUrlNotice } from "../../src/config.ts";
import type { Catalog } from "../../src/catalog/index.ts";
import { systemClock } from "../../src/clock.ts";
import { mcpAccess } from "../../src/mcp/request-guard.ts";
import { prepareAgentRoutes } from "../../src/mcp/service.ts";
import type { SecretBox } from "../../src/secret-box.ts";
import type { Executor } from "../../src/store/index.ts";
import { DEFAULT_PRICES, priceAtomic } from "../../src/x402/index.ts";

const ADDRESS = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM";

function issues(env: Record<string, string>): { name: string; message: string }[] {
  try {
    parseConfig(env);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as ConfigError).issues.map((i) => ({ name: i.name, message: i.message }));
  }
  throw new Error(`expected a ConfigError for ${JSON.stringify(env)}`);
}

describe("x402 configuration", () => {
  it("is off by default, on mainnet USDC, at the default prices, self-facilitated", () => {
    expect(parseConfig({}).x402).toEqual({
      payTo: null,
      network: { caip2: "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp", name: "solana", usdcMint: "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v" },
      prices: { get_peg_feed: "0.001", subscribe_peg_events: "0.0005", simulate_depeg: "0.001" },
      facilitatorUrl: null,
      answerWindowMs: 24 * 3_600_000,
    });
    for (const p of Object.values(DEFAULT_PRICES)) expect(priceAtomic(p) >= 500n && priceAtomic(p) <= 1000n).toBe(true);
  });

  it("takes a pay-to address, a network by name or CAIP-2 id, partial prices and a facilitator", () => {
    const c = parseConfig({
      X402_PAY_TO: ADDRESS,
      X402_NETWORK: "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1",
      X402_PRICES: " simulate_depeg = 0.0008 , get_peg_feed=0.000750 ",
      X402_FACILITATOR_URL: "https://facilitator.example.com/x402",
    }).x402;
    expect(c).toMatchObject({ payTo: ADDRESS, network: { name: "solana-devnet" }, facilitatorUrl: "https://facilitator.example.com/x402" });
    expect(c.prices).toEqual({ get_peg_feed: "0.000750", subscribe_peg_events: "0.0005", simulate_depeg: "0.0008" });
    expect(priceAtomic(c.prices.get_peg_feed)).toBe(750n);
    expect(parseConfig({ X402_NETWORK: "solana-testnet" }).x402.network.name).toBe("solana-testnet");
  });

  it("refuses invalid values at start, all at once", () => {
    const found = issues({
      X402_PAY_TO: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
      X402_NETWORK: "eip155:8453",
      X402_PRICES: "get_peg_feed=free",
      X402_FACILITATOR_URL: "ftp://x",
    });
    expect(found.map((i) => i.name)).toEqual(["X402_PAY_TO", "X402_NETWORK", "X402_PRICES", "X402_FACILITATOR_URL"]);
    for (const bad of ["1111", "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWMM", "I".repeat(44), "not an address"]) {
      expect(issues({ X402_PAY_TO: bad }).map((i) => i.name), bad).toEqual(["X402_PAY_TO"]);
    }
    for (const bad of ["get_peg_feed", "get_peg_feed=0", "get_peg_feed=1.5", "get_peg_feed=0.0000001", "get_peg_feed=-1", "get_peg_feed=1e-3", "verify_alert=0.001", "get_peg_feed=0.001,get_peg_feed=0.002"]) {
      expect(issues({ X402_PRICES: bad }).map((i) => i.name), bad).toEqual(["X402_PRICES"]);
    }
    expect(issues({ X402_PRICES: "verify_alert=0.001" })[0]!.message).toContain("get_peg_feed, subscribe_peg_events, simulate_depeg");
  });

  it("masks facilitator credentials in the logged configuration and notes a facilitator without a pay-to address", () => {
    const c = parseConfig({ X402_FACILITATOR_URL: "https://user:secret@facilitator.example.com/" });
    expect(JSON.stringify(describeConfig(c))).not.toContain("user:secret");
    expect((describeConfig(c)["x402"] as { facilitatorUrl: string }).facilitatorUrl).toBe("https://***@facilitator.example.com");
    expect(featureNotices(c)).toContain("X402_FACILITATOR_URL is set but X402_PAY_TO is not: the paid agent tools are off");
    expect(featureNotices(parseConfig({ X402_PAY_TO: ADDRESS }))).not.toContain("X402_FACILITATOR_URL is set but X402_PAY_TO is not: the paid agent tools are off");
  });
});

describe("PUBLIC_BASE_URL", () => {
  it("is the base of the absolute URLs given out, else WEBHOOK_BASE_URL, else localhost on PORT, with a warning unless set", () => {
    const set = parseConfig({ PUBLIC_BASE_URL: "https://oracle.example.com/", PORT: "9000" });
    expect(set).toMatchObject({ publicBaseUrl: "https://oracle.example.com", publicBaseUrlFrom: "PUBLIC_BASE_URL", webhookBaseUrl: "https://oracle.example.com" });
    expect(publicBaseUrlNotice(set)).toBeNull();
    const both = parseConfig({ PUBLIC_BASE_URL: "https://oracle.example.com", WEBHOOK_BASE_URL: "https://hooks.example.com" });
    expect(both).toMatchObject({ publicBaseUrl: "https://oracle.example.com", webhookBaseUrl: "https://hooks.example.com" });
    const webhook = parseConfig({ WEBHOOK_BASE_URL: "https://hooks.example.com" });
    expect(webhook).toMatchObject({ publicBaseUrl: "https://hooks.example.com", publicBaseUrlFrom: "WEBHOOK_BASE_URL" });
    expect(publicBaseUrlNotice(webhook)).toMatch(/^PUBLIC_BASE_URL is not set: .* use https:\/\/hooks\.example\.com \(WEBHOOK_BASE_URL\)$/);
    const unset = parseConfig({ PORT: "9000" });
    expect(unset).toMatchObject({ publicBaseUrl: "http://localhost:9000", publicBaseUrlFrom: "PORT", webhookBaseUrl: "http://localhost:9000" });
    expect(publicBaseUrlNotice(unset)).toMatch(/^PUBLIC_BASE_URL is not set: .* use http:\/\/localhost:9000, which clients elsewhere cannot reach$/);
    expect(issues({ PUBLIC_BASE_URL: "ftp://oracle.example.com" }).map((i) => i.name)).toEqual(["PUBLIC_BASE_URL"]);
  });

  it("the serving process warns at start while it is unset", async () => {
    const lines: [string, string][] = [];
    // Preparing the agent routes without X402_PAY_TO touches neither the store nor the catalog.
    const base = { catalog: {} as Catalog, db: {} as Executor, secrets: {} as SecretBox, clock: systemClock, log: (level: string, msg: string) => void lines.push([level, msg]) };
    await prepareAgentRoutes({ ...base, config: parseConfig({ PORT: "9000" }) });
    expect(lines).toEqual([["warn", expect.stringMatching(/^PUBLIC_BASE_URL is not set: .*http:\/\/localhost:9000/)]]);
    lines.length = 0;
    await prepareAgentRoutes({ ...base, config: parseConfig({ PUBLIC_BASE_URL: "https://oracle.example.com" }) });
    expect(lines).toEqual([]);
  });

  it("names a Host /mcp accepts, next to WEBHOOK_BASE_URL's", () => {
    const { hosts } = mcpAccess(parseConfig({ PUBLIC_BASE_URL: "https://oracle.example.com", WEBHOOK_BASE_URL: "https://hooks.example.com:8443", PORT: "9000" }));
    expect(hosts).toEqual(expect.arrayContaining(["oracle.example.com", "hooks.example.com:8443", "localhost:9000"]));
  });
});
