/**
 * Kamino Lending positions from JSON in the shape of Kamino's public REST API obligations
 * (`api.kamino.finance`, e.g. `/kamino-market/{market}/users/{wallet}/obligations` and the obligation metrics
 * history): an array of obligations, each with
 *
 *   refreshedStats: { liquidationLtv, userTotalBorrow, userTotalBorrowBorrowFactorAdjusted, ... }  decimal strings
 *   deposits: [{ mintAddress, amount, marketValueRefreshed }]                                      USD market values
 *   borrows:  [{ mintAddress, amount, marketValueRefreshed }]
 *
 * plus `obligationAddress` and a raw `state` (which holds the `owner`). Kamino's public API lists obligations per
 * wallet only, so this adapter reads a market-wide list in that same shape from a configurable base URL
 * (`{baseUrl}/kamino-market/{market}/obligations`, e.g. an indexer or mirror of the market's obligations).
 *
 * Privacy by construction: the parser reads `refreshedStats`, `deposits` and `borrows` only. It never reads `state`,
 * `owner`, `obligationAddress` or any other member, so no wallet, owner or authority enters the model.
 *
 * Mapping (decision): each non-empty deposit of an obligation with debt becomes one position with that deposit's
 * market value as collateral, the obligation's weighted `liquidationLtv` as threshold, and the obligation's
 * borrow-factor-adjusted debt apportioned by the deposit's share of the obligation's collateral. With one collateral
 * (the common loop) this is exact; with several it assumes they all move with the shocked one (conservative).
 */
import { lendingPosition, PositionError, type LendingPosition } from "../../advisory/index.ts";
import { D, type Decimal } from "../../methodology/index.ts";
import { HttpStatusError, MalformedPayloadError } from "../sources/live/errors.ts";
import { endpointUrl, readBodyCapped } from "../sources/live/http.ts";
import type { PositionSource, PositionSourceStats } from "./source.ts";

export const KAMINO_DEFAULT_BASE_URL = "https://api.kamino.finance";
/** Kamino's main lending market. */
export const KAMINO_MAIN_MARKET = "7u3HeHxYDLhnCoErrtycNokbQYbWGzLs6JSDqGAv5PfF";

export interface KaminoPositionsOptions {
  /** Base URL without a trailing slash; a query string on it (an API key) is kept. */
  readonly baseUrl: string;
  /** Lending market addresses to read. Default: the main market. */
  readonly markets?: readonly string[];
  /** Per-request timeout, ms. Default 10 000. */
  readonly timeoutMs?: number;
  /** Largest accepted body, bytes. Default 32 MiB. */
  readonly maxBodyBytes?: number;
  readonly stats?: PositionSourceStats;
}

/** Decimal text as Kamino serialises it (decimal.js `toString`: plain, or exponent form for tiny/huge values). */
const KAMINO_DECIMAL = /^-?\d{1,40}(?:\.\d{1,60})?(?:e[+-]?\d{1,3})?$/i;

function decimalField(obj: unknown, key: string): Decimal | null {
  if (typeof obj !== "object" || obj === null) return null;
  const v = (obj as Record<string, unknown>)[key];
  const text = typeof v === "number" && Number.isFinite(v) ? String(v) : v;
  if (typeof text !== "string" || !KAMINO_DECIMAL.test(text)) return null;
  const d = new D(text);
  return d.isFinite() ? d : null;
}

function stringField(obj: unknown, key: string): string | null {
  if (typeof obj !== "object" || obj === null) return null;
  const v = (obj as Record<string, unknown>)[key];
  return typeof v === "string" ? v : null;
}

/**
 * Positions of one obligation, or null when it cannot be modelled. Reads only the members named in the module doc.
 * An obligation without debt yields no position (it is not leverage).
 */
export function positionsOfObligation(o: unknown): LendingPosition[] | null {
  if (typeof o !== "object" || o === null || Array.isArray(o)) return null;
  const rec = o as Record<string, unknown>;
  const stats = rec["refreshedStats"];
  const deposits = rec["deposits"];
  const borrows = rec["borrows"];
  if (!Array.isArray(deposits) || !Array.isArray(borrows)) return null;
  const lt = decimalField(stats, "liquidationLtv");
  if (lt === null) return null;
  let debt = decimalField(stats, "userTotalBorrowBorrowFactorAdjusted") ?? decimalField(stats, "userTotalBorrow");
  if (debt === null) {
    debt = new D(0);
    for (const b of borrows) {
      const v = decimalField(b, "marketValueRefreshed");
      if (v === null) return null;
      debt = debt.plus(v);
    }
  }
  if (debt.isNeg()) return null;
  if (debt.isZero()) return [];
  const legs: { mint: string; value: Decimal }[] = [];
  for (const d of deposits) {
    const mint = stringField(d, "mintAddress");
    const value = decimalField(d, "marketValueRefreshed");
    if (mint === null || value === null || value.isNeg()) return null;
    if (!value.isZero()) legs.push({ mint, value });
  }
  const collateral = legs.reduce((s, l) => s.plus(l.value), new D(0));
  // Debt against no collateral is bad debt, not a loop; nothing to shock.
  if (collateral.isZero()) return [];
  // Kamino's liquidation LTV carries binary-scaled noise ("0.75000000000000000001"): a hair above 1 is 1.
  const threshold = lt.gt(1) && lt.lt("1.000001") ? new D(1) : lt;
  try {
    return legs.map((l) =>
      lendingPosition({
        protocol: "kamino",
        collateral_mint: l.mint,
        collateral_usd: l.value,
        debt_usd: debt.times(l.value).div(collateral),
        liquidation_threshold: threshold,
      }),
    );
  } catch (e) {
    if (e instanceof PositionError) return null;
    throw e;
  }
}

/** Parses a payload: an array of obligations (or `{obligations: [...]}`). Unusable obligations are counted, not fatal. */
export function parseKaminoObligations(payload: unknown, stats?: PositionSourceStats): LendingPosition[] {
  const list = Array.isArray(payload)
    ? payload
    : typeof payload === "object" && payload !== null && Array.isArray((payload as Record<string, unknown>)["obligations"])
      ? ((payload as Record<string, unknown>)["obligations"] as unknown[])
      : null;
  if (list === null) throw new MalformedPayloadError("expected an array of obligations");
  const out: LendingPosition[] = [];
  for (const o of list) {
    const ps = positionsOfObligation(o);
    if (ps === null) {
      if (stats !== undefined) stats.skipped++;
      continue;
    }
    out.push(...ps);
  }
  return out;
}

/** A positions source over the obligations of one or more Kamino lending markets. */
export function kaminoPositions(opts: KaminoPositionsOptions): PositionSource {
  const markets = opts.markets ?? [KAMINO_MAIN_MARKET];
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const maxBodyBytes = opts.maxBodyBytes ?? 32 * 1024 * 1024;
  const stats = opts.stats;
  new URL(opts.baseUrl); // a malformed base URL fails at construction, not at the first refresh
  return {
    name: "kamino",
    read: async () => {
      const out: LendingPosition[] = [];
      try {
        for (const market of markets) {
          const url = endpointUrl(opts.baseUrl, `/kamino-market/${encodeURIComponent(market)}/obligations`, [["env", "mainnet-beta"]]);
          const res = await fetch(url, { headers: { accept: "application/json" }, signal: AbortSignal.timeout(timeoutMs), redirect: "error" });
          if (!res.ok) {
            await res.body?.cancel();
            throw new HttpStatusError(res.status, null);
          }
          const text = await readBodyCapped(res, maxBodyBytes);
          let payload: unknown;
          try {
            payload = JSON.parse(text);
          } catch {
            throw new MalformedPayloadError("obligations body is not JSON");
          }
          out.push(...parseKaminoObligations(payload, stats));
        }
      } catch (e) {
        if (stats !== undefined) stats.failures++;
        throw e;
      }
      if (stats !== undefined) stats.reads++;
      return out;
    },
  };
}
