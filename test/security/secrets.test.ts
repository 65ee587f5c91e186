/**
 * Issue 14 item 6, secrets at rest: the webhook signing keys and the generated anchor fee payer are stored sealed
 * (AES-256-GCM, a versioned envelope) under the secrets key, so a copied database does not sign; keys stored in
 * plaintext by an earlier build are sealed in place keeping their kid / address; a wrong key is an error, never a
 * silently generated new key. The start path (SECRETS_KEY required with DATABASE_URL, DATA_DIR/secrets.key on the
 * embedded default) is in secrets-start.test.ts.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { sql } from "kysely";
import { createKeyPairSignerFromPrivateKeyBytes } from "@solana/kit";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { storedFeePayer } from "../../src/anchor/index.ts";
import { SimulatedClock } from "../../src/clock.ts";
import { generateSigningKey, openKeyRing, signDelivery, verifyDelivery } from "../../src/delivery/index.ts";
import { generateSecretsKey, parseSecretsKey, secretBox, SecretsKeyError } from "../../src/secret-box.ts";
import { loadSigningKeys, openStore, saveSigningKeys, type Store } from "../../src/store/index.ts";
import { NOW } from "../http/fixtures.ts";

const box = secretBox(generateSecretsKey());
const otherBox = secretBox(generateSecretsKey());

/** Runs `fn` and returns the SecretsKeyError it throws (failing the test on anything else). */
async function secretsError(fn: () => Promise<unknown>): Promise<SecretsKeyError> {
  try {
    await fn();
  } catch (e) {
    expect(e).toBeInstanceOf(SecretsKeyError);
    return e as SecretsKeyError;
  }
  throw new Error("expected a SecretsKeyError");
}

describe("the secret box (AES-256-GCM, envelope v1)", () => {
  it("seals to a versioned envelope that names its key and opens only for the same context and key", async () => {
    const sealed = box.seal("the secret", "webhook-signing-key:abc");
    expect(sealed).toMatch(new RegExp(`^peg-sealed:v1:${box.keyId}:[A-Za-z0-9_-]{16}:[A-Za-z0-9_-]+:[A-Za-z0-9_-]{22}$`));
    expect(sealed).not.toContain("the secret");
    expect(box.seal("the secret", "webhook-signing-key:abc")).not.toBe(sealed); // a fresh IV each time
    expect(box.open(sealed, "webhook-signing-key:abc")).toBe("the secret");
    // Moved to another row (another context): refused.
    expect((await secretsError(async () => box.open(sealed, "webhook-signing-key:def"))).code).toBe("sealed_secret_corrupt");
    // Another key: named as such, with both key ids.
    const wrong = await secretsError(async () => otherBox.open(sealed, "webhook-signing-key:abc"));
    expect(wrong.code).toBe("secrets_key_wrong");
    expect(wrong.message).toContain(box.keyId);
    expect(wrong.message).toContain(otherBox.keyId);
    // Altered ciphertext, an unknown version, a malformed envelope.
    const parts = sealed.split(":");
    parts[5] = parts[5]!.startsWith("A") ? `B${parts[5]!.slice(1)}` : `A${parts[5]!.slice(1)}`;
    expect((await secretsError(async () => box.open(parts.join(":"), "webhook-signing-key:abc"))).code).toBe("sealed_secret_corrupt");
    expect((await secretsError(async () => box.open(sealed.replace(":v1:", ":v9:"), "webhook-signing-key:abc"))).message).toMatch(/v9.*does not know/);
    expect((await secretsError(async () => box.open("peg-sealed:v1:zz", "x"))).code).toBe("sealed_secret_corrupt");
  });

  it("reads SECRETS_KEY as 64 hex digits or base64 / base64url of 32 bytes, nothing else", () => {
    const key = randomBytes(32);
    for (const text of [key.toString("hex"), key.toString("base64"), key.toString("base64url"), ` ${key.toString("base64")}\n`]) {
      expect(parseSecretsKey(text)?.equals(key), text).toBe(true);
    }
    for (const bad of ["", "short", randomBytes(31).toString("base64"), randomBytes(33).toString("hex"), "g".repeat(64)]) expect(parseSecretsKey(bad), bad).toBeNull();
  });
});

// One embedded store for the file (opening one runs every migration: seconds); each test starts from empty key tables.
let store: Store;
beforeAll(async () => {
  store = await openStore({ kind: "pglite-memory" }, new SimulatedClock(NOW));
});
afterAll(async () => {
  await store?.close();
});
beforeEach(async () => {
  await sql`delete from signing_keys`.execute(store.db);
  await sql`delete from anchor_keys`.execute(store.db);
});

describe("webhook signing keys at rest", () => {

  /** A delivery signed by the ring's active key, verified against `listed` (what a subscriber holds). */
  const verifiesAgainst = (ring: Awaited<ReturnType<typeof openKeyRing>>, listed: readonly { kid: string; public_key: string }[]) => {
    const eventId = randomUUID();
    const body = JSON.stringify({ hello: "world" });
    const timestamp = Math.floor(NOW / 1000);
    const headers = signDelivery({ eventId, deliveryId: randomUUID(), attempt: 1, timestamp, body, key: ring.active() });
    return verifyDelivery(headers, body, listed, NOW).ok;
  };

  it("are stored sealed, never as PEM, and sign after a reopen with the same key", async () => {
    const ring = await openKeyRing(store.db, NOW, box);
    const [row] = await loadSigningKeys(store.db);
    expect(row!.kid).toBe(ring.active().kid);
    expect(row!.private_key).toMatch(/^peg-sealed:v1:/);
    expect(row!.private_key).not.toContain("PRIVATE KEY");
    expect(ring.active().private_key).toContain("BEGIN PRIVATE KEY"); // opened in memory only
    const again = await openKeyRing(store.db, NOW + 1000, box);
    expect(again.active().kid).toBe(ring.active().kid);
    expect(verifiesAgainst(again, ring.publicList(NOW).keys)).toBe(true);
  });

  it("a copy of the database under another secrets key does not sign, and no new key is made", async () => {
    await openKeyRing(store.db, NOW, box);
    const before = await loadSigningKeys(store.db);
    const e = await secretsError(() => openKeyRing(store.db, NOW, otherBox));
    expect(e.code).toBe("secrets_key_wrong");
    expect(e.message).toMatch(/sealed under secrets key/);
    expect(await loadSigningKeys(store.db)).toEqual(before);
  });

  it("plaintext keys of an earlier build are sealed on the first start with a key, keeping kid and public key", async () => {
    const retiring = { ...generateSigningKey(NOW - 3_600_000), status: "retiring" as const, retires_at: NOW + 86_400_000 };
    const active = generateSigningKey(NOW - 60_000);
    await saveSigningKeys(store.db, [active, retiring]); // what an earlier build stored: PEM in private_key
    const listedBefore = (await loadSigningKeys(store.db)).map((k) => ({ kid: k.kid, public_key: k.public_key }));
    const ring = await openKeyRing(store.db, NOW, box);
    expect(ring.active().kid).toBe(active.kid);
    expect(ring.publicList(NOW).keys.map((k) => [k.kid, k.public_key, k.status])).toEqual([
      [active.kid, active.public_key, "active"],
      [retiring.kid, retiring.public_key, "retiring"],
    ]);
    const rows = await loadSigningKeys(store.db);
    expect(rows.map((k) => k.kid).sort()).toEqual([active.kid, retiring.kid].sort());
    for (const r of rows) expect(r.private_key, r.kid).toMatch(/^peg-sealed:v1:/);
    // Subscribers holding the keys listed before the migration keep verifying.
    expect(verifiesAgainst(ring, listedBefore)).toBe(true);
    // And the sealed rows open on the next start.
    expect((await openKeyRing(store.db, NOW + 1000, box)).active().kid).toBe(active.kid);
  });
});

describe("the generated anchor fee payer at rest", () => {

  const storedSeed = async (): Promise<{ address: string; seed_hex: string }[]> =>
    (await sql<{ address: string; seed_hex: string }>`select address, seed_hex from anchor_keys`.execute(store.db)).rows;

  it("is stored sealed, reused with the same key, and refused under another key", async () => {
    const signer = await storedFeePayer(store.db, NOW, box);
    const [row] = await storedSeed();
    expect(row!.address).toBe(signer.address);
    expect(row!.seed_hex).toMatch(/^peg-sealed:v1:/);
    expect(row!.seed_hex).not.toMatch(/[0-9a-f]{64}/);
    expect((await storedFeePayer(store.db, NOW, box)).address).toBe(signer.address);
    expect((await secretsError(() => storedFeePayer(store.db, NOW, otherBox))).code).toBe("secrets_key_wrong");
    expect(await storedSeed()).toEqual([row]);
  });

  it("a plaintext seed of an earlier build is sealed in place, same address", async () => {
    const seed = randomBytes(32);
    const address = (await createKeyPairSignerFromPrivateKeyBytes(Uint8Array.from(seed))).address;
    await sql`insert into anchor_keys (address, seed_hex, created_at) values (${address}, ${seed.toString("hex")}, now())`.execute(store.db);
    const signer = await storedFeePayer(store.db, NOW, box);
    expect(signer.address).toBe(address);
    const [row] = await storedSeed();
    expect(row!.address).toBe(address);
    expect(row!.seed_hex).toMatch(/^peg-sealed:v1:/);
    expect(row!.seed_hex).not.toContain(seed.toString("hex"));
    expect((await storedFeePayer(store.db, NOW, box)).address).toBe(address);
  });
});
