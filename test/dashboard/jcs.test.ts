/**
 * The browser's RFC 8785 canonicalisation and receipt hash agree with the server's: `canonicalize` (the npm
 * package the methodology hashes with) on a corpus and on random JSON, and `receiptHash` on real receipts from a
 * scenario replay, served as /v1/audit/{id}/detail would serve them (JSON over the wire).
 */
import canonicalizeRef from "canonicalize";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import { loadScenario } from "../../src/cli/scenario-files.ts";
import { detailBody } from "../../src/http/routes/audit.ts";
import { receiptHash as serverReceiptHash } from "../../src/methodology/receipt.ts";
import { replayScenario } from "../../src/streams/sources/scenario/replay.ts";
import { canonicalize, receiptHash, receiptPreimage, toHex, verifyReceipt } from "../../public/static/jcs.js";
import { fallbackSubtle } from "../../public/static/sha256.js";

const ref = (v: unknown): string => {
  const out = canonicalizeRef(v);
  if (out === undefined) throw new Error("no JSON form");
  return out;
};

/** Both refuse the value, or both give the same text. */
function agrees(v: unknown): void {
  let expected: string | Error;
  try {
    expected = ref(v);
  } catch (e) {
    expected = e as Error;
  }
  if (expected instanceof Error) expect(() => canonicalize(v)).toThrow();
  else expect(canonicalize(v)).toBe(expected);
}

const CORPUS: unknown[] = [
  null,
  true,
  false,
  0,
  -0,
  1,
  -1,
  0.1,
  1e21,
  1e-7,
  123456789012345680000,
  5e-324,
  1.7976931348623157e308,
  4.5,
  0.000001,
  -1.25e-10,
  Number.MAX_SAFE_INTEGER,
  "",
  "plain",
  'quote " backslash \\ slash /',
  "\b\f\n\r\t\u0000\u0001\u001f\u007f",
  "\u2028\u2029 line separators stay literal",
  "unicode: é ß € 😀 𝄞 中文",
  [],
  {},
  [1, [2, [3, { a: [] }]]],
  { b: 1, a: 2, c: { z: [3, { y: null, x: true }], "": "empty key" } },
  // Ordering by UTF-16 code units: U+E000 sorts after U+1F600's high surrogate (D83D), "a" before "b", "B" before "a".
  { "\ue000": 1, "😀": 2, a: 3, b: 4, B: 5, aa: 6, "a\u0000": 7, "€": 8, "\u0080": 9 },
  { "1": "one", "10": "ten", "2": "two", "-1": "neg" },
  { nested: { deeper: { deepest: [0.1, 0.2, 0.30000000000000004, 1e21, 1e-7, -0] } } },
  { numbers: [333333333.3333333, 1e30, 4.35, 0.002, 1e-27, -5e-324] },
  // RFC 8785 appendix example values.
  { numbers: [333333333.3333333, 1e30, 4.5, 0.002, 1e-27], string: "€$\u000f\nA'B\"\\\\\"/", literals: [null, true, false] },
];

describe("jcs.js canonicalize", () => {
  it("agrees with the canonicalize package on the corpus", () => {
    for (const v of CORPUS) expect(canonicalize(v), JSON.stringify(v)).toBe(ref(v));
  });

  it("gives the RFC 8785 numbers", () => {
    expect(canonicalize(1e21)).toBe("1e+21");
    expect(canonicalize(1e20)).toBe("100000000000000000000");
    expect(canonicalize(0.1)).toBe("0.1");
    expect(canonicalize(-0)).toBe("0");
    expect(canonicalize(1e-7)).toBe("1e-7");
    expect(canonicalize(333333333.3333333)).toBe("333333333.3333333");
    expect(() => canonicalize(Number.NaN)).toThrow();
    expect(() => canonicalize(Number.POSITIVE_INFINITY)).toThrow();
  });

  it("sorts keys by UTF-16 code units, not code points", () => {
    // U+FFFD (one unit, FFFD) and U+1F600 (units D83D DE00): by code point FFFD < 1F600, by UTF-16 units the emoji first.
    expect(canonicalize({ "\ufffd": 1, "😀": 2 })).toBe('{"😀":2,"\ufffd":1}');
  });

  it("omits undefined members, nulls undefined array entries, refuses lone surrogates and cycles", () => {
    expect(canonicalize({ a: undefined, b: 1 })).toBe('{"b":1}');
    expect(canonicalize([undefined, 1])).toBe("[null,1]");
    expect(() => canonicalize("\ud800")).toThrow();
    expect(() => canonicalize({ ["\udc00"]: 1 })).toThrow();
    const cyclic: Record<string, unknown> = {};
    cyclic["self"] = cyclic;
    expect(() => canonicalize(cyclic)).toThrow();
  });

  it("agrees with the canonicalize package on random JSON", () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 4 }), agrees),
      { seed: 8785, numRuns: 500 },
    );
  });

  it("agrees with the canonicalize package on full-unicode strings and keys (lone surrogates refused by both)", () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string({ unit: "grapheme" }), fc.string({ unit: "binary" })), agrees),
      { seed: 8785, numRuns: 80 },
    );
  });
});

describe("jcs.js receipt hash", () => {
  const catalog = loadShippedCatalog();
  const GIT_SHA = "0123456789abcdef0123456789abcdef01234567";
  const receipts = ["usdc-march-2023", "hyusd-cr-oscillation", "lst-cascade-black-swan"].flatMap(
    (name) =>
      replayScenario(loadScenario(name), {
        resolve: (s) => {
          const a = catalog.bySymbol(s);
          return a !== undefined && a.active ? a : undefined;
        },
        gitSha: GIT_SHA,
      }).receipts,
  );

  it("the replay produced receipts", () => {
    expect(receipts.length).toBeGreaterThan(2);
  });

  it("equals the server's receiptHash for every receipt, as served by /v1/audit/{id}/detail", async () => {
    for (const r of receipts) {
      const served = JSON.parse(
        JSON.stringify(detailBody({ receipt: r, receipt_sha256: r.receipt_sha256, commit_status: "not_committed_yet", monitoring_only: false })),
      ) as Parameters<typeof verifyReceipt>[0] & { git_sha: string; methodology_version: string };
      expect(served.git_sha).toBe(GIT_SHA);
      const server = serverReceiptHash(r.methodology_version, r.git_sha, r.catalog_entry, r.inputs_frozen, r.computed);
      expect(server).toBe(r.receipt_sha256);
      const browser = await receiptHash(
        served.methodology_version,
        served.git_sha,
        served.catalog_entry,
        served.inputs_frozen,
        served.computed,
        globalThis.crypto.subtle,
      );
      expect(browser).toBe(server);
      // Outside a secure context the page falls back to its own SHA-256: same answer.
      await expect(verifyReceipt(served, fallbackSubtle)).resolves.toMatchObject({ ok: true, actual: server });
      await expect(verifyReceipt(served)).resolves.toEqual({ ok: true, expected: server, actual: server });
    }
  });

  it("reports a mismatch when anything hashed changes", async () => {
    const r = receipts[0]!;
    const served = JSON.parse(JSON.stringify({ ...r, receipt_sha256: r.receipt_sha256 })) as Parameters<typeof verifyReceipt>[0] & {
      computed: Record<string, unknown>;
    };
    served.computed["discount_smooth"] = "0.5";
    const v = await verifyReceipt(served);
    expect(v.ok).toBe(false);
    expect(v.expected).toBe(r.receipt_sha256);
    expect(v.actual).not.toBe(r.receipt_sha256);
    const other = await verifyReceipt({ ...JSON.parse(JSON.stringify(r)), git_sha: "" });
    expect(other.ok).toBe(false);
  });

  it("builds the preimage with 0x00 separators", () => {
    const bytes = receiptPreimage("1.0.0", "ab", { b: 1, a: "é" }, [1], null);
    expect(new TextDecoder().decode(bytes)).toBe('1.0.0\u0000ab\u0000{"a":"é","b":1}\u0000[1]\u0000null');
    expect(toHex(new Uint8Array([0, 15, 255]))).toBe("000fff");
  });
});
