/**
 * The fee payer that signs anchor transactions. Either a Solana CLI keypair file (`ANCHOR_KEYPAIR`: a JSON array of
 * 64 bytes, seed then public key) or, when none is configured, a key generated on first start and kept in the store
 * (`anchor_keys`), so every later start signs with the same address. The address is what integrators put on their
 * signer allow-list.
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { createKeyPairSignerFromBytes, createKeyPairSignerFromPrivateKeyBytes, type KeyPairSigner } from "@solana/kit";
import type { EpochMs } from "../methodology/index.ts";
import { ensureAnchorKey, loadAnchorKey, type Executor } from "../store/index.ts";

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

/** The stored fee payer, or a new one generated and persisted (the oldest stored key wins a concurrent first start). */
export async function storedFeePayer(db: Executor, now: EpochMs): Promise<KeyPairSigner> {
  const existing = await loadAnchorKey(db);
  if (existing !== undefined) return createKeyPairSignerFromPrivateKeyBytes(Buffer.from(existing.seed_hex, "hex"));
  const seed = randomBytes(32);
  const fresh = await createKeyPairSignerFromPrivateKeyBytes(seed);
  const kept = await ensureAnchorKey(db, { address: fresh.address, seed_hex: seed.toString("hex"), created_at: now });
  seed.fill(0);
  return kept.address === fresh.address ? fresh : createKeyPairSignerFromPrivateKeyBytes(Buffer.from(kept.seed_hex, "hex"));
}

/** The configured fee payer: the keypair file when given, else the stored (or new) key. */
export function openFeePayer(db: Executor, keypairPath: string | null, now: EpochMs): Promise<KeyPairSigner> {
  return keypairPath === null ? storedFeePayer(db, now) : feePayerFromFile(keypairPath);
}
