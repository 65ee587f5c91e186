/**
 * The webhook signing keys (issue 6, addendum A "Meta"): Ed25519 key pairs, one `active` key that signs, and after a
 * rotation the previous key `retiring` for 7 days, still listed by `/v1/meta/webhook-keys` so receivers holding
 * deliveries or cached key lists from before the rotation keep verifying. Pure functions over plain, JSON-storable
 * records; the caller persists them and supplies the time.
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from "node:crypto";
import { timestampToWire, type EpochMs } from "../methodology/index.ts";
import { KEY_RETIRE_MS } from "./policy.ts";

export type KeyStatus = "active" | "retiring";

/** One signing key as stored. `private_key` is a secret: never log or serve it. */
export interface WebhookSigningKey {
  /** Key id: the first 16 hex digits of SHA-256 over the raw public key. Sent as `x-svc-key-id`. */
  readonly kid: string;
  readonly alg: "Ed25519";
  readonly status: KeyStatus;
  readonly created_at: EpochMs;
  /** For a `retiring` key: the instant it stops being listed and trusted (exclusive); null while active. */
  readonly retires_at: EpochMs | null;
  /** Base64 (standard alphabet, padded) of the 32-byte raw Ed25519 public key, as the key list serves it. */
  readonly public_key: string;
  /** PKCS#8 PEM of the private key. */
  readonly private_key: string;
}

/** One element of `keys` in `GET /v1/meta/webhook-keys` (addendum A; the `WebhookKey` schema). */
export interface WebhookKeyWire {
  readonly kid: string;
  readonly alg: "Ed25519";
  readonly public_key: string;
  readonly created_at: string;
  readonly status: KeyStatus;
}

/** Raw 32-byte public key of an Ed25519 KeyObject, via its JWK `x` (base64url). */
export function rawPublicKey(key: KeyObject): Buffer {
  const jwk = key.export({ format: "jwk" });
  if (jwk.crv !== "Ed25519" || typeof jwk.x !== "string") throw new TypeError("not an Ed25519 key");
  return Buffer.from(jwk.x, "base64url");
}

/** An Ed25519 public KeyObject from the base64 raw key the list serves; throws on anything else. */
export function publicKeyFromBase64(publicKey: string): KeyObject {
  const raw = Buffer.from(publicKey, "base64");
  if (raw.length !== 32 || raw.toString("base64") !== publicKey) throw new TypeError("public_key must be base64 of 32 bytes");
  return createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: raw.toString("base64url") }, format: "jwk" });
}

function kidOf(raw: Buffer): string {
  return createHash("sha256").update(raw).digest("hex").slice(0, 16);
}

/** A new active signing key created at `now`. */
export function generateSigningKey(now: EpochMs): WebhookSigningKey {
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  const raw = rawPublicKey(publicKey);
  return {
    kid: kidOf(raw),
    alg: "Ed25519",
    status: "active",
    created_at: now,
    retires_at: null,
    public_key: raw.toString("base64"),
    private_key: privateKey.export({ format: "pem", type: "pkcs8" }).toString(),
  };
}

/**
 * Checks a stored key before use: the private key is Ed25519 and matches `public_key` and `kid`, and the status
 * fields agree. Throws a TypeError naming the problem (a corrupted or hand-edited store must not sign).
 */
export function assertSigningKey(key: WebhookSigningKey): void {
  const priv = createPrivateKey(key.private_key);
  if (priv.asymmetricKeyType !== "ed25519") throw new TypeError(`key ${key.kid}: not an Ed25519 private key`);
  const raw = rawPublicKey(createPublicKey(priv));
  if (raw.toString("base64") !== key.public_key) throw new TypeError(`key ${key.kid}: public_key does not match the private key`);
  if (kidOf(raw) !== key.kid) throw new TypeError(`key ${key.kid}: kid does not match the public key`);
  if ((key.status === "active") !== (key.retires_at === null)) throw new TypeError(`key ${key.kid}: status and retires_at disagree`);
}

/** Keys still in force at `now`: the active one and retiring ones before their `retires_at`. */
export function liveKeys(keys: readonly WebhookSigningKey[], now: EpochMs): WebhookSigningKey[] {
  return keys.filter((k) => k.status === "active" || (k.retires_at !== null && now < k.retires_at));
}

/** The key that signs. Throws when there is not exactly one active key. */
export function activeKey(keys: readonly WebhookSigningKey[]): WebhookSigningKey {
  const active = keys.filter((k) => k.status === "active");
  if (active.length !== 1) throw new Error(`expected exactly one active webhook signing key, found ${active.length}`);
  return active[0]!;
}

/** First start: the stored keys when there is an active one, else a new active key (added to the live ones). */
export function ensureActiveKey(keys: readonly WebhookSigningKey[], now: EpochMs): WebhookSigningKey[] {
  const live = liveKeys(keys, now);
  return live.some((k) => k.status === "active") ? live : [generateSigningKey(now), ...live];
}

/**
 * Rotation: a new active key; the previous active key becomes `retiring` until `now + 7 days`; keys already
 * retiring keep their own deadline; expired ones are dropped. Newest first.
 */
export function rotate(keys: readonly WebhookSigningKey[], now: EpochMs): WebhookSigningKey[] {
  const rest = liveKeys(keys, now).map((k): WebhookSigningKey =>
    k.status === "active" ? { ...k, status: "retiring", retires_at: now + KEY_RETIRE_MS } : k,
  );
  return [generateSigningKey(now), ...rest];
}

/** The body of `GET /v1/meta/webhook-keys` at `now`: the active key first, then retiring keys, newest first. */
export function publicKeyList(keys: readonly WebhookSigningKey[], now: EpochMs): { keys: WebhookKeyWire[] } {
  const live = liveKeys(keys, now).sort(
    (a, b) => Number(b.status === "active") - Number(a.status === "active") || b.created_at - a.created_at,
  );
  return {
    keys: live.map((k) => ({
      kid: k.kid,
      alg: "Ed25519",
      public_key: k.public_key,
      created_at: timestampToWire(k.created_at),
      status: k.status,
    })),
  };
}
