import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { AuthError, mintSession, verifyForLogout, verifySession } from "../../src/auth/index.ts";
import { NOW, SECRET } from "./forge.ts";

const { token } = await mintSession({ userId: 42, now: NOW, secret: SECRET });

async function codeOf(candidate: string): Promise<string> {
  try {
    await verifySession(candidate, { secret: SECRET, now: NOW, isRevoked: () => false });
  } catch (err) {
    if (err instanceof AuthError) return err.code;
    throw err;
  }
  return "accepted";
}

async function logoutCodeOf(candidate: string): Promise<string> {
  try {
    await verifyForLogout(candidate, { secret: SECRET, now: NOW });
  } catch (err) {
    if (err instanceof AuthError) return err.code;
    throw err;
  }
  return "accepted";
}

/** A position in the token and a byte (0-255, as a char code) different from the one there. */
const substitution = fc
  .record({ at: fc.nat({ max: token.length - 1 }), code: fc.integer({ min: 0, max: 255 }) })
  .filter(({ at, code }) => token.charCodeAt(at) !== code)
  .map(({ at, code }) => token.slice(0, at) + String.fromCharCode(code) + token.slice(at + 1));

const deletion = fc.nat({ max: token.length - 1 }).map((at) => token.slice(0, at) + token.slice(at + 1));

const insertion = fc
  .record({ at: fc.nat({ max: token.length }), code: fc.integer({ min: 0, max: 255 }) })
  .map(({ at, code }) => token.slice(0, at) + String.fromCharCode(code) + token.slice(at));

describe("a valid session token changed by one byte", () => {
  it("is accepted unchanged (the property's baseline)", async () => {
    expect(await codeOf(token)).toBe("accepted");
  });

  it("is refused with invalid_token for any single-byte substitution", async () => {
    await fc.assert(fc.asyncProperty(substitution, async (changed) => (await codeOf(changed)) === "invalid_token"), { numRuns: 3000 });
  });

  it("is refused with invalid_token for any single-byte deletion or insertion", async () => {
    await fc.assert(fc.asyncProperty(fc.oneof(deletion, insertion), async (changed) => (await codeOf(changed)) === "invalid_token"), { numRuns: 2000 });
  });

  it("is refused by the logout check too", async () => {
    await fc.assert(fc.asyncProperty(fc.oneof(substitution, deletion, insertion), async (changed) => (await logoutCodeOf(changed)) === "invalid_token"), { numRuns: 2000 });
  });

  it("is refused at every position when the character moves to its base64url neighbour (exhaustive)", async () => {
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    for (let at = 0; at < token.length; at++) {
      const index = alphabet.indexOf(token[at] ?? "");
      if (index < 0) continue;
      for (const neighbour of [index ^ 1, index ^ 2, index ^ 32]) {
        const changed = token.slice(0, at) + alphabet[neighbour] + token.slice(at + 1);
        expect(await codeOf(changed), `position ${at}`).toBe("invalid_token");
      }
    }
  });
});
