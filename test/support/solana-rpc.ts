/**
 * A local Solana JSON-RPC node for the anchoring tests. It decodes each wire transaction itself (legacy and v0
 * messages, no @solana/kit), verifies every signature with node:crypto's Ed25519, accepts only SPL Memo instructions
 * with UTF-8 data, tracks balances (5000 lamports per signature) and blockhashes (one per block, valid for
 * `validBlocks` blocks), produces a block every `blockMs`, and answers like a real node: `getLatestBlockhash`,
 * `getBlockHeight`, `getBalance`, `sendTransaction` (with preflight: -32002 with `data.err` = `BlockhashNotFound`,
 * `AccountNotFound`, `InsufficientFundsForFee`, `AlreadyProcessed`; -32003 for a bad signature),
 * `getSignatureStatuses` and `getTransaction` (json encoding, commitment-aware).
 *
 * Tests steer it: fail the next sends (node unhealthy, HTTP 503, blockhash not found), drop accepted transactions
 * (they never land, so their blockhash expires), or set balances.
 */
import { createPublicKey, randomBytes, verify } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { base58Decode, base58Encode } from "../../src/catalog/base58.ts";

/** Every SPL Memo program address (v1, the long-standing one, v4). */
export const MEMO_PROGRAMS = [
  "Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo",
  "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr",
  "Memo4c2pN8afCj432Lb7RMVKi9PbQnnW7ewFFaV3oAH",
];
export const FEE_PER_SIGNATURE = 5000n;

export type SendFailure = "blockhash_not_found" | "node_unhealthy" | "http_503";
type Commitment = "processed" | "confirmed" | "finalized";

/** A transaction the node accepted. */
export interface NodeTx {
  readonly signature: string;
  readonly signers: readonly string[];
  readonly accountKeys: readonly string[];
  readonly header: { numRequiredSignatures: number; numReadonlySignedAccounts: number; numReadonlyUnsignedAccounts: number };
  readonly recentBlockhash: string;
  readonly instructions: readonly { programIdIndex: number; accounts: number[]; data: Uint8Array }[];
  readonly version: 0 | "legacy";
  readonly signatures: readonly string[];
  /** Memo texts, in instruction order. */
  readonly memos: readonly string[];
  slot: number | null;
  blockTime: number | null;
  /** The transaction error it landed with (null: success). */
  err: unknown;
  fee: bigint;
  preBalance: bigint;
}

export interface LocalSolana {
  readonly url: string;
  setBalance(account: string, lamports: bigint): void;
  balance(account: string): bigint;
  /** The next `n` sendTransaction calls fail with `kind` (before anything else is checked). */
  failSends(n: number, kind: SendFailure): void;
  /** While on, accepted transactions are dropped (never land; their blockhash expires). */
  dropSends(on: boolean): void;
  /** The next `n` accepted transactions land but fail (an instruction error; the fee is still charged). */
  failOnChain(n: number): void;
  /** Transactions that landed, oldest first. */
  landed(): NodeTx[];
  /** Calls per method so far. */
  readonly calls: Record<string, number>;
  blockHeight(): number;
  /** Plants a landed transaction with arbitrary content, for verifier tests (bypasses every check). */
  plant(tx: { signature: string; signers: string[]; memos: { program: string; data: Uint8Array }[]; err?: unknown }): void;
  close(): Promise<void>;
}

// --- wire decoding -----------------------------------------------------------------------------------------------

class Reader {
  off = 0;
  constructor(readonly b: Uint8Array) {}
  u8(): number {
    if (this.off >= this.b.length) throw new Error("unexpected end of transaction bytes");
    return this.b[this.off++]!;
  }
  /** Solana's compact-u16 ("shortvec"). */
  shortvec(): number {
    let v = 0;
    for (let i = 0; i < 3; i++) {
      const byte = this.u8();
      v |= (byte & 0x7f) << (7 * i);
      if ((byte & 0x80) === 0) return v;
    }
    throw new Error("shortvec longer than 3 bytes");
  }
  bytes(n: number): Uint8Array {
    if (this.off + n > this.b.length) throw new Error("unexpected end of transaction bytes");
    const out = this.b.subarray(this.off, this.off + n);
    this.off += n;
    return out;
  }
}

interface Decoded {
  signatures: Uint8Array[];
  message: Uint8Array;
  version: 0 | "legacy";
  header: NodeTx["header"];
  accountKeys: Uint8Array[];
  recentBlockhash: Uint8Array;
  instructions: { programIdIndex: number; accounts: number[]; data: Uint8Array }[];
}

export function decodeTransaction(wire: Uint8Array): Decoded {
  const r = new Reader(wire);
  const nsig = r.shortvec();
  const signatures: Uint8Array[] = [];
  for (let i = 0; i < nsig; i++) signatures.push(r.bytes(64));
  const msgStart = r.off;
  let version: 0 | "legacy" = "legacy";
  const first = r.b[r.off];
  if (first !== undefined && (first & 0x80) !== 0) {
    const v = r.u8() & 0x7f;
    if (v !== 0) throw new Error(`unsupported transaction version ${v}`);
    version = 0;
  }
  const header = { numRequiredSignatures: r.u8(), numReadonlySignedAccounts: r.u8(), numReadonlyUnsignedAccounts: r.u8() };
  const nkeys = r.shortvec();
  const accountKeys: Uint8Array[] = [];
  for (let i = 0; i < nkeys; i++) accountKeys.push(r.bytes(32));
  const recentBlockhash = r.bytes(32);
  const nix = r.shortvec();
  const instructions: Decoded["instructions"] = [];
  for (let i = 0; i < nix; i++) {
    const programIdIndex = r.u8();
    const na = r.shortvec();
    const accounts: number[] = [];
    for (let j = 0; j < na; j++) accounts.push(r.u8());
    const data = r.bytes(r.shortvec());
    instructions.push({ programIdIndex, accounts, data });
  }
  if (version === 0) {
    const nlut = r.shortvec();
    if (nlut !== 0) throw new Error("address lookup tables are not supported by this node");
  }
  if (r.off !== wire.length) throw new Error(`${wire.length - r.off} trailing bytes after the message`);
  return { signatures, message: wire.subarray(msgStart), version, header, accountKeys, recentBlockhash, instructions };
}

const SPKI_ED25519 = Buffer.from("302a300506032b6570032100", "hex");

function ed25519Verify(publicKey: Uint8Array, message: Uint8Array, sig: Uint8Array): boolean {
  const key = createPublicKey({ key: Buffer.concat([SPKI_ED25519, publicKey]), format: "der", type: "spki" });
  return verify(null, message, key, sig);
}

// --- the node ----------------------------------------------------------------------------------------------------

class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

function preflight(err: unknown, message: string): RpcError {
  return new RpcError(-32002, `Transaction simulation failed: ${message}`, {
    accounts: null,
    err,
    innerInstructions: null,
    loadedAccountsDataSize: 0,
    logs: [],
    replacementBlockhash: null,
    returnData: null,
    unitsConsumed: 0,
  });
}

/** `port` 0 (default): any free port. */
export async function startLocalSolana(options: { blockMs?: number; validBlocks?: number; port?: number } = {}): Promise<LocalSolana> {
  const blockMs = options.blockMs ?? 25;
  const validBlocks = options.validBlocks ?? 150;
  const utf8 = new TextDecoder("utf-8", { fatal: true });

  let slot = 1000;
  let height = 900;
  const blockhashHeight = new Map<string, number>();
  const blockTimes = new Map<number, number>();
  let latestHash = base58Encode(randomBytes(32));
  blockhashHeight.set(latestHash, height);
  blockTimes.set(slot, Math.floor(Date.now() / 1000));

  const balances = new Map<string, bigint>();
  const bySig = new Map<string, NodeTx>();
  const pending: NodeTx[] = [];
  const landedTxs: NodeTx[] = [];
  const failQueue: SendFailure[] = [];
  let dropping = false;
  let failingOnChain = 0;
  const calls: Record<string, number> = {};

  const timer = setInterval(() => {
    slot++;
    height++;
    blockTimes.set(slot, Math.floor(Date.now() / 1000));
    latestHash = base58Encode(randomBytes(32));
    blockhashHeight.set(latestHash, height);
    for (const tx of pending.splice(0)) {
      const payer = tx.signers[0]!;
      const bal = balances.get(payer) ?? 0n;
      tx.preBalance = bal;
      balances.set(payer, bal - tx.fee);
      tx.slot = slot;
      tx.blockTime = blockTimes.get(slot)!;
      if (failingOnChain > 0) {
        failingOnChain--;
        tx.err = { InstructionError: [0, { Custom: 1 }] };
      }
      landedTxs.push(tx);
    }
  }, blockMs);

  const statusOf = (tx: NodeTx): Commitment | null => {
    if (tx.slot === null) return null;
    if (slot >= tx.slot + 3) return "finalized";
    if (slot >= tx.slot + 1) return "confirmed";
    return "processed";
  };
  const RANK: Record<Commitment, number> = { processed: 0, confirmed: 1, finalized: 2 };
  const meets = (tx: NodeTx, c: Commitment): boolean => {
    const s = statusOf(tx);
    return s !== null && RANK[s] >= RANK[c];
  };
  const commitmentOf = (cfg: unknown): Commitment => {
    const c = (cfg as { commitment?: string } | undefined)?.commitment;
    return c === "processed" || c === "confirmed" ? c : "finalized";
  };
  const ctx = () => ({ apiVersion: "2.2.0", slot });

  function sendTransaction(params: unknown[]): string {
    const failure = failQueue.shift();
    if (failure === "node_unhealthy") throw new RpcError(-32005, "Node is behind by 42 slots", { numSlotsBehind: 42 });
    if (failure === "http_503") throw Object.assign(new Error("503"), { http: 503 });
    const [encoded, cfg] = params as [unknown, { encoding?: string } | undefined];
    if (typeof encoded !== "string") throw new RpcError(-32602, "Invalid params: expected a string transaction");
    if (cfg?.encoding !== "base64") throw new RpcError(-32602, "this node expects base64 (send encoding: base64)");
    let d: Decoded;
    try {
      d = decodeTransaction(Buffer.from(encoded, "base64"));
    } catch (e) {
      throw new RpcError(-32602, `failed to deserialize solana_transaction::versioned::VersionedTransaction: ${e instanceof Error ? e.message : String(e)}`);
    }
    if (d.signatures.length !== d.header.numRequiredSignatures || d.accountKeys.length < d.header.numRequiredSignatures) {
      throw new RpcError(-32602, "invalid transaction: signature count does not match the message header");
    }
    for (let i = 0; i < d.signatures.length; i++) {
      if (!ed25519Verify(d.accountKeys[i]!, d.message, d.signatures[i]!)) throw new RpcError(-32003, "Transaction signature verification failure");
    }
    const keys = d.accountKeys.map((k) => base58Encode(k));
    const signature = base58Encode(d.signatures[0]!);
    if (failure === "blockhash_not_found") throw preflight("BlockhashNotFound", "Blockhash not found");
    const known = bySig.get(signature);
    if (known !== undefined) {
      if (known.slot !== null) throw preflight("AlreadyProcessed", "This transaction has already been processed");
      return signature; // still pending: the same transaction again
    }
    const memos: string[] = [];
    for (const [i, ix] of d.instructions.entries()) {
      const program = keys[ix.programIdIndex];
      if (program === undefined) throw new RpcError(-32602, "invalid transaction: program index out of range");
      if (!MEMO_PROGRAMS.includes(program)) throw preflight("ProgramAccountNotFound", "Attempt to load a program that does not exist");
      for (const a of ix.accounts) {
        if (a >= d.header.numRequiredSignatures) throw preflight({ InstructionError: [i, "MissingRequiredSignature"] }, `Error processing Instruction ${i}: missing required signature for instruction`);
      }
      try {
        memos.push(utf8.decode(ix.data));
      } catch {
        throw preflight({ InstructionError: [i, "InvalidInstructionData"] }, `Error processing Instruction ${i}: invalid instruction data`);
      }
    }
    const recentBlockhash = base58Encode(d.recentBlockhash);
    const hashHeight = blockhashHeight.get(recentBlockhash);
    if (hashHeight === undefined || height > hashHeight + validBlocks) throw preflight("BlockhashNotFound", "Blockhash not found");
    const fee = FEE_PER_SIGNATURE * BigInt(d.signatures.length);
    const payer = keys[0]!;
    const bal = balances.get(payer) ?? 0n;
    if (bal === 0n) throw preflight("AccountNotFound", "Attempt to debit an account but found no record of a prior credit.");
    if (bal < fee) throw preflight("InsufficientFundsForFee", "Insufficient funds for fee");
    const tx: NodeTx = {
      signature,
      signers: keys.slice(0, d.header.numRequiredSignatures),
      accountKeys: keys,
      header: d.header,
      recentBlockhash,
      instructions: d.instructions,
      version: d.version,
      signatures: d.signatures.map((s) => base58Encode(s)),
      memos,
      slot: null,
      blockTime: null,
      err: null,
      fee,
      preBalance: bal,
    };
    bySig.set(signature, tx);
    if (!dropping) pending.push(tx);
    return signature;
  }

  function transactionJson(tx: NodeTx): unknown {
    return {
      slot: tx.slot,
      blockTime: tx.blockTime,
      meta: {
        err: tx.err,
        fee: Number(tx.fee),
        preBalances: [Number(tx.preBalance), ...tx.accountKeys.slice(1).map(() => 1)],
        postBalances: [Number(tx.preBalance - tx.fee), ...tx.accountKeys.slice(1).map(() => 1)],
        innerInstructions: [],
        logMessages: tx.memos.flatMap((m) => [`Program ${MEMO_PROGRAMS[1]} invoke [1]`, `Program log: Memo (len ${m.length}): ${JSON.stringify(m)}`, `Program ${MEMO_PROGRAMS[1]} success`]),
        preTokenBalances: [],
        postTokenBalances: [],
        rewards: [],
        status: tx.err === null ? { Ok: null } : { Err: tx.err },
        loadedAddresses: { writable: [], readonly: [] },
        computeUnitsConsumed: 7000,
      },
      transaction: {
        signatures: tx.signatures,
        message: {
          accountKeys: tx.accountKeys,
          header: tx.header,
          recentBlockhash: tx.recentBlockhash,
          instructions: tx.instructions.map((ix) => ({ programIdIndex: ix.programIdIndex, accounts: ix.accounts, data: base58Encode(ix.data), stackHeight: null })),
          ...(tx.version === 0 ? { addressTableLookups: [] } : {}),
        },
      },
      version: tx.version,
    };
  }

  function handle(method: string, params: unknown[]): unknown {
    switch (method) {
      case "getLatestBlockhash":
        return { context: ctx(), value: { blockhash: latestHash, lastValidBlockHeight: height + validBlocks } };
      case "getBlockHeight":
        return height;
      case "getSlot":
        return slot;
      case "getBalance": {
        const [account] = params as [unknown];
        if (typeof account !== "string" || base58Decode(account).length !== 32) throw new RpcError(-32602, "Invalid param: Invalid");
        return { context: ctx(), value: Number(balances.get(account) ?? 0n) };
      }
      case "sendTransaction":
        return sendTransaction(params);
      case "getSignatureStatuses": {
        const [sigs] = params as [unknown];
        if (!Array.isArray(sigs)) throw new RpcError(-32602, "Invalid params: expected an array of signatures");
        return {
          context: ctx(),
          value: sigs.map((s: unknown) => {
            const tx = typeof s === "string" ? bySig.get(s) : undefined;
            const st = tx === undefined ? null : statusOf(tx);
            if (tx === undefined || st === null) return null;
            return { slot: tx.slot, confirmations: st === "finalized" ? null : slot - tx.slot!, err: tx.err, status: tx.err === null ? { Ok: null } : { Err: tx.err }, confirmationStatus: st };
          }),
        };
      }
      case "getTransaction": {
        const [sig, cfg] = params as [unknown, { encoding?: string; maxSupportedTransactionVersion?: number } | undefined];
        if (typeof sig !== "string") throw new RpcError(-32602, "Invalid param: not a signature");
        if (cfg?.encoding !== undefined && cfg.encoding !== "json") throw new RpcError(-32602, "this node answers getTransaction in json encoding only");
        const tx = bySig.get(sig);
        if (tx === undefined || !meets(tx, commitmentOf(cfg))) return null;
        if (tx.version === 0 && cfg?.maxSupportedTransactionVersion === undefined) {
          throw new RpcError(-32015, "Transaction version (0) is not supported by the requesting client. Please try the request again with the following configuration parameter: \"maxSupportedTransactionVersion\": 0");
        }
        return transactionJson(tx);
      }
      default:
        throw new RpcError(-32601, "Method not found");
    }
  }

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      let id: unknown = null;
      const reply = (status: number, body: unknown) => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(JSON.stringify(body));
      };
      try {
        if (req.method !== "POST") return reply(405, { jsonrpc: "2.0", error: { code: -32600, message: "Invalid request" }, id: null });
        let body: { jsonrpc?: unknown; id?: unknown; method?: unknown; params?: unknown };
        try {
          body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as typeof body;
        } catch {
          return reply(200, { jsonrpc: "2.0", error: { code: -32700, message: "Parse error" }, id: null });
        }
        id = body.id ?? null;
        if (body.jsonrpc !== "2.0" || typeof body.method !== "string") throw new RpcError(-32600, "Invalid request");
        calls[body.method] = (calls[body.method] ?? 0) + 1;
        const result = handle(body.method, Array.isArray(body.params) ? body.params : []);
        reply(200, { jsonrpc: "2.0", result, id });
      } catch (e) {
        if (e instanceof RpcError) return reply(200, { jsonrpc: "2.0", error: { code: e.code, message: e.message, ...(e.data === undefined ? {} : { data: e.data }) }, id });
        if ((e as { http?: number }).http === 503) {
          res.writeHead(503, { "content-type": "text/plain" });
          return res.end("Service Unavailable");
        }
        reply(200, { jsonrpc: "2.0", error: { code: -32603, message: `Internal error: ${e instanceof Error ? e.message : String(e)}` }, id });
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${port}`,
    setBalance: (a, l) => void balances.set(a, l),
    balance: (a) => balances.get(a) ?? 0n,
    failSends: (n, kind) => {
      for (let i = 0; i < n; i++) failQueue.push(kind);
    },
    dropSends: (on) => void (dropping = on),
    failOnChain: (n) => void (failingOnChain += n),
    landed: () => [...landedTxs],
    calls,
    blockHeight: () => height,
    plant: (p) => {
      const keys = [...p.signers, ...p.memos.map((m) => m.program).filter((v, i, a) => a.indexOf(v) === i)];
      const tx: NodeTx = {
        signature: p.signature,
        signers: p.signers,
        accountKeys: keys,
        header: { numRequiredSignatures: p.signers.length, numReadonlySignedAccounts: 0, numReadonlyUnsignedAccounts: keys.length - p.signers.length },
        recentBlockhash: latestHash,
        instructions: p.memos.map((m) => ({ programIdIndex: keys.indexOf(m.program), accounts: [], data: m.data })),
        version: 0,
        signatures: [p.signature],
        memos: [],
        slot: slot - 5,
        blockTime: blockTimes.get(slot - 5) ?? Math.floor(Date.now() / 1000),
        err: p.err ?? null,
        fee: FEE_PER_SIGNATURE,
        preBalance: 1_000_000n,
      };
      bySig.set(p.signature, tx);
    },
    close: async () => {
      clearInterval(timer);
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
