/**
 * The on-chain half of `peg-oracle verify` (methodology section 8): given a receipt's expected memo fields and the
 * signature of the transaction said to anchor it, read the transaction from a Solana node and check that it
 * succeeded, carries exactly one memo and that memo is this receipt's, and was paid for by an allowed signer.
 * Exit 0 anchored, 4 mismatch, 5 not verifiable yet (not found, not confirmed, node unreachable).
 */
import { base58Decode } from "../catalog/base58.ts";
import { timestampToWire } from "../methodology/index.ts";
import { MemoFormatError, parseAnchorMemo, type AnchorMemoFields } from "./memo.ts";
import { RpcFailure, type AnchorRpc } from "./rpc.ts";

export const ONCHAIN_EXIT = { anchored: 0, mismatch: 4, notVerifiable: 5 } as const;

export interface OnchainVerdict {
  readonly exit: 0 | 4 | 5;
  readonly verdict: "ANCHORED" | "MISMATCH" | "NOT_VERIFIABLE";
  readonly message: string;
  readonly tx_sig?: string;
  readonly slot?: number;
  readonly block_time?: string;
  readonly signer?: string;
}

/** What the service claims about the commit (`/v1/audit/{id}/onchain`), checked against the chain when given. */
export interface ClaimedCommit {
  readonly tx_sig: string;
  readonly slot?: number;
  readonly block_time?: string;
  readonly memo?: string;
  readonly signer?: string;
}

const mismatch = (message: string, extra: Partial<OnchainVerdict> = {}): OnchainVerdict => ({ exit: 4, verdict: "MISMATCH", message, ...extra });
const notYet = (message: string, extra: Partial<OnchainVerdict> = {}): OnchainVerdict => ({ exit: 5, verdict: "NOT_VERIFIABLE", message, ...extra });

/** A base58 text of exactly 64 bytes. */
export function isSignature(text: string): boolean {
  try {
    return text.length <= 90 && base58Decode(text).length === 64;
  } catch {
    return false;
  }
}

export async function checkOnchain(
  rpc: AnchorRpc,
  expected: AnchorMemoFields,
  claimed: ClaimedCommit,
  allowedSigners: readonly string[],
): Promise<OnchainVerdict> {
  const sig = claimed.tx_sig;
  if (!isSignature(sig)) return mismatch(`${JSON.stringify(sig.slice(0, 100))} is not a transaction signature (64 bytes, base58)`);
  let tx;
  try {
    tx = await rpc.transaction(sig);
  } catch (e) {
    return notYet(`cannot read transaction ${sig}: ${e instanceof RpcFailure ? `${e.kind}: ${e.message}` : String(e)}`, { tx_sig: sig });
  }
  if (tx === null) return notYet(`transaction ${sig} is not confirmed on this node (yet)`, { tx_sig: sig });
  const blockTime = tx.blockTime === null ? undefined : timestampToWire(tx.blockTime);
  const seen = { tx_sig: sig, slot: tx.slot, ...(blockTime === undefined ? {} : { block_time: blockTime }), ...(tx.signers[0] === undefined ? {} : { signer: tx.signers[0] }) };
  if (tx.err !== null && tx.err !== undefined) return mismatch(`transaction ${sig} failed on chain, so it records nothing`, seen);
  if (tx.memos.length !== 1) return mismatch(`transaction ${sig} has ${tx.memos.length} memo instructions, expected exactly 1`, seen);
  const text = tx.memos[0]!.text;
  if (text === null) return mismatch(`the memo of ${sig} is not UTF-8 text`, seen);
  let got: AnchorMemoFields;
  try {
    got = parseAnchorMemo(text);
  } catch (e) {
    if (e instanceof MemoFormatError) return mismatch(`the memo of ${sig} is not an anchor memo: ${e.message}`, seen);
    throw e;
  }
  for (const k of ["methodology_version", "alert_id", "receipt_sha256"] as const) {
    if (got[k] !== expected[k]) return mismatch(`the memo's ${k} is ${got[k]}, the receipt's is ${expected[k]}`, seen);
  }
  const payer = tx.signers[0];
  if (payer === undefined || !allowedSigners.includes(payer)) {
    return mismatch(`transaction ${sig} was signed by ${payer ?? "nobody"}, which is not on the signer allow-list (${allowedSigners.join(", ")})`, seen);
  }
  if (claimed.memo !== undefined && claimed.memo !== text) return mismatch(`the service reports memo ${claimed.memo}, the chain holds ${text}`, seen);
  if (claimed.signer !== undefined && claimed.signer !== payer) return mismatch(`the service reports signer ${claimed.signer}, the chain says ${payer}`, seen);
  if (claimed.slot !== undefined && claimed.slot !== tx.slot) return mismatch(`the service reports slot ${claimed.slot}, the chain says ${tx.slot}`, seen);
  if (claimed.block_time !== undefined && blockTime !== undefined && Date.parse(claimed.block_time) !== tx.blockTime) {
    return mismatch(`the service reports block time ${claimed.block_time}, the chain says ${blockTime}`, seen);
  }
  return { exit: 0, verdict: "ANCHORED", message: `memo ${text} confirmed at slot ${tx.slot}, signed by ${payer}`, ...seen };
}
