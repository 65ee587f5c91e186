/**
 * Where a payment's settlement stands on chain, for the payments a crash left `settling` (the answer stored, the
 * settlement transaction perhaps sent): the start-up and periodic passes of src/x402/reconcile.ts ask, and a payment
 * presented again while `settling` asks too.
 *
 * The settlement transaction is the payer's transaction signed by the fee payer; its id is the fee payer's signature
 * (the first one). Ed25519 signatures are deterministic, so a process that signs as fee payer (self-facilitated)
 * knows that id before it sends anything and can ask the node for it (`getSignatureStatuses`, with history). A remote
 * facilitator's signature cannot be known: only its own answer to a settlement gives it.
 *
 * An absent transaction whose blockhash is no longer valid (`isBlockhashValid`) can never land: nothing was charged.
 */
import {
  createSolanaRpc,
  getBase58Decoder,
  getBase64Encoder,
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
  signBytes,
  type Blockhash,
  type KeyPairSigner,
  type Signature,
} from "@solana/kit";
import type { PaymentPayload } from "./types.ts";

/** What the chain says about a settlement transaction. */
export type ChainOutcome =
  | { readonly kind: "landed"; readonly signature: string }
  /** Landed with an error: the fee was paid, the transfer not made. */
  | { readonly kind: "failed"; readonly signature: string; readonly error: string }
  /** Not on chain; `expired`: its blockhash is no longer valid, so it never will be. */
  | { readonly kind: "absent"; readonly expired: boolean }
  /** The node could not be asked, or the transaction's id is not known (a remote facilitator's). */
  | { readonly kind: "unknown"; readonly why: string };

export interface SettlementProbe {
  /** The settlement transaction's id, when this process signs it as fee payer; else null. */
  transactionId(payload: PaymentPayload): Promise<string | null>;
  /** Where the settlement of `payload` stands; `signature` is its id when known. */
  outcome(payload: PaymentPayload, signature: string | null): Promise<ChainOutcome>;
}

interface PaymentTransaction {
  readonly messageBytes: Parameters<typeof signBytes>[1];
  readonly blockhash: string;
}

function paymentTransaction(payload: PaymentPayload): PaymentTransaction {
  const wire = payload.payload["transaction"];
  if (typeof wire !== "string") throw new Error("the payload has no transaction");
  const tx = getTransactionDecoder().decode(getBase64Encoder().encode(wire));
  const message = getCompiledTransactionMessageDecoder().decode(tx.messageBytes);
  return { messageBytes: tx.messageBytes, blockhash: message.lifetimeToken };
}

const text = (e: unknown): string => (e instanceof Error ? e.message : String(e));

/** A probe over `rpcUrl`; with `feePayer` (self-facilitated) it knows the settlement's id. */
export function chainProbe(opts: { rpcUrl: string; feePayer: KeyPairSigner | null; timeoutMs?: number }): SettlementProbe {
  const rpc = createSolanaRpc(opts.rpcUrl);
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const base58 = getBase58Decoder();

  async function transactionId(payload: PaymentPayload): Promise<string | null> {
    if (opts.feePayer === null) return null;
    const { messageBytes } = paymentTransaction(payload);
    return base58.decode(await signBytes(opts.feePayer.keyPair.privateKey, messageBytes));
  }

  async function blockhashExpired(blockhash: string): Promise<boolean> {
    const valid = await rpc.isBlockhashValid(blockhash as Blockhash, { commitment: "confirmed" }).send({ abortSignal: AbortSignal.timeout(timeoutMs) });
    return !valid.value;
  }

  return {
    transactionId,
    async outcome(payload, signature) {
      let tx: PaymentTransaction;
      try {
        tx = paymentTransaction(payload);
      } catch (e) {
        return { kind: "unknown", why: `the stored payment cannot be read: ${text(e)}` };
      }
      try {
        if (signature === null) return { kind: "unknown", why: "the settlement transaction's id is not known (a remote facilitator signs it)" };
        const statuses = await rpc.getSignatureStatuses([signature as Signature], { searchTransactionHistory: true }).send({ abortSignal: AbortSignal.timeout(timeoutMs) });
        const status = statuses.value[0] ?? null;
        if (status !== null && (status.confirmationStatus === "confirmed" || status.confirmationStatus === "finalized")) {
          if (status.err === null) return { kind: "landed", signature };
          return { kind: "failed", signature, error: JSON.stringify(status.err, (_, v: unknown) => (typeof v === "bigint" ? v.toString() : v)) };
        }
        // Processed but not confirmed yet, or not seen: it may still land while its blockhash is valid.
        if (status !== null) return { kind: "absent", expired: false };
        return { kind: "absent", expired: await blockhashExpired(tx.blockhash) };
      } catch (e) {
        return { kind: "unknown", why: `the Solana RPC did not answer: ${text(e)}` };
      }
    },
  };
}
