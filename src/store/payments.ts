/**
 * The x402 payment ledger (migrations 0007 and 0008): a payment is claimed once, before it is verified or settled, and keeps
 * its outcome. The table is declared here, next to the only code that touches it.
 */
import type { ColumnType, Kysely, Selectable } from "kysely";
import type { EpochMs } from "../methodology/index.ts";
import { toEnum, toInt, toMs, tsParam } from "./normalise.ts";
import type { Executor, Timestamptz } from "./schema.ts";

/**
 * Life of a payment row: `claimed` while one request verifies it and does the work; `settling` once the answer is
 * stored and the settlement is being sent; then `settled` (charged: the answer is owed and not yet handed out),
 * `served` (charged, the answer handed to the transport), `refused` (verification refused it), `failed` (the
 * settlement transaction failed: nothing transferred) or `unconfirmed` (sent, but not confirmed in time: it may
 * still land). A claim given back (nothing charged) is deleted.
 */
export const PAYMENT_STATUSES = ["claimed", "settling", "settled", "served", "refused", "failed", "unconfirmed"] as const;
export type PaymentStatus = (typeof PAYMENT_STATUSES)[number];

interface PaymentsTable {
  key: string;
  tool: string;
  network: string;
  amount: ColumnType<string | number | bigint, string, string>;
  status: string;
  payer: string | null;
  tx_sig: string | null;
  reason: string | null;
  request: string | null;
  answer: string | null;
  payload: string | null;
  requirements: string | null;
  settlement: string | null;
  holder: string | null;
  created_at: Timestamptz;
  updated_at: Timestamptz;
}

type PaymentDb = Kysely<Executor extends Kysely<infer D> ? D & { x402_payments: PaymentsTable } : never>;
const tables = (db: Executor): PaymentDb => db.withTables<{ x402_payments: PaymentsTable }>() as unknown as PaymentDb;

/** One payment as stored. `amount` is in the asset's atomic units (micro-USDC). */
export interface PaymentRecord {
  readonly key: string;
  readonly tool: string;
  readonly network: string;
  readonly amount: bigint;
  readonly status: PaymentStatus;
  readonly payer: string | null;
  readonly tx_sig: string | null;
  readonly reason: string | null;
  /** SHA-256 (hex) of the request the payment bought, once its answer is stored. */
  readonly request: string | null;
  /** The answer (JSON text), kept for the answer window once the work is done. */
  readonly answer: string | null;
  /** The PaymentPayload and the PaymentRequirements it was verified against (JSON text). */
  readonly payload: string | null;
  readonly requirements: string | null;
  /** The SettleResponse of a settled payment (JSON text). */
  readonly settlement: string | null;
  /** The process instance holding a `claimed` or `settling` row. */
  readonly holder: string | null;
  readonly created_at: EpochMs;
  readonly updated_at: EpochMs;
}

function fromRow(r: Selectable<PaymentsTable>): PaymentRecord {
  return {
    key: r.key,
    tool: r.tool,
    network: r.network,
    amount: BigInt(r.amount),
    status: toEnum(r.status, PAYMENT_STATUSES, "x402_payments.status"),
    payer: r.payer,
    tx_sig: r.tx_sig,
    reason: r.reason,
    request: r.request,
    answer: r.answer,
    payload: r.payload,
    requirements: r.requirements,
    settlement: r.settlement,
    holder: r.holder,
    created_at: toMs(r.created_at, "x402_payments.created_at"),
    updated_at: toMs(r.updated_at, "x402_payments.updated_at"),
  };
}

/** Claims a payment for one call. False when it is known already (used, refused, or in use right now). */
export async function claimPayment(db: Executor, p: { key: string; tool: string; network: string; amount: bigint; at: EpochMs; holder: string }): Promise<boolean> {
  const rows = await tables(db)
    .insertInto("x402_payments")
    .values({ key: p.key, tool: p.tool, network: p.network, amount: p.amount.toString(), status: "claimed", holder: p.holder, created_at: tsParam(p.at), updated_at: tsParam(p.at) })
    .onConflict((oc) => oc.column("key").doNothing())
    .returning("key")
    .execute();
  return rows.length === 1;
}

/**
 * Gives a claim back (nothing was charged): the same payment may be presented again. Only a `claimed` row goes, or a
 * `settling` one whose settlement is known not to have been sent (or never to land).
 */
export async function releasePayment(db: Executor, key: string, from: "claimed" | "settling" = "claimed"): Promise<boolean> {
  const rows = await tables(db).deleteFrom("x402_payments").where("key", "=", key).where("status", "=", from).returning("key").execute();
  return rows.length === 1;
}

/**
 * Stores the answer of a claimed payment before its settlement is sent (`claimed` -> `settling`): from here on a
 * crash leaves what the next start needs to finish the settlement and owe the answer. False if the row is not this
 * claim any more.
 */
export async function recordAnswer(
  db: Executor,
  key: string,
  a: { request: string; answer: string; payload: string; requirements: string; payer: string; tx_sig: string | null; at: EpochMs },
): Promise<boolean> {
  const rows = await tables(db)
    .updateTable("x402_payments")
    .set({ status: "settling", request: a.request, answer: a.answer, payload: a.payload, requirements: a.requirements, payer: a.payer, tx_sig: a.tx_sig, updated_at: tsParam(a.at) })
    .where("key", "=", key)
    .where("status", "=", "claimed")
    .returning("key")
    .execute();
  return rows.length === 1;
}

/** A settled payment's answer handed to the transport (`settled` -> `served`). */
export async function markServed(db: Executor, key: string, at: EpochMs): Promise<void> {
  await tables(db).updateTable("x402_payments").set({ status: "served", updated_at: tsParam(at) }).where("key", "=", key).where("status", "=", "settled").execute();
}

/** Rows a crash may have left unfinished: `claimed` or `settling`, last touched before `before`, oldest first. */
export async function openPayments(db: Executor, before: EpochMs, limit = 100): Promise<PaymentRecord[]> {
  const rows = await tables(db)
    .selectFrom("x402_payments")
    .selectAll()
    .where("status", "in", ["claimed", "settling"])
    .where("updated_at", "<", tsParam(before))
    .orderBy("updated_at")
    .limit(limit)
    .execute();
  return rows.map(fromRow);
}

/** Rows of other process instances (`holder`) that are `claimed` or `settling`: what a start reconciles. */
export async function openPaymentsHeldElsewhere(db: Executor, holder: string, limit = 100): Promise<PaymentRecord[]> {
  const rows = await tables(db)
    .selectFrom("x402_payments")
    .selectAll()
    .where("status", "in", ["claimed", "settling"])
    .where((eb) => eb.or([eb("holder", "is", null), eb("holder", "!=", holder)]))
    .orderBy("updated_at")
    .limit(limit)
    .execute();
  return rows.map(fromRow);
}

/** Clears the answers (and payloads) of finished payments claimed before `before`: their answer window is over. */
export async function clearAnswers(db: Executor, before: EpochMs): Promise<number> {
  const rows = await tables(db)
    .updateTable("x402_payments")
    .set({ answer: null, payload: null, requirements: null })
    .where("answer", "is not", null)
    .where("status", "not in", ["claimed", "settling"])
    .where("created_at", "<", tsParam(before))
    .returning("key")
    .execute();
  return rows.length;
}

/** How many settled payments still owe their answer (settled, not handed out), claimed since `since`. */
export async function countOwed(db: Executor, since: EpochMs): Promise<number> {
  const r = await tables(db)
    .selectFrom("x402_payments")
    .select((eb) => eb.fn.countAll().as("n"))
    .where("status", "=", "settled")
    .where("answer", "is not", null)
    .where("created_at", ">=", tsParam(since))
    .executeTakeFirstOrThrow();
  return toInt(r.n, "count");
}

/** Records the outcome of a claimed (or settling) payment; a row already finished is left as it is. */
export async function finishPayment(
  db: Executor,
  key: string,
  outcome: { status: Exclude<PaymentStatus, "claimed" | "settling" | "served">; at: EpochMs; payer?: string | null; tx_sig?: string | null; reason?: string | null; settlement?: string },
): Promise<void> {
  await tables(db)
    .updateTable("x402_payments")
    .set({
      status: outcome.status,
      updated_at: tsParam(outcome.at),
      ...(outcome.payer === undefined ? {} : { payer: outcome.payer }),
      ...(outcome.tx_sig === undefined ? {} : { tx_sig: outcome.tx_sig }),
      ...(outcome.reason === undefined ? {} : { reason: outcome.reason }),
      ...(outcome.settlement === undefined ? {} : { settlement: outcome.settlement }),
      // A payment that did not settle owes nothing: its stored answer goes.
      ...(outcome.status === "settled" ? {} : { answer: null }),
    })
    .where("key", "=", key)
    .where("status", "in", ["claimed", "settling"])
    .execute();
}

export async function paymentByKey(db: Executor, key: string): Promise<PaymentRecord | undefined> {
  const r = await tables(db).selectFrom("x402_payments").selectAll().where("key", "=", key).executeTakeFirst();
  return r === undefined ? undefined : fromRow(r);
}
