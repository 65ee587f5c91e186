/**
 * The service's webhook signing keys (issue 6): the stored keys when one is active, else a new active key generated
 * and persisted before anything signs, so the first start creates the key and every later start signs with the same
 * `kid`. Every change of the stored set (the first key, a rotation) happens under one advisory lock, so two
 * processes starting on an empty database, or rotating at once, never end with two active keys or with one process
 * signing with a key the other dropped. Holds the live set in memory for the worker (`active()`) and for
 * `/v1/meta/webhook-keys` (`publicList()`); `refresh()` re-reads it after another process rotated.
 *
 * Private keys are stored sealed under the deployment's secrets key (src/secret-box.ts, issue 14), so a copy of the
 * database does not sign. A key stored in plaintext by an earlier build is sealed in place on the first start with a
 * secrets key, keeping its kid and public key (receivers keep verifying). A key sealed under another secrets key stops
 * the start with a SecretsKeyError: never a silently generated new key.
 */
import type { EpochMs } from "../methodology/index.ts";
import { isSealed, type SecretBox } from "../secret-box.ts";
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

/** What a sealed private key is bound to (the GCM associated data): this key id's webhook signing key. */
const sealContext = (kid: string): string => `webhook-signing-key:${kid}`;

/** The stored keys with their private keys opened; `plaintext`: some were stored unsealed (an earlier build). */
async function loadChecked(db: Executor, box: SecretBox): Promise<{ keys: WebhookSigningKey[]; plaintext: boolean }> {
  let plaintext = false;
  const keys = ((await loadSigningKeys(db)) as WebhookSigningKey[]).map((k) => {
    if (isSealed(k.private_key)) return { ...k, private_key: box.open(k.private_key, sealContext(k.kid)) };
    plaintext = true;
    return k;
  });
  for (const k of keys) assertSigningKey(k);
  return { keys, plaintext };
}

/** Persists a key set with every private key sealed. */
function saveSealed(db: Executor, box: SecretBox, keys: readonly WebhookSigningKey[]): Promise<void> {
  return saveSigningKeys(db, keys.map((k) => ({ ...k, private_key: box.seal(k.private_key, sealContext(k.kid)) })));
}

/** The stored set with an active key, created (and persisted) under the lock when there is none; plaintext sealed. */
function ensureStored(db: Executor, now: EpochMs, box: SecretBox): Promise<WebhookSigningKey[]> {
  return withSigningKeysLock(db, async (trx) => {
    const stored = await loadChecked(trx, box);
    const keys = ensureActiveKey(stored.keys, now);
    if (stored.plaintext || !sameSet(keys, stored.keys)) await saveSealed(trx, box, keys);
    return keys;
  });
}

/**
 * Loads (and on first start creates and persists) the signing keys, sealed under `box`. Throws when a stored key is
 * corrupt, or sealed under another secrets key (SecretsKeyError).
 */
export async function openKeyRing(db: Executor, now: EpochMs, box: SecretBox): Promise<KeyRing> {
  let keys = await ensureStored(db, now, box);
  return {
    active: () => activeKey(keys),
    publicList: (at) => publicKeyList(keys, at),
    rotate: async (at) => {
      keys = await withSigningKeysLock(db, async (trx) => {
        const next = rotate(ensureActiveKey((await loadChecked(trx, box)).keys, at), at);
        await saveSealed(trx, box, next);
        return next;
      });
      return activeKey(keys).kid;
    },
    refresh: async (at) => {
      const next = await ensureStored(db, at, box);
      const changed = !sameSet(next, keys);
      keys = next;
      return changed;
    },
  };
}
