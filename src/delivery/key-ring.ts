/**
 * The service's webhook signing keys, loaded once at start (issue 6): the stored keys when one is active, else a new
 * active key generated and persisted before anything signs, so the first start creates the key and every later start
 * signs with the same `kid`. Holds the live set in memory for the worker (`active()`) and for
 * `/v1/meta/webhook-keys` (`publicList()`).
 */
import type { EpochMs } from "../methodology/index.ts";
import { loadSigningKeys, saveSigningKeys, type Executor } from "../store/index.ts";
import { activeKey, assertSigningKey, ensureActiveKey, publicKeyList, rotate, type WebhookKeyWire, type WebhookSigningKey } from "./signing-keys.ts";

export interface KeyRing {
  /** The key that signs now. */
  active(): WebhookSigningKey;
  /** Body of `GET /v1/meta/webhook-keys` at `now`: active first, then retiring keys still in force. */
  publicList(now: EpochMs): { keys: WebhookKeyWire[] };
  /** Rotates (new active key, the old one retiring 7 days) and persists the new set. */
  rotate(now: EpochMs): Promise<void>;
}

function sameSet(a: readonly WebhookSigningKey[], b: readonly WebhookSigningKey[]): boolean {
  return a.length === b.length && a.every((k) => b.some((o) => o.kid === k.kid && o.status === k.status && o.retires_at === k.retires_at));
}

/** Loads (and on first start creates and persists) the signing keys. Throws when a stored key is corrupt. */
export async function openKeyRing(db: Executor, now: EpochMs): Promise<KeyRing> {
  const stored = (await loadSigningKeys(db)) as WebhookSigningKey[];
  for (const k of stored) assertSigningKey(k);
  let keys = ensureActiveKey(stored, now);
  if (!sameSet(keys, stored)) await saveSigningKeys(db, keys);
  return {
    active: () => activeKey(keys),
    publicList: (at) => publicKeyList(keys, at),
    rotate: async (at) => {
      const next = rotate(keys, at);
      await saveSigningKeys(db, next);
      keys = next;
    },
  };
}
