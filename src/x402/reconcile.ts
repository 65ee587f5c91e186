/**
 * A paid answer is never lost: what a crash leaves in the payment ledger is finished by the next start, and by a
 * pass that runs again while payments come in.
 *
 * - `claimed` (verified, the work not done, nothing sent): given back (deleted), so the same payment can be presented
 *   again. Only once its holder is gone: a process of this host that no longer runs, or no sign of it for
 *   `claimGraceMs` (longer than any verification and work take: another API process may be handling it).
 * - `settling` (the answer stored, the settlement perhaps sent): the chain decides (src/x402/probe.ts). Landed ->
 *   `settled`: the answer is owed to the same payment presented again. Landed with an error -> `failed`. Absent with
 *   its blockhash expired -> given back: it can never land. Absent and still valid -> settled again: the same
 *   transaction, so the chain takes it at most once. Unknown (the node unreachable) -> left for the next pass. With a
 *   remote facilitator the settlement's id is not known: it is settled again, and if that does not succeed it is
 *   `unconfirmed`, logged for the operator.
 * - answers older than the answer window are cleared (the row stays: the payment is not accepted again).
 */
import { hostname } from "node:os";
import type { PaymentRequirements } from "@x402/core/types";
import type { FacilitatorClient } from "@x402/core/server";
import type { Clock } from "../clock.ts";
import { clearAnswers, finishPayment, openPayments, openPaymentsHeldElsewhere, releasePayment, type Executor, type PaymentRecord } from "../store/index.ts";
import { withTrouble } from "./facilitator.ts";
import type { X402Metrics } from "./metrics.ts";
import type { SettlementProbe } from "./probe.ts";
import type { PaymentPayload, SettleResponse } from "./types.ts";

/** How long a claim may be in use (verification, then the work: /x402/events waits up to 25 s) before it is stale. */
export const DEFAULT_CLAIM_GRACE_MS = 120_000;

export interface ReconcileDeps {
  readonly db: Executor;
  readonly clock: Clock;
  readonly facilitator: FacilitatorClient;
  readonly probe: SettlementProbe;
  /** This process instance (`holder` of its rows). */
  readonly holder: string;
  readonly network: string;
  readonly claimGraceMs: number;
  readonly answerWindowMs: number;
  readonly metrics?: X402Metrics;
  readonly log?: (level: "info" | "warn" | "error", msg: string, fields?: Record<string, unknown>) => void;
}

/** What became of a `settling` row. */
export type SettlingOutcome = "owed" | "released" | "failed" | "unconfirmed" | "pending";

/** This process as a ledger holder: host, pid and a random instance id (a pid is reused across restarts). */
export function holderId(instance: string): string {
  return `${hostname()}/${String(process.pid)}/${instance}`;
}

/** True when `holder` names a process of this host that no longer runs. */
function holderGone(holder: string | null): boolean {
  if (holder === null) return true;
  const [host, pid] = holder.split("/");
  if (host !== hostname() || pid === undefined || !/^\d+$/.test(pid) || Number(pid) === process.pid) return false;
  try {
    process.kill(Number(pid), 0);
    return false;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "ESRCH";
  }
}

const settledResponse = (transaction: string, network: string, payer: string | null): SettleResponse => ({ success: true, transaction, network: network as SettleResponse["network"], ...(payer === null ? {} : { payer }) });

/**
 * Settles a `settling` row's payment again (the same transaction): the SettleResponse if the facilitator says it
 * settled, "unreachable" if it (or its RPC) could not be asked, null if it answered that it did not settle.
 */
async function settleAgain(deps: ReconcileDeps, row: PaymentRecord, payload: PaymentPayload): Promise<SettleResponse | "unreachable" | null> {
  if (row.requirements === null) return null;
  const r = await withTrouble(() => deps.facilitator.settle(payload, JSON.parse(row.requirements!) as PaymentRequirements));
  if ("value" in r && r.value.success) return r.value;
  return "error" in r || r.trouble.unavailable !== null ? "unreachable" : null;
}

/** Finishes one `settling` row by what the chain says (see the module comment). */
export async function finishSettling(deps: ReconcileDeps, row: PaymentRecord): Promise<SettlingOutcome> {
  const { db, clock } = deps;
  if (row.payload === null) return "pending";
  const payload = JSON.parse(row.payload) as PaymentPayload;
  const owe = async (s: SettleResponse): Promise<SettlingOutcome> => {
    await finishPayment(db, row.key, { status: "settled", at: clock.now(), payer: s.payer ?? row.payer, tx_sig: s.transaction, settlement: JSON.stringify(s) });
    return "owed";
  };
  const seen = await deps.probe.outcome(payload, row.tx_sig);
  switch (seen.kind) {
    case "landed":
      return owe(settledResponse(seen.signature, deps.network, row.payer));
    case "failed":
      await finishPayment(db, row.key, { status: "failed", at: clock.now(), tx_sig: seen.signature, reason: `transaction_failed (${seen.error})` });
      return "failed";
    case "absent": {
      if (seen.expired) return (await releasePayment(db, row.key, "settling")) ? "released" : "pending";
      const again = await settleAgain(deps, row, payload);
      return again === null || again === "unreachable" ? "pending" : owe(again);
    }
    case "unknown": {
      if (row.tx_sig !== null) return "pending"; // the node did not answer: ask again at the next pass
      const again = await settleAgain(deps, row, payload);
      // Not reachable now: asked again at the next pass; answered "not settled": its outcome stays unknown.
      if (again === "unreachable") return "pending";
      if (again !== null) return owe(again);
      await finishPayment(db, row.key, { status: "unconfirmed", at: clock.now(), reason: `reconcile: ${seen.why}` });
      deps.log?.("error", "x402 payment left settling by a crash: outcome unknown, check it at the facilitator", { key: row.key, payer: row.payer, why: seen.why });
      return "unconfirmed";
    }
  }
}

/** One row a pass looks at: a stale claim is given back, a settling one finished by the chain. */
async function reconcileRow(deps: ReconcileDeps, row: PaymentRecord, stale: boolean): Promise<SettlingOutcome | "held"> {
  if (row.status === "claimed") {
    if (!stale && !holderGone(row.holder)) return "held";
    return (await releasePayment(deps.db, row.key)) ? "released" : "pending";
  }
  return finishSettling(deps, row);
}

export interface PassReport {
  readonly owed: number;
  readonly released: number;
  readonly failed: number;
  readonly unconfirmed: number;
  readonly pending: number;
  readonly answersCleared: number;
}

/**
 * One reconciliation pass: rows other instances left (at start: every row of a previous run), rows of any holder
 * idle past the claim grace, then the answers past their window.
 */
export async function reconcilePass(deps: ReconcileDeps): Promise<PassReport> {
  const now = deps.clock.now();
  const counts = { owed: 0, released: 0, failed: 0, unconfirmed: 0, pending: 0 };
  const seen = new Set<string>();
  const stale = await openPayments(deps.db, now - deps.claimGraceMs);
  for (const row of stale) seen.add(row.key);
  const elsewhere = (await openPaymentsHeldElsewhere(deps.db, deps.holder)).filter((r) => !seen.has(r.key));
  for (const [row, isStale] of [...stale.map((r) => [r, true] as const), ...elsewhere.map((r) => [r, false] as const)]) {
    let outcome: SettlingOutcome | "held";
    try {
      outcome = await reconcileRow(deps, row, isStale);
    } catch (e) {
      deps.log?.("warn", "x402 reconciliation of a payment failed; it is tried again at the next pass", { key: row.key, error: e instanceof Error ? e.message : String(e) });
      outcome = "pending";
    }
    if (outcome === "held") continue;
    counts[outcome]++;
    if (outcome !== "pending") deps.metrics?.reconciled.inc({ outcome });
    if (outcome === "released") deps.metrics?.released.inc({ why: "reconciled" });
  }
  const answersCleared = await clearAnswers(deps.db, now - deps.answerWindowMs);
  const report = { ...counts, answersCleared };
  if (counts.owed + counts.released + counts.failed + counts.unconfirmed > 0) deps.log?.("info", "x402 payments reconciled", { ...report });
  return report;
}
