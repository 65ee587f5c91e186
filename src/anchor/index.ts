/**
 * On-chain anchoring (issue 7, methodology section 8): the memo format, the signed memo transaction, the Solana RPC
 * calls, the worker that commits receipts and the verifier's on-chain check. Sits beside streams and delivery: it
 * uses the store and methodology, never http or cli.
 */
export { MEMO_PREFIX, MemoFormatError, anchorMemo, parseAnchorMemo, type AnchorMemoFields } from "./memo.ts";
export { ANCHOR_MEMO_PROGRAM, signAnchorTransaction, type Lifetime, type SignedAnchor } from "./transaction.ts";
export {
  RpcFailure,
  classifyRpcError,
  solanaRpc,
  type AnchorRpc,
  type LandedMemo,
  type LandedTransaction,
  type RpcFailureKind,
  type SignatureStatus,
} from "./rpc.ts";
export { FeePayerError, feePayerFromFile, openFeePayer, storedFeePayer } from "./fee-payer.ts";
export {
  ANCHORED_STATES,
  SIGNATURE_FEE_LAMPORTS,
  startAnchorWorker,
  type AnchorLog,
  type AnchorStats,
  type AnchorWorker,
  type AnchorWorkerOptions,
} from "./worker.ts";
export { ONCHAIN_EXIT, checkOnchain, isSignature, type ClaimedCommit, type OnchainVerdict } from "./check.ts";
export { startAnchoring, type AnchoringSetup } from "./start.ts";
