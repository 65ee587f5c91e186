/**
 * The fee payer that signs anchor transactions. Either a Solana CLI keypair file (`ANCHOR_KEYPAIR`: a JSON array of
 * 64 bytes, seed then public key) or, when none is configured, a key generated on first start and kept in the store
 * (`anchor_keys`), so every later start signs with the same address. The address is what integrators put on their
 * signer allow-list. The stored seed is sealed under the secrets key (src/secret-box.ts, issue 14): a copied database
 * does not sign. A seed an earlier build stored in plaintext is sealed in place at the next start (same address); a
 * seed sealed under another secrets key stops the start (SecretsKeyError), never a new fee payer.
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { createKeyPairSignerFromBytes, createKeyPairSignerFromPrivateKeyBytes, type KeyPairSigner } from "@solana/kit";
import type { EpochMs } from "../methodology/index.ts";
import { isSealed, type SecretBox } from "../secret-box.ts";
import { ensureAnchorKey, loadAnchorKey, resealAnchorKey, type AnchorKeyRecord, type Executor } from "../store/index.ts";

/** A keypair file that cannot be used. Never retried: the operator has to fix the file. */
export class FeePayerError extends Error {
  readonly code = "fee_payer_invalid";
  constructor(message: string) {
    super(message);
    this.name = "FeePayerError";
  }
}

/** Reads a Solana CLI keypair file (`solana-keygen new -o file.json`). */
export async function feePayerFromFile(path: string): Promise<KeyPairSigner> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, "utf8"));
  } catch (e) {
    throw new FeePayerError(`ANCHOR_KEYPAIR ${path}: cannot read a JSON keypair file (${e instanceof Error ? e.message : String(e)})`);
  }
  if (!Array.isArray(parsed) || parsed.length !== 64 || !parsed.every((b) => Number.isInteger(b) && b >= 0 && b <= 255)) {
    throw new FeePayerError(`ANCHOR_KEYPAIR ${path}: expected a JSON array of 64 bytes (solana-keygen format)`);
  }
  try {
    return await createKeyPairSignerFromBytes(Uint8Array.from(parsed as number[]));
  } catch (e) {
    throw new FeePayerError(`ANCHOR_KEYPAIR ${path}: ${e instanceof Error ? e.message : String(e)} (the last 32 bytes must be the seed's public key)`);
  }
}

/** What a sealed seed is bound to (the GCM associated data): this address's fee payer. */
const sealContext = (address: string): string => `anchor-fee-payer:${address}`;

/** The signer of a stored fee payer; a plaintext seed (an earlier build) is sealed in place first. */
async function signerOf(db: Executor, stored: AnchorKeyRecord, box: SecretBox): Promise<KeyPairSigner> {
  const context = sealContext(stored.address);
  const sealed = isSealed(stored.seed_hex);
  const hex = sealed ? box.open(stored.seed_hex, context) : stored.seed_hex;
  if (!/^[0-9a-f]{64}$/.test(hex)) throw new Error(`the stored fee payer ${stored.address} has no valid seed`);
  const signer = await createKeyPairSignerFromPrivateKeyBytes(Buffer.from(hex, "hex"));
  if (signer.address !== stored.address) throw new Error(`the stored fee payer's seed does not belong to its address ${stored.address}`);
  if (!sealed) await resealAnchorKey(db, stored.address, stored.seed_hex, box.seal(hex, context));
  return signer;
}

/** The stored fee payer, or a new one generated and persisted (the oldest stored key wins a concurrent first start). */
export async function storedFeePayer(db: Executor, now: EpochMs, box: SecretBox): Promise<KeyPairSigner> {
  const existing = await loadAnchorKey(db);
  if (existing !== undefined) return signerOf(db, existing, box);
  const seed = randomBytes(32);
  const fresh = await createKeyPairSignerFromPrivateKeyBytes(seed);
  const kept = await ensureAnchorKey(db, { address: fresh.address, seed_hex: box.seal(seed.toString("hex"), sealContext(fresh.address)), created_at: now });
  seed.fill(0);
  return kept.address === fresh.address ? fresh : signerOf(db, kept, box);
}

/** The configured fee payer: the keypair file when given, else the stored (or new) key, sealed under `box`. */
export function openFeePayer(db: Executor, keypairPath: string | null, now: EpochMs, box: SecretBox): Promise<KeyPairSigner> {
  return keypairPath === null ? storedFeePayer(db, now, box) : feePayerFromFile(keypairPath);
}
