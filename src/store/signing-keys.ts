/** The webhook signing keys as stored (issue 6), and the lock that serialises changes of the key set. */
import { sql } from "kysely";
import { atomically, toEnum, toMs, toMsOrNull, tsParam, tsParamOrNull } from "./normalise.ts";
import type { Executor } from "./schema.ts";
import type { EpochMs } from "../methodology/index.ts";

/** A webhook signing key as stored (the same shape as delivery's `WebhookSigningKey`; the store does not import it). */
export interface SigningKeyRecord {
  readonly kid: string;
  readonly alg: "Ed25519";
  readonly status: "active" | "retiring";
  readonly created_at: EpochMs;
  readonly retires_at: EpochMs | null;
  readonly public_key: string;
  readonly private_key: string;
}

export async function loadSigningKeys(db: Executor): Promise<SigningKeyRecord[]> {
  const rows = await db.selectFrom("signing_keys").selectAll().orderBy("created_at").orderBy("kid").execute();
  return rows.map((r) => ({
    kid: r.kid,
    alg: toEnum(r.alg, ["Ed25519"] as const, "signing_keys.alg"),
    status: toEnum(r.status, ["active", "retiring"] as const, "signing_keys.status"),
    created_at: toMs(r.created_at, "signing_keys.created_at"),
    retires_at: toMsOrNull(r.retires_at, "signing_keys.retires_at"),
    public_key: r.public_key,
    private_key: r.private_key,
  }));
}

/** Any number, fixed: the advisory lock that serialises every change of the signing-key set across processes. */
const SIGNING_KEYS_LOCK = 0x7065_6b65; // "peke"

/**
 * Runs `fn` in one transaction holding the signing keys' advisory lock, so two processes that start on an empty
 * database (or rotate at once) change the key set one after the other: the second sees the first's key.
 */
export function withSigningKeysLock<T>(db: Executor, fn: (trx: Executor) => Promise<T>): Promise<T> {
  return atomically(db, async (trx) => {
    await sql`select pg_advisory_xact_lock(${SIGNING_KEYS_LOCK})`.execute(trx);
    return fn(trx);
  });
}

/**
 * Persists a key set as `rotate`/`ensureActiveKey` return it: upserts every key (status and retirement may change;
 * the key itself never does, but its stored form may: a plaintext private key of an earlier build is replaced by its
 * sealed form, src/delivery/key-ring.ts) and deletes the ones no longer in the set, in one transaction.
 */
export async function saveSigningKeys(db: Executor, keys: readonly SigningKeyRecord[]): Promise<void> {
  await atomically(db, async (trx) => {
    const kids = keys.map((k) => k.kid);
    let del = trx.deleteFrom("signing_keys");
    if (kids.length > 0) del = del.where("kid", "not in", kids);
    await del.execute();
    for (const k of keys) {
      await trx
        .insertInto("signing_keys")
        .values({ ...k, created_at: tsParam(k.created_at), retires_at: tsParamOrNull(k.retires_at) })
        .onConflict((oc) => oc.column("kid").doUpdateSet({ status: k.status, retires_at: tsParamOrNull(k.retires_at), private_key: k.private_key }))
        .execute();
    }
  });
}
