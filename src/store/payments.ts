/**
 * The x402 payment ledger (migration 0007): a payment is claimed once, before it is verified or settled, and keeps
 * its outcome. The table is declared here, next to the only code that touches it.
 */
import type { ColumnType, Kysely, Selectable } from "kysely";
import type { EpochMs } from "../methodology/index.ts";
import { toEnum, toMs, tsParam } from "./normalise.ts";
import type { Executor, Timestamptz } from "./schema.ts";

/**
 * Life of a payment row: `claimed` while one request verifies and uses it; then `settled` (charged, the result went
 * out), `refused` (verification refused it), `failed` (the settlement transaction failed: nothing transferred) or
 * `unconfirmed` (sent, but not confirmed in time: it may still land).
 */
export const PAYMENT_STATUSES = ["claimed", "settled", "refused", "failed", "unconfirmed"] as const;
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
    created_at: toMs(r.created_at, "x402_payments.created_at"),
    updated_at: toMs(r.updated_at, "x402_payments.updated_at"),
  };
}

/** Claims a payment for one call. False when it is known already (used, refused, or in use right now). */
export async function claimPayment(db: Executor, p: { key: string; tool: string; network: string; amount: bigint; at: EpochMs }): Promise<boolean> {
  const rows = await tables(db)
    .insertInto("x402_payments")
    .values({ key: p.key, tool: p.tool, network: p.network, amount: p.amount.toString(), status: "claimed", created_at: tsParam(p.at), updated_at: tsParam(p.at) })
    .onConflict((oc) => oc.column("key").doNothing())
    .returning("key")
    .execute();
  return rows.length === 1;
}

/** Gives a claim back (nothing was charged): the same payment may be presented again. Only a `claimed` row goes. */
export async function releasePayment(db: Executor, key: string): Promise<boolean> {
  const rows = await tables(db).deleteFrom("x402_payments").where("key", "=", key).where("status", "=", "claimed").returning("key").execute();
  return rows.length === 1;
}

/** Records the outcome of a claimed payment. */
export async function finishPayment(
  db: Executor,
  key: string,
  outcome: { status: Exclude<PaymentStatus, "claimed">; at: EpochMs; payer?: string | null; tx_sig?: string | null; reason?: string | null },
): Promise<void> {
  await tables(db)
    .updateTable("x402_payments")
    .set({
      status: outcome.status,
      updated_at: tsParam(outcome.at),
      ...(outcome.payer === undefined ? {} : { payer: outcome.payer }),
      ...(outcome.tx_sig === undefined ? {} : { tx_sig: outcome.tx_sig }),
      ...(outcome.reason === undefined ? {} : { reason: outcome.reason }),
    })
    .where("key", "=", key)
    .execute();
}

export async function paymentByKey(db: Executor, key: string): Promise<PaymentRecord | undefined> {
  const r = await tables(db).selectFrom("x402_payments").selectAll().where("key", "=", key).executeTakeFirst();
  return r === undefined ? undefined : fromRow(r);
}
