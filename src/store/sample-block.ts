/**
 * One asset-minute of samples as one `bytea` (issue 25; migration 0010): what `sample_minutes.block` holds. Encoded
 * and decoded in the service, because PostgreSQL cannot build this densely in SQL; the functions `sample_block_keys`
 * and `sample_block_rows` (migration 0010) read it in SQL where a query needs it (the insert's check for a late
 * sample, the `samples` view for tools).
 *
 * Layout, version 1 (samples in (offset, seq) order):
 *   byte 0      version (1)
 *   bytes 1-2   the last sample's offset, uint16 big-endian (the newest instant, readable by `get_byte` in SQL)
 *   varint n
 *   n varints   offset deltas in ms (the first from the minute's start), so the offsets never decrease
 *   n varints   seq x 8 + state code (PEG_STATES order, < 8)
 *   4 columns of n decimals each (decimal-bytes.ts, each after the previous value of its column):
 *               discount, discount_raw, market_usd, intrinsic_usd
 * A sample of a 34-digit discount pair and short prices takes about 45 bytes; see docs/benchmarks.md.
 */
import { ByteReader, ByteWriter, parseScaled, readDecimal, scaledToText, writeDecimal, type Scaled } from "./decimal-bytes.ts";

export const BLOCK_VERSION = 1;
const DECIMALS = ["discount", "discount_raw", "market_usd", "intrinsic_usd"] as const;
const MINUTE_MS = 60_000;

/** One sample inside its minute. Decimals are plain decimal text; decoding gives the canonical wire form. */
export interface BlockSample {
  /** ms since the minute's start, 0 to 59,999. */
  readonly off: number;
  /** 0 to 2^31-1. */
  readonly seq: number;
  /** State code (`peg_state_code`), 0 to 7. */
  readonly state: number;
  readonly discount: string;
  readonly discount_raw: string;
  readonly market_usd: string;
  readonly intrinsic_usd: string;
}

const bySampleOrder = (a: BlockSample, b: BlockSample): number => a.off - b.off || a.seq - b.seq;

/** Encodes a minute's samples (any order; stored in (off, seq) order). Throws on an empty list or a value out of range. */
export function encodeBlock(samples: readonly BlockSample[]): Uint8Array {
  if (samples.length === 0) throw new RangeError("a packed minute holds at least one sample");
  const rows = [...samples].sort(bySampleOrder);
  const w = new ByteWriter(16 + rows.length * 48);
  const last = rows[rows.length - 1]!.off;
  w.byte(BLOCK_VERSION);
  w.byte(Math.floor(last / 256));
  w.byte(last % 256);
  w.varint(rows.length);
  let prevOff = 0;
  for (const r of rows) {
    if (!Number.isInteger(r.off) || r.off < 0 || r.off >= MINUTE_MS) throw new RangeError(`offset out of the minute: ${r.off}`);
    w.varint(r.off - prevOff);
    prevOff = r.off;
  }
  for (const r of rows) {
    if (!Number.isInteger(r.seq) || r.seq < 0 || r.seq > 2_147_483_647) throw new RangeError(`seq out of range: ${r.seq}`);
    if (!Number.isInteger(r.state) || r.state < 0 || r.state > 7) throw new RangeError(`state code out of range: ${r.state}`);
    w.varint(r.seq * 8 + r.state);
  }
  for (const k of DECIMALS) {
    let prev: Scaled | null = null;
    for (const r of rows) {
      const x = parseScaled(r[k]);
      writeDecimal(w, x, prev);
      prev = x;
    }
  }
  return w.finish();
}

/** Decodes a block: its samples in (off, seq) order, decimals in canonical wire form. */
export function decodeBlock(block: Uint8Array): BlockSample[] {
  const r = new ByteReader(block);
  const version = r.byte();
  if (version !== BLOCK_VERSION) throw new RangeError(`packed minute of unknown version ${version}`);
  r.byte();
  r.byte();
  const n = r.varint();
  if (n > block.length) throw new RangeError("packed minute count larger than its bytes");
  const offs = new Array<number>(n);
  let off = 0;
  for (let i = 0; i < n; i++) offs[i] = off += r.varint();
  const keys = new Array<number>(n);
  for (let i = 0; i < n; i++) keys[i] = r.varint();
  const cols = DECIMALS.map(() => {
    const out = new Array<string>(n);
    let prev: Scaled | null = null;
    for (let i = 0; i < n; i++) out[i] = scaledToText((prev = readDecimal(r, prev)));
    return out;
  });
  if (!r.done) throw new RangeError("packed minute has trailing bytes");
  const out: BlockSample[] = [];
  for (let i = 0; i < n; i++) {
    out.push({
      off: offs[i]!,
      seq: Math.floor(keys[i]! / 8),
      state: keys[i]! % 8,
      discount: cols[0]![i]!,
      discount_raw: cols[1]![i]!,
      market_usd: cols[2]![i]!,
      intrinsic_usd: cols[3]![i]!,
    });
  }
  return out;
}

/** Bytes of each part of a block (header, offsets, seq and state, each decimal column): where a block's bytes go. */
export function blockSections(block: Uint8Array): Record<"header" | "offsets" | "seq_state" | (typeof DECIMALS)[number], number> {
  const r = new ByteReader(block);
  r.bytes(3);
  const n = r.varint();
  const header = r.pos;
  const mark = (): number => r.pos;
  for (let i = 0; i < n; i++) r.varint();
  const offsets = mark();
  for (let i = 0; i < n; i++) r.varint();
  const keys = mark();
  const ends: number[] = [];
  for (const _ of DECIMALS) {
    let prev: Scaled | null = null;
    for (let i = 0; i < n; i++) prev = readDecimal(r, prev);
    ends.push(mark());
  }
  return {
    header,
    offsets: offsets - header,
    seq_state: keys - offsets,
    discount: ends[0]! - keys,
    discount_raw: ends[1]! - ends[0]!,
    market_usd: ends[2]! - ends[1]!,
    intrinsic_usd: ends[3]! - ends[2]!,
  };
}

/** A block as a `decode(..., 'hex')` parameter: both drivers pass text arrays alike, which bytea arrays are not. */
export const blockHex = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("hex");

/** A bytea read back (a Buffer from node-postgres, a Uint8Array from PGlite). */
export function blockBytes(v: unknown): Uint8Array {
  if (v instanceof Uint8Array) return v;
  throw new TypeError(`expected bytea, got ${typeof v}`);
}
