/** The plain-JS SHA-256 fallback (used where browsers withhold WebCrypto) agrees with node:crypto. */
import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { toHex } from "../../public/static/jcs.js";
import { fallbackSubtle, sha256 } from "../../public/static/sha256.js";

const nodeHex = (b: Uint8Array): string => createHash("sha256").update(b).digest("hex");

describe("sha256.js", () => {
  it("gives the FIPS 180-4 test vectors", () => {
    const enc = (s: string) => new TextEncoder().encode(s);
    expect(toHex(sha256(enc("")))).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    expect(toHex(sha256(enc("abc")))).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    expect(toHex(sha256(enc("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")))).toBe(
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
    );
  });

  it("agrees with node:crypto around the block boundaries and on random input", () => {
    for (const n of [1, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129, 1000, 70_000]) {
      const b = new Uint8Array(n).map((_, i) => (i * 31 + n) & 0xff);
      expect(toHex(sha256(b)), `length ${n}`).toBe(nodeHex(b));
    }
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 600 }), (b) => toHex(sha256(b)) === nodeHex(b)),
      { seed: 256, numRuns: 300 },
    );
  });

  it("serves as a WebCrypto-shaped digester", async () => {
    const b = new TextEncoder().encode("peg");
    expect(toHex(await fallbackSubtle.digest("SHA-256", b))).toBe(nodeHex(b));
    await expect(fallbackSubtle.digest("SHA-1", b)).rejects.toThrow();
  });
});
