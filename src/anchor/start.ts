/**
 * Starting anchoring inside the service: off (with a log line) when `SOLANA_RPC_URL` is not set, off (with an error
 * line) when the configured fee payer cannot be used; never a reason for the service not to start.
 */
import type { Clock } from "../clock.ts";
import type { SecretBox } from "../secret-box.ts";
import type { Executor } from "../store/index.ts";
import { FeePayerError, openFeePayer } from "./fee-payer.ts";
import { solanaRpc } from "./rpc.ts";
import { startAnchorWorker, type AnchorLog, type AnchorWorker } from "./worker.ts";

export interface AnchoringSetup {
  /** False: anchoring is off and DEPEG, CRITICAL and BLACK_SWAN receipts stay `not_committed_yet`. */
  readonly enabled: boolean;
  readonly rpcUrl: string;
  readonly keypairPath: string | null;
  readonly dailyBudget: number;
  readonly db: Executor;
  /** Seals the generated fee payer's seed at rest (unused with ANCHOR_KEYPAIR). */
  readonly secrets: SecretBox;
  readonly clock: Clock;
  readonly log: AnchorLog;
}

export async function startAnchoring(s: AnchoringSetup): Promise<AnchorWorker | null> {
  if (!s.enabled) {
    s.log("warn", "SOLANA_RPC_URL is not set: on-chain anchoring is disabled (DEPEG, CRITICAL and BLACK_SWAN receipts stay not_committed_yet)");
    return null;
  }
  let signer;
  try {
    signer = await openFeePayer(s.db, s.keypairPath, s.clock.now(), s.secrets);
  } catch (e) {
    if (!(e instanceof FeePayerError)) throw e;
    s.log("error", "on-chain anchoring is disabled: the fee payer keypair cannot be used", { error: e.message });
    return null;
  }
  const worker = startAnchorWorker({ db: s.db, rpc: solanaRpc(s.rpcUrl), signer, clock: s.clock, dailyBudget: s.dailyBudget, log: s.log });
  s.log("info", "on-chain anchoring started", { signer: worker.signer, daily_budget: s.dailyBudget, source: s.keypairPath === null ? "stored key" : "ANCHOR_KEYPAIR" });
  return worker;
}
