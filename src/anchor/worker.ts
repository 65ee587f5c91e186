/**
 * The anchoring worker (issue 7, methodology section 8). It polls the store for receipts still `not_committed_yet`
 * (oldest decision first, one at a time) and, for each, walks:
 *
 *   reserve (one unit of the UTC day's budget, else `not_applicable`)
 *   → balance check (below one fee: `wallet_drained`)
 *   → sign a memo transaction on a fresh blockhash, record its signature and wire bytes, send it
 *   → follow it until it is confirmed (`committed` with slot and block time) or provably dead (blockhash expired,
 *     refused by preflight, failed on chain), then the next attempt; after `maxAttempts`: `retry_exhausted`.
 *
 * Never twice: a new transaction is signed only once the previous one can no longer land (its blockhash expired or
 * the node refused it), and a restart resumes a recorded transaction by its signature before anything else. When
 * the outcome cannot be known (the node is unreachable), the row stays `sent` and is followed again later.
 *
 * Several workers (one per engine process) may share a database: each alert is held under a lease that the holder
 * renews while it works and releases when it stops; only the holder records and sends a transaction.
 */
import { randomUUID } from "node:crypto";
import type { KeyPairSigner } from "@solana/kit";
import type { Clock } from "../clock.ts";
import { timestampToWire, type EpochMs, type PegState } from "../methodology/index.ts";
import {
  markNotApplicable,
  recordAnchorFailure,
  recordCommitted,
  recordDead,
  recordSent,
  releaseAnchorLease,
  renewAnchorLease,
  reserveAnchor,
  settleFromAnchor,
  waitingAnchors,
  type AnchorRecord,
  type Executor,
  type WaitingAnchor,
} from "../store/index.ts";
import { anchorMemo } from "./memo.ts";
import { RpcFailure, type AnchorRpc } from "./rpc.ts";
import { signAnchorTransaction } from "./transaction.ts";

export type AnchorLog = (level: "debug" | "info" | "warn" | "error", msg: string, fields?: Record<string, unknown>) => void;

/** Transitions into these states are anchored (methodology section 8); every other one is `not_applicable`. */
export const ANCHORED_STATES: ReadonlySet<PegState> = new Set(["DEPEG", "CRITICAL", "BLACK_SWAN"]);

/** Lamports a one-signature transaction pays (the base fee); below it the wallet is drained. */
export const SIGNATURE_FEE_LAMPORTS = 5000n;

export interface AnchorWorkerOptions {
  readonly db: Executor;
  readonly rpc: AnchorRpc;
  readonly signer: KeyPairSigner;
  /** Wall clock and timers (anchoring runs on real time, whatever the feed's clock). */
  readonly clock: Clock;
  /** Commits per UTC day; an alert past it is `not_applicable` (cost-gated). */
  readonly dailyBudget: number;
  /** Transactions signed per alert before `retry_exhausted`. Default 5. */
  readonly maxAttempts?: number;
  /** Wait between store scans when nothing is waiting. Default 1000 ms. */
  readonly pollMs?: number;
  /** Wait between status checks of a transaction in flight. Default 500 ms. */
  readonly confirmPollMs?: number;
  /** Wait after a dead attempt before the next one. Default 2000 ms. */
  readonly retryDelayMs?: number;
  /** Re-send an unconfirmed transaction this often while its blockhash is valid. Default 2000 ms. */
  readonly resendEveryMs?: number;
  /** Give up following one transaction for now (it stays `sent`, followed again later). Default 120 s. */
  readonly followLimitMs?: number;
  /** Minimum fee payer balance. Default one signature fee. */
  readonly minBalanceLamports?: bigint;
  /** How long a claim on an alert lasts without renewal (renewed while working). Default 30 s. */
  readonly leaseMs?: number;
  readonly log?: AnchorLog;
}

/** Counters since start. */
export interface AnchorStats {
  committed: number;
  failed: number;
  overBudget: number;
  attempts: number;
}

export interface AnchorWorker {
  /** Base58 address of the fee payer (the signer integrators allow-list). */
  readonly signer: string;
  readonly stats: Readonly<AnchorStats>;
  /** Scans now instead of at the next poll. */
  kick(): void;
  /** Stops after the alert in hand; idempotent. A transaction in flight stays recorded and resumes at the next start. */
  stop(): Promise<void>;
}

type Followed =
  | { readonly kind: "landed"; readonly slot: number; readonly blockTime: EpochMs }
  | { readonly kind: "dead"; readonly why: string }
  | { readonly kind: "drained"; readonly why: string }
  | { readonly kind: "unknown"; readonly why: string };

class Stopped extends Error {}

/** Starts the worker loop. */
export function startAnchorWorker(o: AnchorWorkerOptions): AnchorWorker {
  const maxAttempts = o.maxAttempts ?? 5;
  const pollMs = o.pollMs ?? 1000;
  const confirmPollMs = o.confirmPollMs ?? 500;
  const retryDelayMs = o.retryDelayMs ?? 2000;
  const resendEveryMs = o.resendEveryMs ?? 2000;
  const followLimitMs = o.followLimitMs ?? 120_000;
  const minBalance = o.minBalanceLamports ?? SIGNATURE_FEE_LAMPORTS;
  const leaseMs = o.leaseMs ?? 30_000;
  const owner = randomUUID();
  const log: AnchorLog = o.log ?? (() => {});
  const signer = o.signer.address as string;
  const stats: AnchorStats = { committed: 0, failed: 0, overBudget: 0, attempts: 0 };
  const { db, rpc, clock } = o;

  let stopped = false;
  let wake: (() => void) | null = null;
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      if (stopped) return resolve();
      const id = clock.setTimeout(() => {
        wake = null;
        resolve();
      }, ms);
      wake = () => {
        clock.clearTimeout(id);
        wake = null;
        resolve();
      };
    });
  const pause = async (ms: number) => {
    await sleep(ms);
    if (stopped) throw new Stopped();
  };

  /** Follows one signed transaction until it lands, is provably dead, or following takes too long. */
  async function follow(id: string, sig: string, wire: string, lastValid: number, sendFirst: boolean): Promise<Followed> {
    const started = clock.now();
    let lastSend = -Infinity;
    let renewed = clock.now();
    const send = async (): Promise<Followed | null> => {
      lastSend = clock.now();
      try {
        await rpc.send(wire);
      } catch (e) {
        const f = e instanceof RpcFailure ? e : new RpcFailure("unavailable", String(e));
        if (f.kind === "blockhash_not_found") return { kind: "dead", why: `blockhash expired: ${f.message}` };
        if (f.kind === "insufficient_funds") return { kind: "drained", why: f.message };
        if (f.kind === "rejected") return { kind: "dead", why: f.message };
        // already_processed: it is landing; unavailable: it may have been forwarded. Either way, watch the signature.
        log("debug", "anchor send did not answer cleanly; following the signature", { tx_sig: sig, kind: f.kind, error: f.message });
      }
      return null;
    };
    if (sendFirst) {
      const r = await send();
      if (r !== null) return r;
    }
    for (;;) {
      await pause(confirmPollMs);
      if (clock.now() - renewed >= leaseMs / 3) {
        await renewAnchorLease(db, id, owner, clock.now() + leaseMs);
        renewed = clock.now();
      }
      try {
        const st = await rpc.signatureStatus(sig);
        if (st !== null && st.err !== null && st.err !== undefined) {
          // It landed and failed: the memo is not on chain, so a new transaction is not a second anchor.
          return { kind: "dead", why: `failed on chain: ${JSON.stringify(st.err, (_k, v: unknown) => (typeof v === "bigint" ? String(v) : v))}` };
        }
        if (st !== null && (st.confirmationStatus === "confirmed" || st.confirmationStatus === "finalized")) {
          const tx = await rpc.transaction(sig);
          if (tx !== null && tx.blockTime !== null) return { kind: "landed", slot: tx.slot, blockTime: tx.blockTime };
        } else if (st === null) {
          const height = await rpc.blockHeight();
          if (height > lastValid) {
            // One more look: it may have landed in the last valid block.
            const again = await rpc.signatureStatus(sig);
            if (again === null) return { kind: "dead", why: `blockhash expired at block height ${height} (last valid ${lastValid}) before the transaction landed` };
            continue;
          }
          if (clock.now() - lastSend >= resendEveryMs) {
            const r = await send();
            if (r !== null) return r;
          }
        }
      } catch (e) {
        if (e instanceof Stopped) throw e;
        log("debug", "anchor status check failed", { tx_sig: sig, error: e instanceof Error ? e.message : String(e) });
      }
      if (clock.now() - started > followLimitMs) return { kind: "unknown", why: "no answer about the transaction in time" };
    }
  }

  /** `payer`: the address that signed this transaction (a resumed one may predate a key change). */
  async function commit(id: string, sig: string, payer: string, landed: { slot: number; blockTime: EpochMs }): Promise<void> {
    let lastError: unknown = null;
    for (let i = 0; i < 3; i++) {
      try {
        await recordCommitted(db, id, { txSig: sig, signer: payer, slot: landed.slot, blockTime: landed.blockTime, now: clock.now() });
        stats.committed++;
        log("info", "receipt anchored on chain", { alert_id: id, tx_sig: sig, slot: landed.slot });
        return;
      } catch (e) {
        lastError = e;
        await pause(retryDelayMs);
      }
    }
    const why = `the commit ${sig} landed at slot ${landed.slot} but could not be recorded: ${lastError instanceof Error ? lastError.message : String(lastError)}`;
    log("error", "anchor commit could not be recorded", { alert_id: id, tx_sig: sig, slot: landed.slot });
    // If even this write fails the row stays `sent` and the next start finds the landed signature again.
    await recordAnchorFailure(db, id, "persistence_failed", why, clock.now());
    stats.failed++;
  }

  async function fail(id: string, status: "retry_exhausted" | "wallet_drained", why: string): Promise<void> {
    await recordAnchorFailure(db, id, status, why, clock.now());
    stats.failed++;
    log(status === "wallet_drained" ? "error" : "warn", `anchor ${status}`, { alert_id: id, signer, error: why });
  }

  /** Works one waiting receipt. False when another worker holds it (nothing was done). */
  async function anchor(w: WaitingAnchor): Promise<boolean> {
    const id = w.alert_id;
    if (!ANCHORED_STATES.has(w.to_state)) {
      await markNotApplicable(db, id);
      return true;
    }
    const memo = anchorMemo({ methodology_version: w.methodology_version, alert_id: id, receipt_sha256: w.receipt_sha256 });
    const now = clock.now();
    const r = await reserveAnchor(db, { alertId: id, memo, day: timestampToWire(now).slice(0, 10), budget: o.dailyBudget, now, owner, leaseUntil: now + leaseMs });
    if (r.kind === "busy") return false;
    if (r.kind === "over_budget") {
      if (w.anchor === null) {
        stats.overBudget++;
        log("warn", "anchor skipped: the daily budget is spent", { alert_id: id, budget: o.dailyBudget });
      } else await settleFromAnchor(db, id, "over_budget");
      return true;
    }
    try {
      await work(id, r.anchor);
    } finally {
      await releaseAnchorLease(db, id, owner).catch(() => {});
    }
    return true;
  }

  async function work(id: string, a: AnchorRecord): Promise<void> {
    if (a.status !== "reserved" && a.status !== "sent") {
      await settleFromAnchor(db, id, a.status);
      return;
    }
    let attempts = a.attempts;
    let lastWhy = a.error ?? "";

    // A transaction recorded before a restart (or an earlier pass) is followed first, by its signature.
    if (a.status === "sent" && a.tx_sig !== null && a.wire_tx !== null && a.last_valid_block_height !== null) {
      const f = await follow(id, a.tx_sig, a.wire_tx, a.last_valid_block_height, true);
      if (f.kind === "landed") return commit(id, a.tx_sig, a.signer ?? signer, f);
      if (f.kind === "drained") return fail(id, "wallet_drained", f.why);
      if (f.kind === "unknown") throw new RpcFailure("unavailable", f.why);
      lastWhy = f.why;
      await recordDead(db, id, f.why, clock.now());
    }

    while (attempts < maxAttempts) {
      if (attempts > a.attempts || lastWhy !== "") await pause(retryDelayMs);
      attempts++;
      stats.attempts++;
      let sig: string;
      let f: Followed;
      try {
        const balance = await rpc.balance(signer);
        if (balance < minBalance) return fail(id, "wallet_drained", `fee payer ${signer} holds ${balance} lamports, below the ${minBalance} a commit needs`);
        const lifetime = await rpc.latestBlockhash();
        const signed = await signAnchorTransaction(o.signer, a.memo, lifetime);
        sig = signed.signature;
        await recordSent(db, id, { attempts, signer, txSig: signed.signature, wireTx: signed.wire, lastValidBlockHeight: signed.lastValidBlockHeight, now: clock.now(), owner });
        f = await follow(id, signed.signature, signed.wire, signed.lastValidBlockHeight, true);
      } catch (e) {
        if (!(e instanceof RpcFailure)) throw e;
        // The call before the send failed: nothing is in flight.
        lastWhy = `${e.kind}: ${e.message}`;
        await recordDead(db, id, lastWhy, clock.now());
        log("warn", "anchor attempt failed", { alert_id: id, attempt: attempts, error: lastWhy });
        continue;
      }
      if (f.kind === "landed") return commit(id, sig, signer, f);
      if (f.kind === "drained") return fail(id, "wallet_drained", f.why);
      if (f.kind === "unknown") throw new RpcFailure("unavailable", f.why);
      lastWhy = f.why;
      await recordDead(db, id, f.why, clock.now());
      log("warn", "anchor attempt failed", { alert_id: id, attempt: attempts, tx_sig: sig, error: f.why });
    }
    await fail(id, "retry_exhausted", `${maxAttempts} attempts failed; last: ${lastWhy}`);
  }

  const loop = (async () => {
    while (!stopped) {
      // Straight on to the next scan after a pass that moved a receipt; a full poll wait when idle, blocked or failing.
      let busy = false;
      try {
        const waiting = await waitingAnchors(db, 16);
        for (const w of waiting) {
          if (stopped) break;
          try {
            if (await anchor(w)) busy = true;
          } catch (e) {
            if (e instanceof Stopped) break;
            // Unknown outcome or a store failure: the receipt stays waiting and is taken up again at the next scan.
            log("warn", "anchoring paused for a receipt", { alert_id: w.alert_id, error: e instanceof Error ? e.message : String(e) });
          }
        }
      } catch (e) {
        log("warn", "anchor scan failed", { error: e instanceof Error ? e.message : String(e) });
      }
      if (!stopped && !busy) await sleep(pollMs);
    }
  })();

  return {
    signer,
    stats,
    kick: () => wake?.(),
    stop: async () => {
      stopped = true;
      wake?.();
      await loop;
    },
  };
}
