/**
 * Private keys at rest (issue 14): the webhook signing keys and the generated anchor fee payer are stored sealed with
 * AES-256-GCM under the deployment's secrets key (`SECRETS_KEY`, or `DATA_DIR/secrets.key` on embedded defaults), so
 * a copied database, dump or backup does not sign.
 *
 * Envelope, one line of text (fits the existing text columns): `peg-sealed:v1:<key id>:<iv>:<ciphertext>:<tag>`, the
 * last three base64url. `v1` is the format (AES-256-GCM, 96-bit random IV, 128-bit tag); a later format gets a new
 * version and this code refuses versions it does not know. `<key id>` names the secrets key that sealed it (16 hex
 * digits of a SHA-256 over a label and the key), so a wrong key is reported as a wrong key, not as corruption. The
 * GCM associated data is the envelope's context (`webhook-signing-key:<kid>`, `anchor-fee-payer:<address>`): a sealed
 * value moved to another row does not open.
 */
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from "node:crypto";

/** Bytes of a secrets key (AES-256). */
export const SECRETS_KEY_BYTES = 32;

const PREFIX = "peg-sealed:";
const VERSION = "v1";
const IV_BYTES = 12;
const TAG_BYTES = 16;
const B64URL = /^[A-Za-z0-9_-]+$/;

export const SECRETS_ERROR_CODES = {
  /** DATABASE_URL is set and SECRETS_KEY is not. */
  missing: "secrets_key_missing",
  /** The stored secrets were sealed under another key than the one given. */
  wrong: "secrets_key_wrong",
  /** DATA_DIR/secrets.key is unreadable or not a key. */
  unreadable: "secrets_key_unreadable",
  /** A sealed value is malformed, of an unknown version, or fails authentication under the right key. */
  corrupt: "sealed_secret_corrupt",
} as const;

export type SecretsErrorCode = (typeof SECRETS_ERROR_CODES)[keyof typeof SECRETS_ERROR_CODES];

/** A secrets-key problem. Never retried: the operator has to supply the right key (the message says how). */
export class SecretsKeyError extends Error {
  constructor(
    readonly code: SecretsErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "SecretsKeyError";
  }
}

/**
 * The 32 key bytes of a `SECRETS_KEY` text: 64 hex digits, or base64 / base64url (padding optional) of 32 bytes.
 * Null for anything else.
 */
export function parseSecretsKey(text: string): Buffer | null {
  const t = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(t)) return Buffer.from(t, "hex");
  if (!/^[A-Za-z0-9+/_-]{43}={0,1}$/.test(t)) return null;
  const bytes = Buffer.from(t.replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_"), "base64url");
  return bytes.length === SECRETS_KEY_BYTES ? bytes : null;
}

/** A new random secrets key. */
export function generateSecretsKey(): Buffer {
  return randomBytes(SECRETS_KEY_BYTES);
}

/** The id of a key as envelopes carry it: not the key, and not usable to recover it. */
export function secretsKeyId(key: Uint8Array): string {
  return createHash("sha256").update("peg-oracle secrets key id\0").update(key).digest("hex").slice(0, 16);
}

/** True when `text` is a sealed envelope (of any version); false for legacy plaintext. */
export function isSealed(text: string): boolean {
  return text.startsWith(PREFIX);
}

/** Seals and opens secrets under one key. */
export interface SecretBox {
  /** Id of this box's key (see `secretsKeyId`). */
  readonly keyId: string;
  /** Seals `plain` for `context` (what the secret is and whose: e.g. `webhook-signing-key:<kid>`). */
  seal(plain: string, context: string): string;
  /** Opens a sealed value for `context`. Throws a SecretsKeyError: `secrets_key_wrong` or `sealed_secret_corrupt`. */
  open(sealed: string, context: string): string;
  /**
   * A 32-byte key for `purpose` (e.g. `http-cursor-v1`), derived from the secrets key with HKDF-SHA256: every process
   * of a deployment derives the same key, and a derived key tells nothing of the secrets key or of another purpose's.
   */
  derive(purpose: string): Uint8Array;
}

export function secretBox(key: Uint8Array): SecretBox {
  if (key.length !== SECRETS_KEY_BYTES) throw new RangeError(`a secrets key is ${SECRETS_KEY_BYTES} bytes, got ${key.length}`);
  const k = Buffer.from(key); // a private copy: the caller may wipe its buffer
  const keyId = secretsKeyId(k);
  const corrupt = (context: string, why: string) => new SecretsKeyError(SECRETS_ERROR_CODES.corrupt, `the sealed ${context} ${why}`);
  return {
    keyId,
    derive: (purpose) => new Uint8Array(hkdfSync("sha256", k, Buffer.alloc(0), `peg-oracle derived key\0${purpose}`, SECRETS_KEY_BYTES)),
    seal: (plain, context) => {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv("aes-256-gcm", k, iv, { authTagLength: TAG_BYTES });
      cipher.setAAD(Buffer.from(context, "utf8"));
      const ct = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
      return [PREFIX + VERSION, keyId, iv.toString("base64url"), ct.toString("base64url"), cipher.getAuthTag().toString("base64url")].join(":");
    },
    open: (sealed, context) => {
      if (!isSealed(sealed)) throw corrupt(context, "is not a sealed value");
      const parts = sealed.slice(PREFIX.length).split(":");
      if (parts[0] !== VERSION) throw corrupt(context, `has format ${JSON.stringify(parts[0]?.slice(0, 8))}, which this build does not know (it knows ${VERSION})`);
      const [, id, ivText, ctText, tagText] = parts;
      if (parts.length !== 5 || !/^[0-9a-f]{16}$/.test(id!) || ![ivText, ctText, tagText].every((p) => B64URL.test(p!))) throw corrupt(context, "is malformed");
      if (id !== keyId) {
        throw new SecretsKeyError(
          SECRETS_ERROR_CODES.wrong,
          `the stored ${context} was sealed under secrets key ${id}, but the configured secrets key is ${keyId}: ` +
            "start with the SECRETS_KEY (or DATA_DIR/secrets.key) this store was created with",
        );
      }
      const iv = Buffer.from(ivText!, "base64url");
      const tag = Buffer.from(tagText!, "base64url");
      if (iv.length !== IV_BYTES || tag.length !== TAG_BYTES) throw corrupt(context, "is malformed");
      const decipher = createDecipheriv("aes-256-gcm", k, iv, { authTagLength: TAG_BYTES });
      decipher.setAAD(Buffer.from(context, "utf8"));
      decipher.setAuthTag(tag);
      try {
        return Buffer.concat([decipher.update(Buffer.from(ctText!, "base64url")), decipher.final()]).toString("utf8");
      } catch {
        throw corrupt(context, "fails authentication (altered, or moved from another row)");
      }
    },
  };
}
