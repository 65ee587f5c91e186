/**
 * The packed-minute encoding (decimal-bytes.ts, sample-block.ts): every decimal shape the history can hold comes back
 * as the same value in its canonical wire form (what `decimalToWire` writes, so what `/history` answered before), every
 * key and state comes back, and damaged blocks fail loudly instead of decoding into other samples. Property tests
 * compare against decimal.js on random decimals, random orders and runs of repeats, and the SQL decoders of migration
 * 0010 (`sample_block_rows`, `sample_block_keys`: the late-sample check and the `samples` view) against the service's.
 */
import fc from "fast-check";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { SimulatedClock } from "../../src/clock.ts";
import { openStore, type Store } from "../../src/store/index.ts";
import { toDecimal } from "../../src/store/normalise.ts";
import { D, decimalToWire } from "../../src/methodology/index.ts";
import { ByteReader, ByteWriter, parseScaled, readDecimal, scaledToText, writeDecimal, type Scaled } from "../../src/store/decimal-bytes.ts";
import { blockSections, decodeBlock, encodeBlock, type BlockSample } from "../../src/store/sample-block.ts";

/** The wire form a decimal text has (decimal.js, unbounded: the constructor keeps every digit). */
const wire = (text: string): string => decimalToWire(new D(text));

function roundTrip(values: readonly string[]): string[] {
  const w = new ByteWriter(4);
  let prev: Scaled | null = null;
  for (const v of values) {
    const x = parseScaled(v);
    writeDecimal(w, x, prev);
    prev = x;
  }
  const r = new ByteReader(w.finish());
  const out: string[] = [];
  prev = null;
  for (let i = 0; i < values.length; i++) out.push(scaledToText((prev = readDecimal(r, prev))));
  expect(r.done).toBe(true);
  return out;
}

const SHAPES = [
  "0",
  "-0",
  "0.000",
  "-0.0",
  "1",
  "-1",
  "100",
  "1000000.000",
  "1.2300",
  "-12.3400",
  "+1.",
  ".5",
  "-.25",
  "0.0000000000000000000000000000000000000001", // 1e-40, the methodology's floor
  "-0.0000000000000000000000000000000000000001234567890123456789012345678901234",
  "0.001234567890123456789012345678901234", // 34 significant digits
  "-0.9999999999999999999999999999999999",
  "9999999999999999999999999999999999",
  "1234567890123456789012345678901234000000",
  "0.9990000000000000000000000000000001",
  `${"9".repeat(80)}.${"1".repeat(70)}`, // far longer than any sample: 150 digits
];

describe("decimal bytes", () => {
  test.each(SHAPES)("%s comes back as its wire form, alone and after each other shape", (v) => {
    expect(roundTrip([v])).toEqual([wire(v)]);
    for (const p of SHAPES) expect(roundTrip([p, v, v, p])).toEqual([p, v, v, p].map(wire));
  });

  test("trailing zeros: fractional ones are not part of the value, integer ones are", () => {
    expect(roundTrip(["1.2300", "100", "100.00", "0.10", "10"])).toEqual(["1.23", "100", "100", "0.1", "10"]);
  });

  test("sizes: a 34-digit decimal in at most 17 bytes, a repeat in 1, a near value as a shorter delta", () => {
    const size = (values: string[]) => {
      const w = new ByteWriter();
      let prev: Scaled | null = null;
      for (const v of values) {
        const x = parseScaled(v);
        writeDecimal(w, x, prev);
        prev = x;
      }
      return w.finish().length;
    };
    const d34 = "0.001234567890123456789012345678901234";
    expect(size(["-0.009999999999999999999999999999999999"])).toBe(17); // 10^34 - 1 needs 113 bits: 15 bytes + 2
    expect(size([d34])).toBe(16);
    expect(size([d34, d34]) - size([d34])).toBe(1);
    expect(size([d34, "0.001234567890123456789012345678901299"]) - size([d34])).toBe(3);
    expect(size(["0"])).toBe(2);
  });

  test("refuses what is not a plain decimal", () => {
    for (const bad of ["", "-", ".", "1e5", "NaN", "Infinity", "1.2.3", "0x10", " 1", "1,5"]) expect(() => parseScaled(bad)).toThrow(RangeError);
  });

  test("a repeat or a delta with nothing before it, and a truncated value, fail", () => {
    expect(() => readDecimal(new ByteReader(Uint8Array.of(0)), null)).toThrow(/repeats/);
    expect(() => readDecimal(new ByteReader(Uint8Array.of(2, 0)), null)).toThrow(/delta/);
    expect(() => readDecimal(new ByteReader(Uint8Array.of(1, 6, 1)), null)).toThrow(/truncated/);
  });

  const decimalText = fc
    .tuple(fc.boolean(), fc.stringMatching(/^\d{1,40}$/), fc.stringMatching(/^\d{0,45}$/), fc.boolean())
    .map(([neg, int, frac, dot]) => `${neg ? "-" : ""}${int}${dot || frac !== "" ? `.${frac}` : ""}`);

  test("property: any run of decimals, with repeats and near values, comes back as decimal.js writes it", () => {
    const run = fc.array(
      fc.oneof(
        decimalText,
        decimalText.map((v) => [v, v]),
        decimalText.map((v) => [v, decimalToWire(new D(v).plus("0.000000000000000000000000000001"))]),
      ),
      { minLength: 1, maxLength: 30 },
    );
    fc.assert(
      fc.property(run, (parts) => {
        const values = parts.flat();
        expect(roundTrip(values)).toEqual(values.map(wire));
      }),
      { numRuns: 300 },
    );
  });
});

const s = (off: number, seq: number, state: number, d: string, extra: Partial<BlockSample> = {}): BlockSample => ({
  off,
  seq,
  state,
  discount: d,
  discount_raw: `-${d}`,
  market_usd: "0.9990000000000000000000000000000001",
  intrinsic_usd: "1",
  ...extra,
});

describe("sample blocks", () => {
  test("a minute comes back in (offset, seq) order with every field, the last offset in bytes 1-2", () => {
    const input = [
      s(59_999, 2_147_483_647, 5, "0.5"),
      s(0, 0, 0, "0.001234567890123456789012345678901234"),
      s(1_000, 1, 3, "1.2300", { market_usd: "100", intrinsic_usd: "0.0000000000000000000000000000000000000001" }),
      s(1_000, 0, 4, "-0", { discount_raw: "-0.000" }),
      s(30_000, 7, 1, "0.001234567890123456789012345678901234"),
    ];
    const block = encodeBlock(input);
    expect(block[0]).toBe(1);
    expect(block[1]! * 256 + block[2]!).toBe(59_999);
    const out = decodeBlock(block);
    const want = [...input]
      .sort((a, b) => a.off - b.off || a.seq - b.seq)
      .map((r) => ({ ...r, discount: wire(r.discount), discount_raw: wire(r.discount_raw), market_usd: wire(r.market_usd), intrinsic_usd: wire(r.intrinsic_usd) }));
    expect(out).toEqual(want);
    const sections = blockSections(block);
    expect(Object.values(sections).reduce((a, b) => a + b, 0)).toBe(block.length);
  });

  test("a minute of 1 Hz samples with 34-digit discounts and steady prices takes under 45 bytes a sample", () => {
    const rows = Array.from({ length: 60 }, (_, i) =>
      s(i * 1000 + (i % 3), 0, 0, `0.00${String(1234567 + i * 7919).padEnd(32, String(i % 10))}`, {
        discount_raw: `0.00${String(7654321 - i * 104729).padEnd(32, String((i * 7) % 10))}`,
        market_usd: i < 30 ? "0.99871234" : "0.99871301",
      }),
    );
    const block = encodeBlock(rows);
    expect(decodeBlock(block)).toEqual(rows.map((r) => ({ ...r, discount: wire(r.discount), discount_raw: wire(r.discount_raw) })));
    expect(block.length / rows.length).toBeLessThan(45);
  });

  test("refuses what it cannot hold and what is not a block", () => {
    expect(() => encodeBlock([])).toThrow(RangeError);
    expect(() => encodeBlock([s(60_000, 0, 0, "1")])).toThrow(/offset/);
    expect(() => encodeBlock([s(-1, 0, 0, "1")])).toThrow(/offset/);
    expect(() => encodeBlock([s(0, -1, 0, "1")])).toThrow(/seq/);
    expect(() => encodeBlock([s(0, 0, 8, "1")])).toThrow(/state/);
    const block = encodeBlock([s(0, 0, 0, "1"), s(5, 0, 0, "2")]);
    expect(() => decodeBlock(block.subarray(0, block.length - 1))).toThrow(/truncated/);
    expect(() => decodeBlock(Uint8Array.of(...block, 0))).toThrow(/trailing/);
    expect(() => decodeBlock(Uint8Array.of(2, ...block.subarray(1)))).toThrow(/version/);
  });

  test("property: random minutes round-trip (keys, states, decimals), whatever the input order", () => {
    const dec = fc
      .tuple(fc.boolean(), fc.stringMatching(/^\d{1,6}$/), fc.stringMatching(/^\d{0,36}$/))
      .map(([neg, i, f]) => `${neg ? "-" : ""}${i}${f === "" ? "" : `.${f}`}`);
    const row = fc.record({
      off: fc.integer({ min: 0, max: 59_999 }),
      seq: fc.integer({ min: 0, max: 2_147_483_647 }),
      state: fc.integer({ min: 0, max: 5 }),
      discount: dec,
      discount_raw: dec,
      market_usd: fc.constantFrom("1", "0.9987", "1.0000000000000000000000000000000001"),
      intrinsic_usd: dec,
    });
    fc.assert(
      fc.property(fc.uniqueArray(row, { minLength: 1, maxLength: 80, selector: (r) => `${r.off}|${r.seq}` }), (rows) => {
        const want = [...rows]
          .sort((a, b) => a.off - b.off || a.seq - b.seq)
          .map((r) => ({ ...r, discount: wire(r.discount), discount_raw: wire(r.discount_raw), market_usd: wire(r.market_usd), intrinsic_usd: wire(r.intrinsic_usd) }));
        expect(decodeBlock(encodeBlock(rows))).toEqual(want);
      }),
      { numRuns: 200 },
    );
  });
});

describe("the SQL decoders read what the service encodes (PGlite)", () => {
  let store: Store;
  beforeAll(async () => {
    store = await openStore({ kind: "pglite-memory" }, new SimulatedClock(0));
  }, 60_000);
  afterAll(() => store?.close());

  test("property: sample_block_rows and sample_block_keys equal decodeBlock on random minutes", async () => {
    const dec = fc
      .tuple(fc.boolean(), fc.stringMatching(/^\d{1,12}$/), fc.stringMatching(/^\d{0,40}$/))
      .map(([neg, i, f]) => `${neg ? "-" : ""}${i}${f === "" ? "" : `.${f}`}`);
    const row = fc.record({
      off: fc.integer({ min: 0, max: 59_999 }),
      seq: fc.integer({ min: 0, max: 2_147_483_647 }),
      state: fc.integer({ min: 0, max: 5 }),
      discount: dec,
      discount_raw: fc.constantFrom("0", "-12.5", "0.0000000000000000000000000000000000000001", "100"),
      market_usd: fc.constantFrom("1", "0.9987", "1.0000000000000000000000000000000001"),
      intrinsic_usd: dec,
    });
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(row, { minLength: 1, maxLength: 40, selector: (r) => `${r.off}|${r.seq}` }), async (rows) => {
        const block = encodeBlock(rows);
        const want = decodeBlock(block);
        const got = await sql<Record<string, unknown>>`
          select off, seq, state, discount::text as discount, discount_raw::text as discount_raw, market_usd::text as market_usd,
                 intrinsic_usd::text as intrinsic_usd
          from sample_block_rows(${block})`.execute(store.db);
        expect(got.rows.map((r) => ({ ...r, ...Object.fromEntries(["discount", "discount_raw", "market_usd", "intrinsic_usd"].map((k) => [k, toDecimal(r[k], k)])) }))).toEqual(want);
        const keys = await sql<{ off: number; seq: number }>`select off, seq from sample_block_keys(${block})`.execute(store.db);
        expect(keys.rows).toEqual(want.map((r) => ({ off: r.off, seq: r.seq })));
      }),
      { numRuns: 40 },
    );
  }, 120_000);
});
