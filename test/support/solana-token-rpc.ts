/**
 * A local Solana JSON-RPC node for the x402 payment tests, in the manner of solana-rpc.ts (the anchoring tests'
 * node, whose wire decoder it uses): it executes what an x402 `exact` payment is made of, and nothing else.
 *
 * - Programs: ComputeBudget (limit, price), SPL Token `TransferChecked` (source, mint, destination, authority; the
 *   authority must sign and own the source; mints and decimals must match; the balance must cover the amount), SPL
 *   Memo. Any other program fails the transaction (`ProgramAccountNotFound`).
 * - Accounts: one USDC-like mint (6 decimals, owned by the Token program, served by `getAccountInfo`), associated
 *   token accounts created by the test, SOL balances for fee payers (5000 lamports per signature).
 * - Methods the x402 libraries call: `getAccountInfo` (the payer reads the mint), `getLatestBlockhash`,
 *   `simulateTransaction` (the facilitator's verification: the transaction's own blockhash, no signature check, the
 *   error in `value.err`), `sendTransaction` (every signature verified, Ed25519; executed at the next block; a
 *   transaction whose execution fails lands with its error), `getSignatureStatuses` (confirmed one block later),
 *   `isBlockhashValid` (what a restarted service asks of a settlement it may have sent).
 *
 * Tests steer it: stop answering (connection refused), answer HTTP 503, drop sends, expire blockhashes, run a hook
 * when a transaction is sent (to kill the sender right then).
 */
import { createPublicKey, randomBytes, verify } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { address, getAddressEncoder, getProgramDerivedAddress } from "@solana/kit";
import { base58Decode, base58Encode } from "../../src/catalog/base58.ts";
import { decodeTransaction } from "./solana-rpc.ts";

export const TOKEN_PROGRAM = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA";
export const ASSOCIATED_TOKEN_PROGRAM = "ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL";
export const COMPUTE_BUDGET_PROGRAM = "ComputeBudget111111111111111111111111111111";
export const MEMO_PROGRAMS = ["MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr", "Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo"];
const FEE_PER_SIGNATURE = 5000n;

/** The associated token account of `owner` for `mint` (Token program). */
export async function ataOf(owner: string, mint: string): Promise<string> {
  const enc = getAddressEncoder();
  const [pda] = await getProgramDerivedAddress({
    programAddress: address(ASSOCIATED_TOKEN_PROGRAM),
    seeds: [enc.encode(address(owner)), enc.encode(address(TOKEN_PROGRAM)), enc.encode(address(mint))],
  });
  return pda;
}

interface TokenAccount {
  readonly mint: string;
  readonly owner: string;
  amount: bigint;
}

export interface LandedPayment {
  readonly signature: string;
  readonly slot: number;
  readonly err: unknown;
  readonly feePayer: string;
  /** Token transfers it made: (source account, destination account, amount). */
  readonly transfers: readonly { source: string; destination: string; amount: bigint }[];
}

export interface LocalTokenNode {
  readonly url: string;
  readonly mint: string;
  setSol(account: string, lamports: bigint): void;
  sol(account: string): bigint;
  /** Creates `owner`'s associated token account of `mint` (default: the mint) with `amount` atomic units; returns it. */
  fund(owner: string, amount: bigint, mint?: string): Promise<string>;
  /** The token balance of `owner`'s associated account of `mint` (default: the mint; 0 when there is none). */
  tokens(owner: string, mint?: string): Promise<bigint>;
  /** `down`: connections are refused (the port is closed); `503`: every call answers HTTP 503; `up`: normal. */
  setHealth(h: "up" | "down" | "503"): Promise<void>;
  /** Makes every blockhash issued so far unknown (as after ~150 blocks). */
  expireBlockhashes(): void;
  /**
   * Called with each transaction's signature once `sendTransaction` has accepted it (it lands at the next block),
   * before the answer is written: a test kills the sender here to crash it between send and confirmation.
   */
  onSend(hook: ((signature: string) => void) | null): void;
  landed(): LandedPayment[];
  readonly calls: Record<string, number>;
  close(): Promise<void>;
}

const SPKI_ED25519 = Buffer.from("302a300506032b6570032100", "hex");
const ed25519Verify = (pub: Uint8Array, msg: Uint8Array, sig: Uint8Array): boolean =>
  verify(null, msg, createPublicKey({ key: Buffer.concat([SPKI_ED25519, pub]), format: "der", type: "spki" }), sig);

class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

/** Transaction execution failure (the `err` of a simulation or a landed transaction). */
class TxError extends Error {
  constructor(readonly err: unknown) {
    super(JSON.stringify(err));
  }
}

function mintData(decimals: number, supply: bigint): Buffer {
  const b = Buffer.alloc(82);
  b.writeUInt32LE(0, 0); // no mint authority
  b.writeBigUInt64LE(supply, 36);
  b.writeUInt8(decimals, 44);
  b.writeUInt8(1, 45); // initialized
  b.writeUInt32LE(0, 46); // no freeze authority
  return b;
}

/** `mint`: the USDC mint of the network under test; `otherMints`: more 6-decimal mints. `port` 0: any free port. */
export async function startLocalTokenNode(opts: { mint: string; otherMints?: readonly string[]; decimals?: number; blockMs?: number; port?: number }): Promise<LocalTokenNode> {
  const mints = new Set([opts.mint, ...(opts.otherMints ?? [])]);
  const decimals = opts.decimals ?? 6;
  const blockMs = opts.blockMs ?? 25;
  let slot = 5000;
  let height = 4000;
  let latestHash = base58Encode(randomBytes(32));
  const hashes = new Map<string, number>([[latestHash, height]]);
  const sol = new Map<string, bigint>();
  const accounts = new Map<string, TokenAccount>();
  const bySig = new Map<string, { slot: number | null; err: unknown; payment: LandedPayment | null }>();
  const pending: { signature: string; wire: Uint8Array }[] = [];
  const landedPayments: LandedPayment[] = [];
  const calls: Record<string, number> = {};
  let health: "up" | "503" = "up";

  type Decoded = ReturnType<typeof decodeTransaction>;

  /** Executes a transaction against a copy of the state; returns the changes to apply, or throws a TxError. */
  function execute(d: Decoded): { feePayer: string; fee: bigint; balances: Map<string, bigint>; transfers: LandedPayment["transfers"] } {
    const keys = d.accountKeys.map((k) => base58Encode(k));
    const signers = new Set(keys.slice(0, d.header.numRequiredSignatures));
    const recent = base58Encode(d.recentBlockhash);
    const hashHeight = hashes.get(recent);
    if (hashHeight === undefined || height > hashHeight + 150) throw new TxError("BlockhashNotFound");
    const feePayer = keys[0]!;
    const fee = FEE_PER_SIGNATURE * BigInt(d.header.numRequiredSignatures);
    const lamports = sol.get(feePayer) ?? 0n;
    if (lamports === 0n) throw new TxError("AccountNotFound");
    if (lamports < fee) throw new TxError("InsufficientFundsForFee");
    const balances = new Map<string, bigint>();
    const bal = (a: string) => balances.get(a) ?? accounts.get(a)!.amount;
    const transfers: { source: string; destination: string; amount: bigint }[] = [];
    d.instructions.forEach((ix, i) => {
      const program = keys[ix.programIdIndex];
      const fail = (e: unknown): never => {
        throw new TxError({ InstructionError: [i, e] });
      };
      if (program === COMPUTE_BUDGET_PROGRAM) {
        if (ix.data[0] !== 2 && ix.data[0] !== 3) fail("InvalidInstructionData");
        return;
      }
      if (program !== undefined && MEMO_PROGRAMS.includes(program)) return;
      if (program !== TOKEN_PROGRAM) throw new TxError("ProgramAccountNotFound");
      if (ix.data[0] !== 12 || ix.data.length !== 10 || ix.accounts.length < 4) fail("InvalidInstructionData");
      const [source, mint, destination, authority] = ix.accounts.slice(0, 4).map((n) => keys[n]!);
      const amount = Buffer.from(ix.data).readBigUInt64LE(1);
      if (!mints.has(mint!)) fail("InvalidAccountData");
      if (ix.data[9] !== decimals) fail({ Custom: 18 }); // MintDecimalsMismatch
      if (!signers.has(authority!)) fail("MissingRequiredSignature");
      const src = accounts.get(source!);
      const dst = accounts.get(destination!);
      if (src === undefined || dst === undefined) fail("InvalidAccountData");
      if (src!.mint !== mint || dst!.mint !== mint) fail({ Custom: 3 }); // MintMismatch
      if (src!.owner !== authority) fail({ Custom: 4 }); // OwnerMismatch
      if (bal(source!) < amount) fail({ Custom: 1 }); // InsufficientFunds
      balances.set(source!, bal(source!) - amount);
      balances.set(destination!, bal(destination!) + amount);
      transfers.push({ source: source!, destination: destination!, amount });
    });
    return { feePayer, fee, balances, transfers };
  }

  const timer = setInterval(() => {
    slot++;
    height++;
    latestHash = base58Encode(randomBytes(32));
    hashes.set(latestHash, height);
    for (const p of pending.splice(0)) {
      const entry = bySig.get(p.signature)!;
      const d = decodeTransaction(p.wire);
      let err: unknown = null;
      let payment: LandedPayment | null = null;
      try {
        const r = execute(d);
        sol.set(r.feePayer, (sol.get(r.feePayer) ?? 0n) - r.fee);
        for (const [a, v] of r.balances) accounts.get(a)!.amount = v;
        payment = { signature: p.signature, slot, err: null, feePayer: r.feePayer, transfers: r.transfers };
      } catch (e) {
        err = e instanceof TxError ? e.err : String(e);
        payment = { signature: p.signature, slot, err, feePayer: base58Encode(d.accountKeys[0]!), transfers: [] };
      }
      entry.slot = slot;
      entry.err = err;
      entry.payment = payment;
      landedPayments.push(payment);
    }
  }, blockMs);

  const decode = (encoded: unknown): Decoded => {
    if (typeof encoded !== "string") throw new RpcError(-32602, "Invalid params: expected a base64 transaction");
    try {
      return decodeTransaction(Buffer.from(encoded, "base64"));
    } catch (e) {
      throw new RpcError(-32602, `failed to deserialize solana_transaction::versioned::VersionedTransaction: ${e instanceof Error ? e.message : String(e)}`);
    }
  };
  const ctx = () => ({ apiVersion: "2.2.0", slot });
  let sendHook: ((signature: string) => void) | null = null;

  function handle(method: string, params: unknown[]): unknown {
    switch (method) {
      case "getLatestBlockhash":
        return { context: ctx(), value: { blockhash: latestHash, lastValidBlockHeight: height + 150 } };
      case "getBlockHeight":
        return height;
      case "isBlockhashValid": {
        const known = hashes.get(String(params[0]));
        return { context: ctx(), value: known !== undefined && height <= known + 150 };
      }
      case "getSlot":
        return slot;
      case "getBalance":
        return { context: ctx(), value: Number(sol.get(String(params[0])) ?? 0n) };
      case "getAccountInfo": {
        const [a, cfg] = params as [string, { encoding?: string } | undefined];
        if (cfg?.encoding !== "base64") throw new RpcError(-32602, "this node answers getAccountInfo in base64 only");
        if (!mints.has(a)) return { context: ctx(), value: null };
        return { context: ctx(), value: { data: [mintData(decimals, 10n ** 15n).toString("base64"), "base64"], executable: false, lamports: 1_461_600, owner: TOKEN_PROGRAM, rentEpoch: 0, space: 82 } };
      }
      case "simulateTransaction": {
        const d = decode(params[0]);
        let err: unknown = null;
        try {
          execute(d);
        } catch (e) {
          if (!(e instanceof TxError)) throw e;
          err = e.err;
        }
        return { context: ctx(), value: { err, logs: [], accounts: null, unitsConsumed: 6000, returnData: null, innerInstructions: null, replacementBlockhash: null } };
      }
      case "sendTransaction": {
        const d = decode(params[0]);
        if (d.signatures.length !== d.header.numRequiredSignatures) throw new RpcError(-32602, "invalid transaction: signature count does not match the message header");
        for (let i = 0; i < d.signatures.length; i++) {
          if (!ed25519Verify(d.accountKeys[i]!, d.message, d.signatures[i]!)) throw new RpcError(-32003, "Transaction signature verification failure");
        }
        const signature = base58Encode(d.signatures[0]!);
        if (bySig.has(signature)) return signature;
        bySig.set(signature, { slot: null, err: null, payment: null });
        pending.push({ signature, wire: Buffer.from(params[0] as string, "base64") });
        sendHook?.(signature);
        return signature;
      }
      case "getSignatureStatuses": {
        const [sigs] = params as [string[]];
        return {
          context: ctx(),
          value: sigs.map((s) => {
            const e = bySig.get(s);
            if (e === undefined || e.slot === null) return null;
            const status = slot >= e.slot + 3 ? "finalized" : slot >= e.slot + 1 ? "confirmed" : "processed";
            return { slot: e.slot, confirmations: status === "finalized" ? null : slot - e.slot, err: e.err, status: e.err === null ? { Ok: null } : { Err: e.err }, confirmationStatus: status };
          }),
        };
      }
      default:
        throw new RpcError(-32601, "Method not found");
    }
  }

  const sockets = new Set<Socket>();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (health === "503") {
        res.writeHead(503, { "content-type": "text/plain" });
        return res.end("Service Unavailable");
      }
      let id: unknown = null;
      const reply = (body: unknown) => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify(body));
      };
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { id?: unknown; method?: unknown; params?: unknown };
        id = body.id ?? null;
        if (typeof body.method !== "string") throw new RpcError(-32600, "Invalid request");
        calls[body.method] = (calls[body.method] ?? 0) + 1;
        reply({ jsonrpc: "2.0", result: handle(body.method, Array.isArray(body.params) ? body.params : []), id });
      } catch (e) {
        if (e instanceof RpcError) return reply({ jsonrpc: "2.0", error: { code: e.code, message: e.message, ...(e.data === undefined ? {} : { data: e.data }) }, id });
        reply({ jsonrpc: "2.0", error: { code: -32603, message: `Internal error: ${e instanceof Error ? e.message : String(e)}` }, id });
      }
    });
  });
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.once("close", () => sockets.delete(s));
  });
  const listen = (port: number) => new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  await listen(opts.port ?? 0);
  const port = (server.address() as AddressInfo).port;
  const closeListener = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    });

  return {
    url: `http://127.0.0.1:${port}`,
    mint: opts.mint,
    setSol: (a, l) => void sol.set(a, l),
    sol: (a) => sol.get(a) ?? 0n,
    fund: async (owner, amount, mint = opts.mint) => {
      const ata = await ataOf(owner, mint);
      const existing = accounts.get(ata);
      if (existing === undefined) accounts.set(ata, { mint, owner, amount });
      else existing.amount = amount;
      return ata;
    },
    tokens: async (owner, mint = opts.mint) => accounts.get(await ataOf(owner, mint))?.amount ?? 0n,
    setHealth: async (h) => {
      if (h === "down") {
        if (server.listening) await closeListener();
        return;
      }
      health = h;
      if (!server.listening) await listen(port);
    },
    expireBlockhashes: () => {
      for (const k of hashes.keys()) hashes.set(k, -1_000);
    },
    onSend: (hook) => {
      sendHook = hook;
    },
    landed: () => [...landedPayments],
    calls,
    close: async () => {
      clearInterval(timer);
      if (server.listening) await closeListener();
    },
  };
}

/** Whether a base58 text decodes (a convenience for corpus tests). */
export const isBase58 = (s: string): boolean => {
  try {
    base58Decode(s);
    return true;
  } catch {
    return false;
  }
};
