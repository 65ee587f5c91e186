/**
 * Solana JSON-RPC 2.0 (`POST {rpcUrl}`):
 * - `getAccountInfo(<pool>, {encoding: "base64"})` for each SPL stake pool (`intrinsic.kind` `spl_stake_pool`): the
 *   account must be owned by the catalog's program and issue the asset's mint; rate = total_lamports /
 *   pool_token_supply, emitted as `sol_per_lst` with `epoch` = last_update_epoch (see `stake-pool.ts`);
 * - `getTokenSupply(<mint>)` for every asset, about every 10 minutes: `amount` / 10^`decimals`, emitted as `supply`.
 * A JSON-RPC `error` object counts in `errors` and is asked again next cycle; HTTP 429 waits its Retry-After.
 *
 * Backpressure policy: polling (`pollingSource`): one loop, one request in flight (pools, then the supplies when
 * due), every request through one budget for the endpoint, latest wins.
 */
import { defer, type Observable } from "rxjs";
import type { CatalogAsset } from "../../../catalog/index.ts";
import { D, type Decimal } from "../../../methodology/index.ts";
import type { Leg } from "../legs.ts";
import { MalformedPayloadError, RpcError, describeError } from "./errors.ts";
import { RequestBudget, fetchText, type RetryLimits } from "./http.ts";
import { pollingSource, resolveOptions, type LiveAdapterOptions, type ResolvedOptions } from "./source.ts";
import { decodeBase64, decodeStakePool, stakePoolRate } from "./stake-pool.ts";

/** One stake pool to read. */
export interface StakePoolRef {
  /** The LST mint; the pool's `pool_mint` must equal it. */
  readonly mint: string;
  /** The stake pool account. */
  readonly pool: string;
  /** The program that must own the account. */
  readonly program: string;
}

/** Options of `solanaRpcLegs`. */
export interface SolanaRpcOptions extends LiveAdapterOptions {
  /** JSON-RPC endpoint; a query string (a provider's API key) is kept and never logged. */
  readonly rpcUrl: string;
  readonly pools: readonly StakePoolRef[];
  /** Mints whose supply to read (duplicates ignored). */
  readonly supplyMints: readonly string[];
  /** Milliseconds between stake-pool cycles. Default 60 000. */
  readonly intervalMs?: number;
  /** Milliseconds between supply rounds (checked once per cycle). Default 600 000. */
  readonly supplyIntervalMs?: number;
  /** Request budget of the endpoint. Default 120 per minute (the public endpoint allows 40 per method per 10 s). */
  readonly requestsPerMinute?: number;
  /** Default `confirmed`. */
  readonly commitment?: "processed" | "confirmed" | "finalized";
  readonly retry?: RetryLimits;
}

/** The stake pools among the assets (`intrinsic.kind` `spl_stake_pool`, with `pool` and `program`). */
export function stakePoolsOf(assets: readonly CatalogAsset[]): StakePoolRef[] {
  const refs: StakePoolRef[] = [];
  for (const a of assets) {
    const { kind, pool, program } = a.intrinsic;
    if (kind === "spl_stake_pool" && typeof pool === "string" && typeof program === "string") refs.push({ mint: a.mint, pool, program });
  }
  return refs;
}

function isObject(v: unknown): v is Readonly<Record<string, unknown>> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The `result` of a JSON-RPC answer. Throws RpcError for an `error` member, MalformedPayloadError otherwise. */
export function parseRpcResult(text: string): unknown {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new MalformedPayloadError("JSON-RPC answer is not JSON");
  }
  if (!isObject(doc)) throw new MalformedPayloadError("JSON-RPC answer is not an object");
  const error = doc["error"];
  if (error !== undefined && error !== null) {
    const code = isObject(error) && typeof error["code"] === "number" ? error["code"] : null;
    const message = isObject(error) && typeof error["message"] === "string" ? error["message"].slice(0, 200) : "no message";
    throw new RpcError(code, message);
  }
  if (!("result" in doc)) throw new MalformedPayloadError("JSON-RPC answer has neither result nor error");
  return doc["result"];
}

/** Rate and epoch from a `getAccountInfo` result for `ref`. Throws MalformedPayloadError. */
export function stakePoolFromResult(result: unknown, ref: StakePoolRef): { sol: Decimal; epoch: number } {
  const value = isObject(result) ? result["value"] : undefined;
  if (value === null) throw new MalformedPayloadError(`stake pool account ${ref.pool} does not exist`);
  if (!isObject(value)) throw new MalformedPayloadError("getAccountInfo result has no value object");
  if (value["owner"] !== ref.program) {
    throw new MalformedPayloadError(`account owner ${JSON.stringify(value["owner"])} is not the stake pool program ${ref.program}`);
  }
  const data = value["data"];
  if (!Array.isArray(data) || data[1] !== "base64" || typeof data[0] !== "string") {
    throw new MalformedPayloadError('account data is not ["<base64>", "base64"]');
  }
  const state = decodeStakePool(decodeBase64(data[0]));
  if (state.poolMint !== ref.mint) throw new MalformedPayloadError(`pool mint ${state.poolMint} is not ${ref.mint}`);
  if (state.lastUpdateEpoch > BigInt(Number.MAX_SAFE_INTEGER)) throw new MalformedPayloadError("last_update_epoch out of range");
  return { sol: stakePoolRate(state), epoch: Number(state.lastUpdateEpoch) };
}

const AMOUNT = /^\d{1,30}$/;

/** Supply (scaled by the mint's decimals) from a `getTokenSupply` result. Throws MalformedPayloadError. */
export function supplyFromResult(result: unknown): Decimal {
  const value = isObject(result) ? result["value"] : undefined;
  if (!isObject(value)) throw new MalformedPayloadError("getTokenSupply result has no value object");
  const { amount, decimals } = value;
  if (typeof amount !== "string" || !AMOUNT.test(amount)) throw new MalformedPayloadError(`supply amount ${JSON.stringify(amount)} is not an integer string`);
  if (typeof decimals !== "number" || !Number.isInteger(decimals) || decimals < 0 || decimals > 30) {
    throw new MalformedPayloadError(`supply decimals ${JSON.stringify(decimals)} is not an integer from 0 to 30`);
  }
  return new D(`${amount}e-${decimals}`);
}

/** One JSON-RPC call; counts and logs every failure itself. Returns the `result`, or undefined when there is none. */
async function rpcCall(
  options: SolanaRpcOptions,
  o: ResolvedOptions,
  budget: RequestBudget,
  signal: AbortSignal,
  call: { readonly id: number; readonly method: string; readonly params: readonly unknown[]; readonly what: string },
): Promise<unknown> {
  const body = JSON.stringify({ jsonrpc: "2.0", id: call.id, method: call.method, params: call.params });
  const text = await fetchText(
    { url: options.rpcUrl, method: "POST", headers: { "content-type": "application/json" }, body, what: call.what },
    o,
    budget,
    signal,
    options.retry,
  );
  if (text === null || signal.aborted) return undefined;
  try {
    return parseRpcResult(text);
  } catch (e) {
    if (e instanceof RpcError) {
      o.counters.errors++;
      o.log("warn", "JSON-RPC error, asking again next cycle", { what: call.what, rpcCode: e.rpcCode, error: e.message });
    } else {
      o.counters.malformed++;
      o.log("warn", "malformed JSON-RPC answer dropped", { what: call.what, error: describeError(e), sample: text.slice(0, 120) });
    }
    return undefined;
  }
}

/**
 * A cold Observable of `sol_per_lst` legs (`source: "solana_rpc"`, with `epoch`) and `supply` legs, observed_at =
 * clock time of the answer. Never errors.
 */
export function solanaRpcLegs(options: SolanaRpcOptions): Observable<Leg> {
  const o = resolveOptions("solana_rpc", options);
  const supplyMints = [...new Set(options.supplyMints)];
  if (options.pools.length === 0 && supplyMints.length === 0) throw new RangeError("solanaRpcLegs needs a pool or a supply mint");
  const supplyIntervalMs = options.supplyIntervalMs ?? 600_000;
  if (!(supplyIntervalMs > 0)) throw new RangeError("supplyIntervalMs must be > 0");
  const commitment = options.commitment ?? "confirmed";
  const budget = new RequestBudget({ perMinute: options.requestsPerMinute ?? 120 }, o.scheduler);

  return defer(() => {
    let nextSupplyAt = -Infinity;
    let id = 0;
    return pollingSource(options.intervalMs ?? 60_000, o, async ({ signal, emit }) => {
      for (const ref of options.pools) {
        const what = `getAccountInfo ${ref.pool}`;
        const result = await rpcCall(options, o, budget, signal, {
          id: ++id,
          method: "getAccountInfo",
          params: [ref.pool, { encoding: "base64", commitment }],
          what,
        });
        if (result === undefined) continue;
        try {
          const { sol, epoch } = stakePoolFromResult(result, ref);
          o.counters.received++;
          emit({ kind: "sol_per_lst", mint: ref.mint, sol, source: "solana_rpc", observed_at: o.clock.now(), epoch });
        } catch (e) {
          o.counters.malformed++;
          o.log("warn", "stake pool account dropped", { what, error: describeError(e) });
        }
      }
      if (signal.aborted || o.scheduler.now() < nextSupplyAt) return;
      nextSupplyAt = o.scheduler.now() + supplyIntervalMs;
      for (const mint of supplyMints) {
        const what = `getTokenSupply ${mint}`;
        const result = await rpcCall(options, o, budget, signal, { id: ++id, method: "getTokenSupply", params: [mint, { commitment }], what });
        if (result === undefined) continue;
        try {
          const supply = supplyFromResult(result);
          o.counters.received++;
          emit({ kind: "supply", mint, supply, observed_at: o.clock.now() });
        } catch (e) {
          o.counters.malformed++;
          o.log("warn", "token supply dropped", { what, error: describeError(e) });
        }
      }
    });
  });
}
