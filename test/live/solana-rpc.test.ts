import type { Subscription } from "rxjs";
import { afterEach, describe, expect, it } from "vitest";
import { base58Decode, loadShippedCatalog } from "../../src/catalog/index.ts";
import { systemClock } from "../../src/clock.ts";
import { decimalToWire } from "../../src/methodology/index.ts";
import type { Leg } from "../../src/streams/sources/legs.ts";
import {
  MalformedPayloadError,
  RpcError,
  SourceCounters,
  decodeStakePool,
  parseRpcResult,
  solanaRpcLegs,
  stakePoolFromResult,
  stakePoolsOf,
  type StakePoolRef,
} from "../../src/streams/sources/live/index.ts";
import { json, recordingLog, startServer, waitFor, type TestServer } from "./server.ts";

const catalog = loadShippedCatalog();
const pools = stakePoolsOf(catalog.active);
const [JITO, STKE, RKU] = [pools[0]!, pools[1]!, pools[2]!];

/** A stake pool account as the chain stores it: account type 1, pool_mint at 162, u64 LE at 258 / 266 / 274. */
function stakePoolAccount(ref: StakePoolRef, total: bigint, supply: bigint, epoch: bigint, length = 300): Buffer {
  const buf = Buffer.alloc(Math.max(length, 300));
  buf[0] = 1;
  Buffer.from(base58Decode(ref.mint)).copy(buf, 162);
  buf.writeBigUInt64LE(total, 258);
  buf.writeBigUInt64LE(supply, 266);
  buf.writeBigUInt64LE(epoch, 274);
  return buf.subarray(0, length);
}

function accountResult(ref: StakePoolRef, data: Buffer, owner = ref.program): unknown {
  return {
    context: { apiVersion: "2.2.7", slot: 341_197_053 },
    value: { data: [data.toString("base64"), "base64"], executable: false, lamports: 4_147_200, owner, rentEpoch: 0, space: data.length },
  };
}

const rpcAnswer = (id: unknown, result: unknown): string => JSON.stringify({ jsonrpc: "2.0", result, id });

let server: TestServer | undefined;
let sub: Subscription | undefined;
afterEach(async () => {
  sub?.unsubscribe();
  await server?.close();
  sub = server = undefined;
});

describe("solanaRpcLegs against a loopback JSON-RPC node", () => {
  it("reads stake pool rates exactly, counts a short account and a JSON-RPC error, honours 429, reads supplies once per supply interval", async () => {
    let poolCalls = 0;
    server = await startServer((req, res) => {
      expect(req.method).toBe("POST");
      expect(req.headers["content-type"]).toBe("application/json");
      const call = JSON.parse(req.body) as { jsonrpc: string; id: number; method: string; params: [string, Record<string, unknown>] };
      expect(call.jsonrpc).toBe("2.0");
      const [address, config] = call.params;
      if (call.method === "getAccountInfo") {
        expect(config).toEqual({ encoding: "base64", commitment: "confirmed" });
        if (address === JITO.pool && poolCalls++ === 0) return json(res, 429, '{"jsonrpc":"2.0","error":{"code":429,"message":"Too many requests"}}', { "retry-after": "1" });
        if (address === JITO.pool) return json(res, 200, rpcAnswer(call.id, accountResult(JITO, stakePoolAccount(JITO, 12345678901234567891n, 9876543210987654321n, 812n))));
        if (address === STKE.pool) return json(res, 200, rpcAnswer(call.id, accountResult(STKE, stakePoolAccount(STKE, 1n, 1n, 1n, 200))));
        return json(res, 200, JSON.stringify({ jsonrpc: "2.0", error: { code: -32602, message: "Invalid param: could not find account" }, id: call.id }));
      }
      expect(call.method).toBe("getTokenSupply");
      if (address === JITO.mint) {
        return json(res, 200, rpcAnswer(call.id, { context: { slot: 1 }, value: { amount: "123456789012345", decimals: 6, uiAmount: 123456789.012345, uiAmountString: "123456789.012345" } }));
      }
      return json(res, 200, rpcAnswer(call.id, { context: { slot: 1 }, value: { amount: "12.5", decimals: 6 } }));
    });
    const counters = new SourceCounters();
    const { log, lines } = recordingLog();
    const legs: Leg[] = [];
    sub = solanaRpcLegs({
      rpcUrl: `${server.url}/?api-key=provider-key`,
      pools: [JITO, STKE, RKU],
      supplyMints: [JITO.mint, STKE.mint],
      clock: systemClock,
      counters,
      log,
      intervalMs: 50,
      supplyIntervalMs: 60_000,
      requestsPerMinute: 60_000,
      backoff: { baseMs: 10, capMs: 20 },
    }).subscribe((l) => legs.push(l));
    await waitFor(() => legs.filter((l) => l.kind === "sol_per_lst").length >= 3, "three pool cycles", 6000);
    sub.unsubscribe();

    const rate = legs.find((l) => l.kind === "sol_per_lst")!;
    expect(rate).toMatchObject({ kind: "sol_per_lst", mint: JITO.mint, source: "solana_rpc", epoch: 812 });
    // 12345678901234567891 / 9876543210987654321 = 1.249999988609375000243632812486830 at 34 significant digits,
    // ROUND_HALF_EVEN (Python's decimal agrees); the wire form trims the trailing zero.
    expect(rate.kind === "sol_per_lst" && decimalToWire(rate.sol)).toBe("1.24999998860937500024363281248683");
    const supplies = legs.filter((l) => l.kind === "supply");
    expect(supplies.map((l) => (l.kind === "supply" ? `${l.mint} ${decimalToWire(l.supply)}` : ""))).toEqual([`${JITO.mint} 123456789.012345`]);

    // The 429 was waited out (Retry-After: 1) before the same call went again.
    const jitoCalls = server.requests.filter((r) => r.body.includes(JITO.pool));
    expect(jitoCalls[1]!.at - jitoCalls[0]!.at).toBeGreaterThanOrEqual(950);
    // Supplies were read once: the supply interval (60 s) had not come round again.
    expect(server.requests.filter((r) => r.body.includes("getTokenSupply"))).toHaveLength(2);
    for (const r of server.requests) expect(r.url.searchParams.get("api-key")).toBe("provider-key");

    // Every problem is counted and logged together (the last cycle may have been cut short by unsubscribe).
    const s = counters.snapshot();
    const short = lines.filter((l) => l.msg === "stake pool account dropped" && String(l.fields?.["error"]).includes("200 bytes"));
    const badSupply = lines.filter((l) => l.msg === "token supply dropped");
    const rpcErrors = lines.filter((l) => l.msg === "JSON-RPC error, asking again next cycle");
    expect(short.length).toBeGreaterThanOrEqual(2);
    expect(badSupply).toHaveLength(1);
    expect(s.malformed).toBe(short.length + badSupply.length);
    expect(rpcErrors.length).toBeGreaterThanOrEqual(2);
    expect(rpcErrors[0]!.fields?.["rpcCode"]).toBe(-32602);
    expect(s.errors).toBe(1 + rpcErrors.length); // the 429 + each JSON-RPC error
    expect(s.retries).toBe(1);
    expect(s.received).toBe(legs.length);
    expect(JSON.stringify(lines)).not.toContain("provider-key");
  });
});

describe("stake pool decoding", () => {
  const account = stakePoolAccount(JITO, 18446744073709551615n, 3n, 900n);

  it("reads the u64 fields little-endian at 258, 266 and 274", () => {
    const s = decodeStakePool(account);
    expect(s).toEqual({ poolMint: JITO.mint, totalLamports: 18446744073709551615n, poolTokenSupply: 3n, lastUpdateEpoch: 900n });
    const { sol, epoch } = stakePoolFromResult(accountResult(JITO, account), JITO);
    expect([decimalToWire(sol), epoch]).toEqual(["6148914691236517205", 900]);
  });

  it("refuses the wrong length, account type, owner, mint, encoding and an empty pool", () => {
    expect(() => decodeStakePool(account.subarray(0, 281))).toThrow(/281 bytes/);
    const typed = Buffer.from(account);
    typed[0] = 2;
    expect(() => decodeStakePool(typed)).toThrow(MalformedPayloadError);
    expect(() => stakePoolFromResult(accountResult(JITO, account, "11111111111111111111111111111111"), JITO)).toThrow(/owner/);
    expect(() => stakePoolFromResult(accountResult(JITO, account), { ...JITO, mint: STKE.mint })).toThrow(/pool mint/);
    expect(() => stakePoolFromResult({ value: { owner: JITO.program, data: ["!!!!", "base64"] } }, JITO)).toThrow(/base64/);
    expect(() => stakePoolFromResult({ value: { owner: JITO.program, data: "x" } }, JITO)).toThrow(MalformedPayloadError);
    expect(() => stakePoolFromResult({ context: { slot: 1 }, value: null }, JITO)).toThrow(/does not exist/);
    expect(() => stakePoolFromResult(accountResult(JITO, stakePoolAccount(JITO, 5n, 0n, 1n)), JITO)).toThrow(/no pool tokens/);
  });

  it("separates JSON-RPC errors from malformed answers", () => {
    expect(() => parseRpcResult('{"jsonrpc":"2.0","error":{"code":-32005,"message":"Node is behind"},"id":1}')).toThrow(RpcError);
    expect(() => parseRpcResult('{"jsonrpc":"2.0","id":1}')).toThrow(MalformedPayloadError);
    expect(() => parseRpcResult("[1]")).toThrow(MalformedPayloadError);
    expect(parseRpcResult('{"jsonrpc":"2.0","result":{"value":null},"id":1}')).toEqual({ value: null });
  });
});
