/**
 * The x402 settings (X402_PAY_TO, X402_NETWORK, X402_PRICES, X402_FACILITATOR_URL) as typed values, parsed by
 * src/config.ts. Pure: the networks and their USDC mints are the x402 project's own (`@x402/svm`, protocol v2 CAIP-2
 * identifiers); this module does not load the libraries, so the configuration stays cheap to parse.
 */
import { isBase58OfLength } from "../catalog/base58.ts";

/** The tools (and HTTP routes) that cost a payment; the keys of X402_PRICES. */
export const PAID_TOOLS = ["get_peg_feed", "subscribe_peg_events", "simulate_depeg"] as const;
export type PaidTool = (typeof PAID_TOOLS)[number];

/** Default USDC price per call (decimal strings). */
export const DEFAULT_PRICES: Readonly<Record<PaidTool, string>> = {
  get_peg_feed: "0.001",
  subscribe_peg_events: "0.0005",
  simulate_depeg: "0.001",
};

/** The highest price X402_PRICES accepts (x402 clients refuse more than $1 a payment by default). */
export const MAX_PRICE_USDC = "1";

/** A Solana cluster x402 pays on: its CAIP-2 id (what goes on the wire), short name and USDC mint. */
export interface X402Network {
  readonly caip2: `solana:${string}`;
  readonly name: "solana" | "solana-devnet" | "solana-testnet";
  /** USDC's SPL mint on this cluster (6 decimals). */
  readonly usdcMint: string;
}

export const X402_NETWORKS: readonly X402Network[] = [
  { caip2: "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp", name: "solana", usdcMint: "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v" },
  { caip2: "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1", name: "solana-devnet", usdcMint: "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU" },
  { caip2: "solana:4uhcVJyU9pJkvQyS88uRDiswHXSCkY3z", name: "solana-testnet", usdcMint: "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU" },
];

/** USDC has 6 decimals: prices are whole micro-USDC. */
export const USDC_DECIMALS = 6;

/** Paid tools over MCP and the /x402/* HTTP routes. `payTo` null: paid tools are off (not listed, routes absent). */
export interface X402Config {
  /** Base58 address the payments go to (its USDC associated token account receives them); null: x402 off. */
  readonly payTo: string | null;
  readonly network: X402Network;
  /** USDC price per call of each paid tool, as a decimal string (at most 6 decimals). */
  readonly prices: Readonly<Record<PaidTool, string>>;
  /** An x402 facilitator that verifies and settles; null: self-facilitated through SOLANA_RPC_URL. */
  readonly facilitatorUrl: string | null;
  /** How long a settled payment's answer is owed to the same payment presented again, ms (X402_ANSWER_WINDOW_HOURS). */
  readonly answerWindowMs: number;
}

type Parsed<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly expected: string };

/** X402_PAY_TO: a base58 Solana address (32 bytes). */
export function parsePayTo(text: string): Parsed<string> {
  if (text.length > 44 || !isBase58OfLength(text, 32)) {
    return { ok: false, expected: "expected a base58 Solana address (32 bytes), the wallet that receives USDC" };
  }
  return { ok: true, value: text };
}

/** X402_NETWORK: solana, solana-devnet, solana-testnet, or their CAIP-2 ids. */
export function parseNetwork(text: string): Parsed<X402Network> {
  const n = X402_NETWORKS.find((x) => x.name === text || x.caip2 === text);
  return n === undefined
    ? { ok: false, expected: `expected one of ${X402_NETWORKS.map((x) => x.name).join(", ")} (or a CAIP-2 id such as ${X402_NETWORKS[0]!.caip2})` }
    : { ok: true, value: n };
}

const PRICE = /^(?:0|[1-9]\d*)(?:\.\d{1,6})?$/;

/** Micro-USDC of a price text (already matching PRICE). */
export function priceAtomic(price: string): bigint {
  const [whole, frac = ""] = price.split(".");
  return BigInt(whole!) * 1_000_000n + BigInt(frac.padEnd(USDC_DECIMALS, "0"));
}

/**
 * X402_PRICES: comma-separated `tool=price` pairs in USDC (e.g. `get_peg_feed=0.001,simulate_depeg=0.0008`); tools
 * not named keep their default. A price has at most 6 decimals, is above 0 and at most 1 USDC.
 */
export function parsePrices(text: string): Parsed<Readonly<Record<PaidTool, string>>> {
  const prices: Record<PaidTool, string> = { ...DEFAULT_PRICES };
  const seen = new Set<string>();
  for (const part of text.split(",").map((s) => s.trim()).filter((s) => s !== "")) {
    const eq = part.indexOf("=");
    const tool = (eq < 0 ? part : part.slice(0, eq)).trim();
    const price = eq < 0 ? "" : part.slice(eq + 1).trim();
    if (!(PAID_TOOLS as readonly string[]).includes(tool)) return { ok: false, expected: `expected tool=price pairs; the paid tools are ${PAID_TOOLS.join(", ")}` };
    if (seen.has(tool)) return { ok: false, expected: `${tool} is priced twice` };
    seen.add(tool);
    if (!PRICE.test(price)) return { ok: false, expected: `${tool}: expected a USDC amount such as 0.001 (at most 6 decimals)` };
    const atomic = priceAtomic(price);
    if (atomic <= 0n || atomic > priceAtomic(MAX_PRICE_USDC)) return { ok: false, expected: `${tool}: a price is above 0 and at most ${MAX_PRICE_USDC} USDC` };
    prices[tool as PaidTool] = price;
  }
  return { ok: true, value: prices };
}

/** The X402_PRICES text of the default prices (its documented default). */
export const DEFAULT_PRICES_TEXT = PAID_TOOLS.map((t) => `${t}=${DEFAULT_PRICES[t]}`).join(",");
