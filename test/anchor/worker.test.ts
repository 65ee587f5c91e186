/**
 * The anchoring worker against a real PostgreSQL (started by the test) and the local Solana node: every commit status
 * it can produce, the daily budget, and "never twice" across a restart.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { createKeyPairSignerFromPrivateKeyBytes, type KeyPairSigner } from "@solana/kit";
import { sql } from "kysely";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  anchorMemo,
  signAnchorTransaction,
  solanaRpc,
  startAnchorWorker,
  storedFeePayer,
  type AnchorWorker,
  type AnchorWorkerOptions,
} from "../../src/anchor/index.ts";
import { systemClock } from "../../src/clock.ts";
import { timestampToWire, type PegState, type Receipt } from "../../src/methodology/index.ts";
import {
  anchorBudgetUsed,
  anchorById,
  onchainCommit,
  openStore,
  receiptById,
  recordSent,
  reserveAnchor,
  type CommitStatus,
  type Store,
} from "../../src/store/index.ts";
import { USDC, runEngine } from "../store/fixtures.ts";
import { waitFor } from "../support/ports.ts";
import { startPostgres, type TestPostgres } from "../support/postgres.ts";
import { startLocalSolana, type LocalSolana } from "../support/solana-rpc.ts";
import { testSecretBox } from "../support/secrets.ts";

const run = runEngine();
const depeg = run.receipts.find((r) => r.to_state === "DEPEG")!;

/** A receipt like the engine's DEPEG one, under a new id and target state (the worker reads id, state, hash). */
function receiptTo(to: PegState): Receipt {
  return { ...depeg, alert_id: randomUUID(), to_state: to, receipt_sha256: randomBytes(32).toString("hex") };
}

let pg: TestPostgres;
let store: Store;
let node: LocalSolana;
let payer: KeyPairSigner;
let worker: AnchorWorker | null = null;

beforeAll(async () => {
  pg = await startPostgres();
  store = await openStore({ kind: "postgres", url: await pg.createDatabase(), max: 4 }, systemClock);
  await store.upsertAssets([USDC]);
}, 60_000);
afterAll(async () => {
  await store?.close();
  await pg?.dispose();
});
beforeEach(async () => {
  await sql`truncate receipts, alerts, anchors, anchor_budget, anchor_keys`.execute(store.db);
  node = await startLocalSolana({ blockMs: 20, validBlocks: 15 });
  payer = await createKeyPairSignerFromPrivateKeyBytes(randomBytes(32));
  node.setBalance(payer.address, 1_000_000n);
});
afterEach(async () => {
  await worker?.stop();
  worker = null;
  await node.close();
});

function start(o: Partial<AnchorWorkerOptions> = {}): AnchorWorker {
  worker = startAnchorWorker({
    db: store.db,
    rpc: solanaRpc(node.url, { timeoutMs: 2000 }),
    signer: payer,
    clock: systemClock,
    dailyBudget: 10,
    pollMs: 30,
    confirmPollMs: 20,
    retryDelayMs: 10,
    resendEveryMs: 100,
    ...o,
  });
  return worker;
}

async function insert(r: Receipt): Promise<Receipt> {
  await store.insertTransition(r, { seq: null, monitoringOnly: false, calibration: "calibrated" });
  return r;
}

/** The claim of a process that died: its lease has lapsed. */
const DEAD_LEASE = { owner: "previous-process", leaseUntil: Date.now() - 1000 };

const statusOf = async (id: string): Promise<CommitStatus | undefined> => (await receiptById(store.db, id))?.commit_status;

async function settled(id: string, timeoutMs = 10_000): Promise<CommitStatus> {
  let s: CommitStatus | undefined;
  await waitFor(async () => (s = await statusOf(id)) !== "not_committed_yet", timeoutMs, `receipt ${id} to leave not_committed_yet`);
  return s!;
}

describe("anchor worker", () => {
  it("commits a DEPEG receipt: one memo transaction, signed by the fee payer, recorded with slot and block time", async () => {
    const r = await insert(receiptTo("DEPEG"));
    expect(await statusOf(r.alert_id)).toBe("not_committed_yet");
    start();
    expect(await settled(r.alert_id)).toBe("committed");
    const landed = node.landed();
    expect(landed).toHaveLength(1);
    const memo = `pegoracle-v1|${r.methodology_version}|${r.alert_id}|${r.receipt_sha256}`;
    expect(landed[0]!.memos).toEqual([memo]);
    expect(landed[0]!.signers).toEqual([payer.address]);
    const c = await onchainCommit(store.db, r.alert_id);
    expect(c).toEqual({ tx_sig: landed[0]!.signature, slot: landed[0]!.slot, block_time: landed[0]!.blockTime! * 1000, memo, signer: payer.address });
    expect(worker!.stats).toMatchObject({ committed: 1, failed: 0, attempts: 1 });
    expect(await anchorBudgetUsed(store.db, timestampToWire(Date.now()).slice(0, 10))).toBe(1);
  });

  it("CRITICAL and BLACK_SWAN are anchored; DRIFT, PEGGED and UNKNOWN are not_applicable and never sent", async () => {
    const anchored = [await insert(receiptTo("CRITICAL")), await insert(receiptTo("BLACK_SWAN"))];
    const never = [await insert(receiptTo("DRIFT")), await insert(receiptTo("PEGGED")), await insert(receiptTo("UNKNOWN"))];
    for (const r of never) expect(await statusOf(r.alert_id)).toBe("not_applicable");
    // A row wrongly left waiting (say, written by an older build) is closed without a transaction.
    const stray = await insert(receiptTo("DRIFT"));
    await sql`update receipts set commit_status = 'not_committed_yet' where alert_id = ${stray.alert_id}`.execute(store.db);
    start();
    for (const r of anchored) expect(await settled(r.alert_id)).toBe("committed");
    expect(await settled(stray.alert_id)).toBe("not_applicable");
    expect(node.landed().map((t) => t.memos[0]!.split("|")[2]).sort()).toEqual(anchored.map((r) => r.alert_id).sort());
    for (const r of [...never, stray]) expect(await anchorById(store.db, r.alert_id)).toBeUndefined();
  });

  it("over the daily budget: not_applicable (cost-gated), nothing sent", async () => {
    const a = await insert({ ...receiptTo("DEPEG"), detected_at: "2026-06-12T10:00:00.000Z" });
    const b = await insert({ ...receiptTo("DEPEG"), detected_at: "2026-06-12T10:05:00.000Z" });
    start({ dailyBudget: 1 });
    expect(await settled(a.alert_id)).toBe("committed");
    expect(await settled(b.alert_id)).toBe("not_applicable");
    expect(node.landed()).toHaveLength(1);
    expect(await anchorById(store.db, b.alert_id)).toMatchObject({ status: "over_budget", budget_day: null, tx_sig: null });
    expect(worker!.stats.overBudget).toBe(1);
  });

  it("a budget of 0 anchors nothing", async () => {
    const a = await insert(receiptTo("BLACK_SWAN"));
    start({ dailyBudget: 0 });
    expect(await settled(a.alert_id)).toBe("not_applicable");
    expect(node.calls["sendTransaction"]).toBeUndefined();
  });

  it("wallet_drained when the fee payer cannot pay: caught by the balance check, or by the node's preflight", async () => {
    node.setBalance(payer.address, 4999n);
    const a = await insert(receiptTo("DEPEG"));
    start();
    expect(await settled(a.alert_id)).toBe("wallet_drained");
    expect(node.calls["sendTransaction"]).toBeUndefined();
    expect((await anchorById(store.db, a.alert_id))?.error).toMatch(/holds 4999 lamports/);
    await worker!.stop();

    // With no minimum of its own, the worker learns it from the node (InsufficientFundsForFee / AccountNotFound).
    const b = await insert(receiptTo("DEPEG"));
    start({ minBalanceLamports: 0n });
    expect(await settled(b.alert_id)).toBe("wallet_drained");
    expect(node.calls["sendTransaction"]).toBe(1);
    expect((await anchorById(store.db, b.alert_id))?.error).toMatch(/insufficient funds for fee/i);
    expect(node.landed()).toHaveLength(0);
  });

  it("retry_exhausted when every attempt's blockhash expires before it lands", async () => {
    node.dropSends(true);
    const a = await insert(receiptTo("DEPEG"));
    start({ maxAttempts: 3 });
    expect(await settled(a.alert_id, 20_000)).toBe("retry_exhausted");
    const row = await anchorById(store.db, a.alert_id);
    expect(row).toMatchObject({ status: "retry_exhausted", attempts: 3 });
    expect(row?.error).toMatch(/3 attempts failed; last: blockhash expired at block height/);
    expect(node.landed()).toHaveLength(0);
  });

  it("retry_exhausted when the node keeps refusing the blockhash", async () => {
    node.failSends(3, "blockhash_not_found");
    const a = await insert(receiptTo("CRITICAL"));
    start({ maxAttempts: 3 });
    expect(await settled(a.alert_id)).toBe("retry_exhausted");
    expect(node.calls["sendTransaction"]).toBe(3);
    expect((await anchorById(store.db, a.alert_id))?.error).toMatch(/Blockhash not found/);
  });

  it("rides out an unhealthy node and HTTP 503s, then lands the same transaction once", async () => {
    node.failSends(1, "node_unhealthy");
    node.failSends(1, "http_503");
    const a = await insert(receiptTo("DEPEG"));
    start({ maxAttempts: 2 });
    expect(await settled(a.alert_id)).toBe("committed");
    expect(node.landed()).toHaveLength(1);
    expect(node.calls["sendTransaction"]).toBeGreaterThanOrEqual(3);
    // The re-sends were the same signed bytes: one signature, one attempt.
    expect(await anchorById(store.db, a.alert_id)).toMatchObject({ attempts: 1, tx_sig: node.landed()[0]!.signature });
  });

  it("a transaction that lands but fails records nothing: the next attempt commits", async () => {
    node.failOnChain(1);
    const a = await insert(receiptTo("DEPEG"));
    start({ maxAttempts: 3 });
    expect(await settled(a.alert_id)).toBe("committed");
    const landed = node.landed();
    expect(landed.map((t) => t.err === null)).toEqual([false, true]);
    expect(await anchorById(store.db, a.alert_id)).toMatchObject({ attempts: 2, tx_sig: landed[1]!.signature });
    // Both paid a fee; only the second one records the memo.
    expect(node.balance(payer.address)).toBe(1_000_000n - 10_000n);
  });

  it("persistence_failed when the landed commit cannot be recorded", async () => {
    // The database refuses to mark any anchor committed (as a broken constraint or a full disk would).
    await sql`create or replace function refuse_commit() returns trigger language plpgsql as $$ begin raise exception 'disk full'; end $$`.execute(store.db);
    await sql`create trigger refuse_commit before update on anchors for each row when (new.status = 'committed') execute function refuse_commit()`.execute(store.db);
    try {
      const a = await insert(receiptTo("DEPEG"));
      start();
      expect(await settled(a.alert_id)).toBe("persistence_failed");
      const row = await anchorById(store.db, a.alert_id);
      expect(row?.status).toBe("persistence_failed");
      expect(row?.error).toMatch(new RegExp(`the commit ${node.landed()[0]!.signature} landed at slot \\d+ but could not be recorded: disk full`));
      expect(node.landed()).toHaveLength(1);
    } finally {
      await sql`drop trigger refuse_commit on anchors`.execute(store.db);
    }
  });

  it("a receipt left waiting behind an anchor row that already ended is settled from the row, nothing sent", async () => {
    const r = await insert(receiptTo("DEPEG"));
    const memo = anchorMemo({ methodology_version: r.methodology_version, alert_id: r.alert_id, receipt_sha256: r.receipt_sha256 });
    await reserveAnchor(store.db, { alertId: r.alert_id, memo, day: timestampToWire(Date.now()).slice(0, 10), budget: 10, now: Date.now(), ...DEAD_LEASE });
    await sql`update anchors set status = 'wallet_drained' where alert_id = ${r.alert_id}`.execute(store.db);
    start();
    expect(await settled(r.alert_id)).toBe("wallet_drained");
    expect(node.calls["sendTransaction"]).toBeUndefined();
  });

  it("after a restart, a recorded transaction is followed by its signature, never signed again", async () => {
    const r = await insert(receiptTo("DEPEG"));
    const memo = anchorMemo({ methodology_version: r.methodology_version, alert_id: r.alert_id, receipt_sha256: r.receipt_sha256 });
    // The previous process reserved, signed, recorded and sent, then died before it saw the confirmation.
    const res = await reserveAnchor(store.db, { alertId: r.alert_id, memo, day: timestampToWire(Date.now()).slice(0, 10), budget: 10, now: Date.now(), ...DEAD_LEASE });
    expect(res.kind).toBe("reserved");
    const rpc = solanaRpc(node.url);
    const signed = await signAnchorTransaction(payer, memo, await rpc.latestBlockhash());
    await recordSent(store.db, r.alert_id, { attempts: 1, signer: payer.address, txSig: signed.signature, wireTx: signed.wire, lastValidBlockHeight: signed.lastValidBlockHeight, now: Date.now(), owner: DEAD_LEASE.owner });
    await rpc.send(signed.wire);
    await waitFor(() => node.landed().length === 1, 5000, "the first process's transaction to land");

    start();
    expect(await settled(r.alert_id)).toBe("committed");
    expect(node.landed()).toHaveLength(1);
    expect((await onchainCommit(store.db, r.alert_id))?.tx_sig).toBe(signed.signature);
    expect(await anchorById(store.db, r.alert_id)).toMatchObject({ attempts: 1 });
    expect(await anchorBudgetUsed(store.db, timestampToWire(Date.now()).slice(0, 10))).toBe(1);
  });

  it("after a restart, a recorded transaction that never landed is replaced only once its blockhash expired", async () => {
    const r = await insert(receiptTo("DEPEG"));
    const memo = anchorMemo({ methodology_version: r.methodology_version, alert_id: r.alert_id, receipt_sha256: r.receipt_sha256 });
    await reserveAnchor(store.db, { alertId: r.alert_id, memo, day: timestampToWire(Date.now()).slice(0, 10), budget: 10, now: Date.now(), ...DEAD_LEASE });
    const rpc = solanaRpc(node.url);
    const lifetime = await rpc.latestBlockhash();
    const lost = await signAnchorTransaction(payer, memo, lifetime);
    await recordSent(store.db, r.alert_id, { attempts: 1, signer: payer.address, txSig: lost.signature, wireTx: lost.wire, lastValidBlockHeight: lost.lastValidBlockHeight, now: Date.now(), owner: DEAD_LEASE.owner });
    // It was never sent and its blockhash has expired since: re-sending it is refused, so a new one is signed.
    await waitFor(() => node.blockHeight() > lifetime.lastValidBlockHeight, 5000, "expiry");
    start();
    expect(await settled(r.alert_id)).toBe("committed");
    const landed = node.landed();
    expect(landed).toHaveLength(1);
    expect(landed[0]!.signature).not.toBe(lost.signature);
    expect(await anchorById(store.db, r.alert_id)).toMatchObject({ attempts: 2, tx_sig: landed[0]!.signature });
  });

  it("an alert under another live worker's lease is left alone until the lease lapses", async () => {
    const r = await insert(receiptTo("DEPEG"));
    const memo = anchorMemo({ methodology_version: r.methodology_version, alert_id: r.alert_id, receipt_sha256: r.receipt_sha256 });
    const until = Date.now() + 1500;
    await reserveAnchor(store.db, { alertId: r.alert_id, memo, day: timestampToWire(Date.now()).slice(0, 10), budget: 10, now: Date.now(), owner: "other-worker", leaseUntil: until });
    start();
    await new Promise((res) => setTimeout(res, 700));
    expect(await statusOf(r.alert_id)).toBe("not_committed_yet");
    expect(node.calls["sendTransaction"]).toBeUndefined();
    expect(await settled(r.alert_id)).toBe("committed");
    expect(Date.now()).toBeGreaterThanOrEqual(until);
    expect(node.landed()).toHaveLength(1);
  });

  it("two workers on one database anchor each receipt exactly once", async () => {
    const rs: Receipt[] = [];
    for (let i = 0; i < 6; i++) rs.push(await insert({ ...receiptTo(i % 2 === 0 ? "DEPEG" : "CRITICAL"), detected_at: `2026-06-12T10:0${i}:00.000Z` }));
    const second = startAnchorWorker({
      db: store.db,
      rpc: solanaRpc(node.url, { timeoutMs: 2000 }),
      signer: payer,
      clock: systemClock,
      dailyBudget: 10,
      pollMs: 30,
      confirmPollMs: 20,
      retryDelayMs: 10,
    });
    try {
      start();
      for (const r of rs) expect(await settled(r.alert_id, 20_000)).toBe("committed");
    } finally {
      await second.stop();
    }
    const memos = node.landed().map((t) => t.memos[0]!.split("|")[2]);
    expect(memos.sort()).toEqual(rs.map((r) => r.alert_id).sort());
    expect(worker!.stats.committed + second.stats.committed).toBe(6);
    expect(await anchorBudgetUsed(store.db, timestampToWire(Date.now()).slice(0, 10))).toBe(6);
  });

  it("the generated fee payer is stored once and reused", async () => {
    const a = await storedFeePayer(store.db, Date.now(), testSecretBox());
    const b = await storedFeePayer(store.db, Date.now(), testSecretBox());
    expect(b.address).toBe(a.address);
    const row = await sql<{ n: string }>`select count(*)::text as n from anchor_keys`.execute(store.db);
    expect(row.rows[0]!.n).toBe("1");
  });
});
