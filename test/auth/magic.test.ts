import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { AuthError, MAGIC_TTL_MS, checkMagic, consumeMagic, hashMagic, mintMagic, type MagicRecord } from "../../src/auth/index.ts";

const NOW = Date.UTC(2026, 5, 12, 10, 0, 0);
const TEN_MINUTES = 10 * 60 * 1000;

function outcome(call: () => unknown): string {
  try {
    call();
  } catch (err) {
    if (err instanceof AuthError) return err.code;
    throw err;
  }
  return "accepted";
}

describe("magic-link tokens (addendum A)", () => {
  it("mints 32 random bytes as unpadded base64url (URL-safe, 256 bits)", () => {
    const { token } = mintMagic(NOW);
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(token, "base64url")).toHaveLength(32);
    expect(encodeURIComponent(token)).toBe(token);
  });

  it("never mints the same token twice", () => {
    const tokens = new Set(Array.from({ length: 2000 }, () => mintMagic(NOW).token));
    expect(tokens.size).toBe(2000);
  });

  it("says to store only the SHA-256 of the token, never the token", () => {
    const minted = mintMagic(NOW);
    const expectedHash = createHash("sha256").update(minted.token).digest("hex");
    expect(minted.tokenHash).toBe(expectedHash);
    expect(hashMagic(minted.token)).toBe(expectedHash);
    expect(minted.record).toEqual({ tokenHash: expectedHash, expiresAt: NOW + TEN_MINUTES, usedAt: null });
    expect(JSON.stringify(minted.record)).not.toContain(minted.token);
    expect(Object.values(minted.record)).not.toContain(minted.token);
  });

  it("expires exactly 10 minutes after minting", () => {
    const { record, expiresAt } = mintMagic(NOW);
    expect(MAGIC_TTL_MS).toBe(TEN_MINUTES);
    expect(expiresAt).toBe(NOW + TEN_MINUTES);
    expect(outcome(() => checkMagic(record, NOW))).toBe("accepted");
    expect(outcome(() => checkMagic(record, NOW + TEN_MINUTES - 1))).toBe("accepted");
    expect(outcome(() => checkMagic(record, NOW + TEN_MINUTES))).toBe("invalid_token");
    expect(outcome(() => checkMagic(record, NOW + TEN_MINUTES + 1))).toBe("invalid_token");
  });

  it("works once: a consumed link is refused", () => {
    const { record } = mintMagic(NOW);
    const used = consumeMagic(record, NOW + 1000);
    expect(used).toEqual({ ...record, usedAt: NOW + 1000 });
    expect(outcome(() => checkMagic(used, NOW + 2000))).toBe("invalid_token");
    expect(outcome(() => consumeMagic(used, NOW + 2000))).toBe("invalid_token");
    // A record used at epoch 0 is still used (no falsy shortcut).
    expect(outcome(() => checkMagic({ ...record, usedAt: 0 }, NOW))).toBe("invalid_token");
  });

  it("refuses an unknown link and an expired one with the same code", () => {
    expect(outcome(() => checkMagic(undefined, NOW))).toBe("invalid_token");
    expect(outcome(() => checkMagic(null, NOW))).toBe("invalid_token");
    const expired: MagicRecord = { tokenHash: "0".repeat(64), expiresAt: NOW, usedAt: null };
    expect(outcome(() => consumeMagic(expired, NOW))).toBe("invalid_token");
  });

  it("refuses a presented string that could not be a token before hashing it", () => {
    const { token } = mintMagic(NOW);
    for (const bad of ["", token.slice(1), `${token}A`, `${token.slice(0, -1)}=`, token.replace(/^./, "+"), ` ${token.slice(1)}`, 42, null]) {
      expect(outcome(() => hashMagic(bad)), String(bad)).toBe("invalid_token");
    }
  });
});
