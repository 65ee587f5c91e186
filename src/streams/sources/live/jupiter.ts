/**
 * Jupiter Price API v3: `GET {base}/price/v3?ids=<mint>,<mint>…` (at most 50 mints per call), `x-api-key` header
 * when a key is configured. The answer maps each mint to `{usdPrice, blockId, decimals, priceChange24h, …}`; mints
 * Jupiter has no reliable price for are omitted, and an omitted mint simply yields no leg this cycle.
 *
 * `usdPrice` is a JSON number. It is read from the response text with a lossless JSON reader, so the Decimal has
 * exactly the digits Jupiter wrote (at most 17 significant digits: Jupiter serialises a binary double, so the
 * value is as exact as the upstream can make it, and no float rounding is added here).
 *
 * Backpressure policy: polling (`pollingSource`): one request in flight, batches sent one after another through a
 * token-bucket budget (the plan's requests per minute, evenly spaced), latest wins; a 429 pauses the whole budget
 * for its Retry-After.
 */
import type { Observable } from "rxjs";
import type { CatalogAsset } from "../../../catalog/index.ts";
import { D, type Decimal } from "../../../methodology/index.ts";
import type { Leg } from "../legs.ts";
import { MalformedPayloadError, describeError } from "./errors.ts";
import { RequestBudget, endpointUrl, fetchText, type RetryLimits } from "./http.ts";
import { JsonNumber, isJsonObject, parseLosslessJson } from "./json.ts";
import { batches, pollingSource, resolveOptions, type LiveAdapterOptions } from "./source.ts";

/** Price API v3 accepts at most this many ids per call. */
export const JUPITER_MAX_IDS = 50;
/** Requests per minute of the keyless tier (0.5 per second). */
export const JUPITER_KEYLESS_PER_MINUTE = 30;
/** Requests per minute of the Free plan (an API key); paid plans pass their own `requestsPerMinute`. */
export const JUPITER_FREE_PER_MINUTE = 60;

/** Options of `jupiterPrices`. */
export interface JupiterOptions extends LiveAdapterOptions {
  /** API base URL (`https://api.jup.ag`). */
  readonly baseUrl: string;
  /** Sent as `x-api-key`; null for the keyless tier. Never logged. */
  readonly apiKey: string | null;
  /** Mints to price (duplicates ignored). Not empty. */
  readonly mints: readonly string[];
  /** Milliseconds between the end of one cycle and the start of the next. Default 10 000. */
  readonly intervalMs?: number;
  /** Mints per request, 1 to 50. Default 50. */
  readonly batchSize?: number;
  /** The plan's budget. Default 30 keyless, 60 with a key (Free plan). Ignored when `budget` is given. */
  readonly requestsPerMinute?: number;
  /** A budget shared with other users of the same Jupiter account (limits are per account). */
  readonly budget?: RequestBudget;
  readonly retry?: RetryLimits;
}

/** Mints of the assets whose market price comes from Jupiter (`market.kind` `jupiter_usd`). */
export function jupiterMintsOf(assets: readonly CatalogAsset[]): string[] {
  return assets.filter((a) => a.market.kind === "jupiter_usd").map((a) => a.mint);
}

/** What one Price v3 answer says about the mints asked for. */
export interface JupiterAnswer {
  readonly prices: ReadonlyMap<string, Decimal>;
  /** Asked for, not answered (or answered `null`): no price this cycle. */
  readonly omitted: readonly string[];
  /** Entries that break the wire format, or mints never asked for: each counts as malformed. */
  readonly problems: readonly string[];
}

/** Parses a Price v3 body. Throws MalformedPayloadError when it is not a JSON object. */
export function parseJupiterPrices(text: string, requested: readonly string[]): JupiterAnswer {
  const doc = parseLosslessJson(text);
  if (!isJsonObject(doc)) throw new MalformedPayloadError("price answer is not a JSON object");
  const asked = new Set(requested);
  const prices = new Map<string, Decimal>();
  const omitted: string[] = [];
  const problems: string[] = [];
  for (const mint of requested) {
    const entry = doc[mint];
    if (entry === undefined || entry === null) {
      omitted.push(mint);
      continue;
    }
    const usd = isJsonObject(entry) ? entry["usdPrice"] : undefined;
    if (!(usd instanceof JsonNumber)) {
      problems.push(`${mint}: usdPrice is not a JSON number`);
      continue;
    }
    const price = new D(usd.text);
    if (!price.isFinite() || price.lte(0)) problems.push(`${mint}: usdPrice ${usd.text} is not positive`);
    else prices.set(mint, price);
  }
  for (const key of Object.keys(doc)) if (!asked.has(key)) problems.push(`unexpected mint ${JSON.stringify(key.slice(0, 60))}`);
  return { prices, omitted, problems };
}

/**
 * A cold Observable of `market_usd` legs (`source: "jupiter"`, observed_at = clock time of the answer), polling
 * every `intervalMs`. Never errors: a failed request is retried per `fetchText`, a bad body is counted and skipped.
 */
export function jupiterPrices(options: JupiterOptions): Observable<Leg> {
  const o = resolveOptions("jupiter", options);
  const mints = [...new Set(options.mints)];
  if (mints.length === 0) throw new RangeError("jupiterPrices needs at least one mint");
  const batchSize = options.batchSize ?? JUPITER_MAX_IDS;
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > JUPITER_MAX_IDS) {
    throw new RangeError(`batchSize must be an integer from 1 to ${JUPITER_MAX_IDS}`);
  }
  const perMinute = options.requestsPerMinute ?? (options.apiKey === null ? JUPITER_KEYLESS_PER_MINUTE : JUPITER_FREE_PER_MINUTE);
  const budget = options.budget ?? new RequestBudget({ perMinute }, o.scheduler);
  const headers: Record<string, string> = options.apiKey === null ? {} : { "x-api-key": options.apiKey };
  const groups = batches(mints, batchSize);

  return pollingSource(options.intervalMs ?? 10_000, o, async ({ signal, emit }) => {
    for (const [i, group] of groups.entries()) {
      const what = `price batch ${i + 1}/${groups.length}`;
      const url = endpointUrl(options.baseUrl, "/price/v3", [["ids", group.join(",")]]);
      const text = await fetchText({ url, headers, what }, o, budget, signal, options.retry);
      if (text === null || signal.aborted) continue;
      let answer: JupiterAnswer;
      try {
        answer = parseJupiterPrices(text, group);
      } catch (e) {
        o.counters.malformed++;
        o.log("warn", "malformed price answer dropped", { what, error: describeError(e), sample: text.slice(0, 120) });
        continue;
      }
      for (const problem of answer.problems) {
        o.counters.malformed++;
        o.log("warn", "malformed price entry dropped", { what, problem });
      }
      o.counters.omitted += answer.omitted.length;
      if (answer.omitted.length > 0) o.log("debug", "mints without a price", { what, mints: answer.omitted });
      o.counters.received++;
      const observedAt = o.clock.now();
      for (const [mint, price] of answer.prices) emit({ kind: "market_usd", mint, price, source: "jupiter", observed_at: observedAt });
    }
  });
}
