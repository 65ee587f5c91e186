/**
 * The service's webhook signing keys (issue 6): the stored keys when one is active, else a new active key generated
 * and persisted before anything signs, so the first start creates the key and every later start signs with the same
 * `kid`. Every change of the stored set (the first key, a rotation) happens under one advisory lock, so two
 * processes starting on an empty database, or rotating at once, never end with two active keys or with one process
 * signing with a key the other dropped. Holds the live set in memory for the worker (`active()`) and for
 * `/v1/meta/webhook-keys` (`publicList()`); `refresh()` re-reads it after another process rotated.
 */
import type { EpochMs } from "../methodology/index.ts";
import { loadSigningKeys, saveSigningKeys, withSigningKeysLock, type Executor } from "../store/index.ts";
import { activeKey, assertSigningKey, ensureActiveKey, publicKeyList, rotate, type WebhookKeyWire, type WebhookSigningKey } from "./signing-keys.ts";

export interface KeyRing {
  /** The key that signs now. */
  active(): WebhookSigningKey;
  /** Body of `GET /v1/meta/webhook-keys` at `now`: active first, then retiring keys still in force. */
  publicList(now: EpochMs): { keys: WebhookKeyWire[] };
  /**
   * Rotates the stored set (new active key, the previous one retiring for 7 days), as stored now, whatever this
   * process last read; persists it and adopts it. Returns the new active key's id.
   */
  rotate(now: EpochMs): Promise<string>;
  /** Re-reads the stored set (another process may have rotated); true when it changed. */
  refresh(now: EpochMs): Promise<boolean>;
}

function sameSet(a: readonly WebhookSigningKey[], b: readonly WebhookSigningKey[]): boolean {
  return a.length === b.length && a.every((k) => b.some((o) => o.kid === k.kid && o.status === k.status && o.retires_at === k.retires_at));
}

async function loadChecked(db: Executor): Promise<WebhookSigningKey[]> {
  const stored = (await loadSigningKeys(db)) as WebhookSigningKey[];
  for (const k of stored) assertSigningKey(k);
  return stored;
}

/** The stored set with an active key, created (and persisted) under the lock when there is none. */
function ensureStored(db: Executor, now: EpochMs): Promise<WebhookSigningKey[]> {
  return withSigningKeysLock(db, async (trx) => {
    const stored = await loadChecked(trx);
    const keys = ensureActiveKey(stored, now);
    if (!sameSet(keys, stored)) await saveSigningKeys(trx, keys);
    return keys;
  });
}

/** Loads (and on first start creates and persists) the signing keys. Throws when a stored key is corrupt. */
export async function openKeyRing(db: Executor, now: EpochMs): Promise<KeyRing> {
  let keys = await ensureStored(db, now);
  return {
    active: () => activeKey(keys),
    publicList: (at) => publicKeyList(keys, at),
    rotate: async (at) => {
      keys = await withSigningKeysLock(db, async (trx) => {
        const next = rotate(ensureActiveKey(await loadChecked(trx), at), at);
        await saveSigningKeys(trx, next);
        return next;
      });
      return activeKey(keys).kid;
    },
    refresh: async (at) => {
      const next = await ensureStored(db, at);
      const changed = !sameSet(next, keys);
      keys = next;
      return changed;
    },
  };
}
