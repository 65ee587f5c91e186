/**
 * Builds and signs the anchor transaction with @solana/kit: one SPL Memo instruction carrying the anchor memo, the fee
 * payer as the only signer, a recent blockhash as its lifetime. The signature is known before anything is sent, which
 * is what lets the worker record it first.
 */
import { getAddMemoInstruction, LEGACY_MEMO_PROGRAM_ADDRESS_V3 } from "@solana-program/memo";
import {
  appendTransactionMessageInstruction,
  blockhash as toBlockhash,
  createTransactionMessage,
  getBase64EncodedWireTransaction,
  getSignatureFromTransaction,
  pipe,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
  type KeyPairSigner,
} from "@solana/kit";

/**
 * The SPL Memo program the anchor is written with: `MemoSq4gq…`, deployed on every cluster for years (the package
 * calls it "v3"). The package's newer default (v4, `Memo4c2p…`) is not yet everywhere; the verifier accepts memos
 * from any Memo program address.
 */
export const ANCHOR_MEMO_PROGRAM: string = LEGACY_MEMO_PROGRAM_ADDRESS_V3;

/** A recent blockhash and the last block height at which a transaction using it can still land. */
export interface Lifetime {
  readonly blockhash: string;
  readonly lastValidBlockHeight: number;
}

/** A signed anchor transaction, ready to send. */
export interface SignedAnchor {
  /** Base58 signature of the fee payer: the transaction id. */
  readonly signature: string;
  /** Base64 wire bytes, as `sendTransaction` takes them. */
  readonly wire: string;
  readonly lastValidBlockHeight: number;
}

/** Signs a version-0 transaction holding exactly one memo instruction. */
export async function signAnchorTransaction(signer: KeyPairSigner, memo: string, lifetime: Lifetime): Promise<SignedAnchor> {
  const message = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayerSigner(signer, m),
    (m) => setTransactionMessageLifetimeUsingBlockhash({ blockhash: toBlockhash(lifetime.blockhash), lastValidBlockHeight: BigInt(lifetime.lastValidBlockHeight) }, m),
    (m) => appendTransactionMessageInstruction(getAddMemoInstruction({ memo }, { programAddress: LEGACY_MEMO_PROGRAM_ADDRESS_V3 }), m),
  );
  const tx = await signTransactionMessageWithSigners(message);
  return { signature: getSignatureFromTransaction(tx), wire: getBase64EncodedWireTransaction(tx), lastValidBlockHeight: lifetime.lastValidBlockHeight };
}
