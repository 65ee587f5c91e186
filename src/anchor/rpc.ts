/**
 * The Solana JSON-RPC calls anchoring needs, over @solana/kit's RPC client, with the answers narrowed to plain
 * numbers and strings and the node's errors sorted into what the worker does about them (`RpcFailure.kind`).
 */
import { SUPPORTED_MEMO_PROGRAM_ADDRESSES } from "@solana-program/memo";
import {
  address,
  createSolanaRpc,
  getBase58Encoder,
  isSolanaError,
  signature as toSignature,
  SOLANA_ERROR__JSON_RPC__SERVER_ERROR_SEND_TRANSACTION_PREFLIGHT_FAILURE,
  SOLANA_ERROR__TRANSACTION_ERROR__ACCOUNT_NOT_FOUND,
  SOLANA_ERROR__TRANSACTION_ERROR__ALREADY_PROCESSED,
  SOLANA_ERROR__TRANSACTION_ERROR__BLOCKHASH_NOT_FOUND,
  SOLANA_ERROR__TRANSACTION_ERROR__INSUFFICIENT_FUNDS_FOR_FEE,
  type Base64EncodedWireTransaction,
} from "@solana/kit";
import type { Lifetime } from "./transaction.ts";

/** What the worker does about a failed call. */
export type RpcFailureKind =
  /** The node does not know the transaction's blockhash (expired): this transaction can never land. */
  | "blockhash_not_found"
  /** The fee payer cannot pay the fee (no account or too few lamports). */
  | "insufficient_funds"
  /** The node has this signature already: it landed (or is landing). */
  | "already_processed"
  /** The node refused this transaction for another reason; it was not forwarded. */
  | "rejected"
  /** Transport error, timeout, unhealthy node, an HTTP error: the outcome is unknown. */
  | "unavailable";

/** A failed RPC call, sorted. `message` carries the node's words. */
export class RpcFailure extends Error {
  constructor(
    readonly kind: RpcFailureKind,
    message: string,
  ) {
    super(message);
    this.name = "RpcFailure";
  }
}

/** A signature's status as `getSignatureStatuses` reports it. */
export interface SignatureStatus {
  readonly slot: number;
  readonly confirmationStatus: "processed" | "confirmed" | "finalized" | null;
  /** The transaction error when it failed on chain, as the node spells it; null when it succeeded. */
  readonly err: unknown;
}

/** One memo instruction of a landed transaction. */
export interface LandedMemo {
  readonly programId: string;
  /** UTF-8 text; null when the bytes are not UTF-8. */
  readonly text: string | null;
}

/** A landed transaction, as far as anchoring cares. */
export interface LandedTransaction {
  readonly slot: number;
  /** Epoch ms; null when the node does not know the block's time. */
  readonly blockTime: number | null;
  readonly err: unknown;
  /** Account keys that signed, fee payer first. */
  readonly signers: readonly string[];
  /** Instructions addressed to any SPL Memo program, in order. */
  readonly memos: readonly LandedMemo[];
  /** Number of instructions in the transaction. */
  readonly instructionCount: number;
}

/** The calls anchoring makes. Every method throws RpcFailure. */
export interface AnchorRpc {
  latestBlockhash(): Promise<Lifetime>;
  blockHeight(): Promise<number>;
  /** Lamports. */
  balance(account: string): Promise<bigint>;
  /** Sends base64 wire bytes (with preflight); returns the signature. */
  send(wire: string): Promise<string>;
  signatureStatus(sig: string): Promise<SignatureStatus | null>;
  /** The confirmed transaction, or null when the node does not have it (yet). */
  transaction(sig: string): Promise<LandedTransaction | null>;
}

const MEMO_PROGRAMS: ReadonlySet<string> = new Set(SUPPORTED_MEMO_PROGRAM_ADDRESSES);
const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Sorts any error thrown by a kit RPC call. */
export function classifyRpcError(e: unknown): RpcFailure {
  if (e instanceof RpcFailure) return e;
  if (isSolanaError(e, SOLANA_ERROR__JSON_RPC__SERVER_ERROR_SEND_TRANSACTION_PREFLIGHT_FAILURE)) {
    const cause = e.cause;
    const why = cause instanceof Error ? cause.message : e.message;
    if (isSolanaError(cause, SOLANA_ERROR__TRANSACTION_ERROR__BLOCKHASH_NOT_FOUND)) return new RpcFailure("blockhash_not_found", why);
    if (isSolanaError(cause, SOLANA_ERROR__TRANSACTION_ERROR__INSUFFICIENT_FUNDS_FOR_FEE) || isSolanaError(cause, SOLANA_ERROR__TRANSACTION_ERROR__ACCOUNT_NOT_FOUND)) {
      return new RpcFailure("insufficient_funds", why);
    }
    if (isSolanaError(cause, SOLANA_ERROR__TRANSACTION_ERROR__ALREADY_PROCESSED)) return new RpcFailure("already_processed", why);
    return new RpcFailure("rejected", `preflight failed: ${why}`);
  }
  return new RpcFailure("unavailable", e instanceof Error ? e.message : String(e));
}

const num = (v: bigint | number, what: string): number => {
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < 0) throw new RpcFailure("unavailable", `the node answered an invalid ${what}: ${String(v)}`);
  return n;
};

/** An AnchorRpc over `url`. Each call gives up after `timeoutMs` (default 10 s) as `unavailable`. */
export function solanaRpc(url: string, options: { readonly timeoutMs?: number } = {}): AnchorRpc {
  const rpc = createSolanaRpc(url);
  const timeoutMs = options.timeoutMs ?? 10_000;
  const call = async <T>(fn: (abortSignal: AbortSignal) => Promise<T>): Promise<T> => {
    try {
      return await fn(AbortSignal.timeout(timeoutMs));
    } catch (e) {
      throw classifyRpcError(e);
    }
  };
  const base58 = getBase58Encoder();
  return {
    latestBlockhash: () =>
      call(async (abortSignal) => {
        const r = await rpc.getLatestBlockhash({ commitment: "confirmed" }).send({ abortSignal });
        return { blockhash: r.value.blockhash, lastValidBlockHeight: num(r.value.lastValidBlockHeight, "lastValidBlockHeight") };
      }),
    blockHeight: () => call(async (abortSignal) => num(await rpc.getBlockHeight({ commitment: "confirmed" }).send({ abortSignal }), "block height")),
    balance: (account) =>
      call(async (abortSignal) => {
        const r = await rpc.getBalance(address(account), { commitment: "confirmed" }).send({ abortSignal });
        return BigInt(r.value);
      }),
    send: (wire) =>
      call(async (abortSignal) =>
        String(
          await rpc
            .sendTransaction(wire as Base64EncodedWireTransaction, { encoding: "base64", preflightCommitment: "confirmed", maxRetries: 0n })
            .send({ abortSignal }),
        ),
      ),
    signatureStatus: (sig) =>
      call(async (abortSignal) => {
        const r = await rpc.getSignatureStatuses([toSignature(sig)], { searchTransactionHistory: true }).send({ abortSignal });
        const s = r.value[0];
        if (s === null || s === undefined) return null;
        return { slot: num(s.slot, "slot"), confirmationStatus: s.confirmationStatus ?? null, err: s.err };
      }),
    transaction: (sig) =>
      call(async (abortSignal) => {
        const t = await rpc
          .getTransaction(toSignature(sig), { encoding: "json", maxSupportedTransactionVersion: 0, commitment: "confirmed" })
          .send({ abortSignal });
        if (t === null) return null;
        const msg = t.transaction.message;
        const keys = msg.accountKeys.map(String);
        const memos: LandedMemo[] = [];
        for (const ix of msg.instructions) {
          const programId = keys[ix.programIdIndex] ?? "";
          if (!MEMO_PROGRAMS.has(programId)) continue;
          let text: string | null;
          try {
            text = utf8.decode(Uint8Array.from(base58.encode(ix.data)));
          } catch {
            text = null;
          }
          memos.push({ programId, text });
        }
        return {
          slot: num(t.slot, "slot"),
          blockTime: t.blockTime === null ? null : num(t.blockTime, "block time") * 1000,
          err: t.meta?.err ?? null,
          signers: keys.slice(0, msg.header.numRequiredSignatures),
          memos,
          instructionCount: msg.instructions.length,
        };
      }),
  };
}
