/**
 * Exact decimals as bytes (issue 25): the packed sample history stores each 34-significant-digit decimal in about
 * 17 bytes instead of PostgreSQL's ~24-byte `numeric` array element, and a value equal to the previous one of its column
 * in 1 byte. No library fits (protobuf and msgpack have no exact decimal; decimal128 BSON needs 16 bytes always and a
 * dependency), so this is a small encoder over node built-ins.
 *
 * A value is read as sign, integer mantissa and scale (value = ±m x 10^-s), canonical: no trailing fractional zeros and
 * no negative zero, so "1.2300", "+1.23" and "1.23" are the same value (the history routes answer the canonical wire
 * form, `decimalToWire`, whatever was stored). Integer zeros stay in the mantissa ("100" is m = 100, s = 0).
 *
 * One value in a column, after the previous one `prev` (null for the first):
 *   varint K = 0                    the same value as `prev`
 *   varint K = 1 + 2s + delta, then varint Z = 2L + neg, then L bytes of |x| big-endian
 *     delta = 0: the value is ±x x 10^-s
 *     delta = 1: the value is prev + ±x x 10^-s (s >= prev's scale), when that is shorter
 * Varints are unsigned LEB128 (7 bits a byte, low first), up to 2^53.
 */

/** A decimal as signed integer mantissa and scale: value = m x 10^-s, canonical (see above). */
export interface Scaled {
  readonly m: bigint;
  readonly s: number;
}

const PLAIN = /^([+-]?)(\d*)(?:\.(\d*))?$/;

/** A plain decimal text ("-0.00120", "100", "+.5") as a canonical Scaled; throws on anything else. */
export function parseScaled(text: string): Scaled {
  const g = PLAIN.exec(text);
  if (g === null || (g[2] === "" && (g[3] ?? "") === "")) throw new RangeError(`not a plain decimal: ${JSON.stringify(text)}`);
  const frac = (g[3] ?? "").replace(/0+$/, "");
  const mag = BigInt(`${g[2] ?? ""}${frac}` || "0");
  if (mag === 0n) return { m: 0n, s: 0 };
  return { m: g[1] === "-" ? -mag : mag, s: frac.length };
}

/** The canonical plain text of a Scaled ("-0.0012", "100", "0"): the wire form of the same value. */
export function scaledToText(x: Scaled): string {
  const neg = x.m < 0n;
  let digits = (neg ? -x.m : x.m).toString();
  if (x.s > 0) {
    digits = digits.padStart(x.s + 1, "0");
    digits = `${digits.slice(0, -x.s)}.${digits.slice(-x.s)}`;
  }
  return neg ? `-${digits}` : digits;
}

const pow10 = (n: number): bigint => 10n ** BigInt(n);

/** Trailing zeros of a fractional part dropped: the canonical form of m x 10^-s. */
function canonical(m: bigint, s: number): Scaled {
  while (s > 0 && m % 10n === 0n) {
    m /= 10n;
    s--;
  }
  return { m: m === 0n ? 0n : m, s: m === 0n ? 0 : s };
}

/** A growable byte buffer. */
export class ByteWriter {
  private buf: Uint8Array;
  private len = 0;
  constructor(capacity = 256) {
    this.buf = new Uint8Array(capacity);
  }
  private room(n: number): void {
    if (this.len + n <= this.buf.length) return;
    const next = new Uint8Array(Math.max(this.buf.length * 2, this.len + n));
    next.set(this.buf.subarray(0, this.len));
    this.buf = next;
  }
  byte(b: number): void {
    this.room(1);
    this.buf[this.len++] = b;
  }
  /** Unsigned LEB128 of a safe non-negative integer. */
  varint(n: number): void {
    if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`varint out of range: ${n}`);
    while (n >= 128) {
      this.byte((n % 128) | 128);
      n = Math.floor(n / 128);
    }
    this.byte(n);
  }
  bytes(b: Uint8Array): void {
    this.room(b.length);
    this.buf.set(b, this.len);
    this.len += b.length;
  }
  /** Overwrites a byte already written (a header field known only at the end). */
  setByte(at: number, b: number): void {
    this.buf[at] = b;
  }
  finish(): Uint8Array {
    return this.buf.slice(0, this.len);
  }
}

/** Reads what a ByteWriter wrote; every read past the end throws (a truncated block never decodes). */
export class ByteReader {
  pos = 0;
  constructor(private readonly buf: Uint8Array) {}
  get done(): boolean {
    return this.pos >= this.buf.length;
  }
  byte(): number {
    if (this.pos >= this.buf.length) throw new RangeError("truncated packed data");
    return this.buf[this.pos++]!;
  }
  varint(): number {
    let n = 0;
    let mul = 1;
    for (;;) {
      const b = this.byte();
      n += (b & 127) * mul;
      if (b < 128) return n;
      mul *= 128;
      if (mul > 2 ** 53) throw new RangeError("varint too long");
    }
  }
  bytes(n: number): Uint8Array {
    if (this.pos + n > this.buf.length) throw new RangeError("truncated packed data");
    const out = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }
}

function magnitudeBytes(x: bigint): Uint8Array {
  if (x === 0n) return new Uint8Array(0);
  const hex = x.toString(16);
  return Uint8Array.from(Buffer.from(hex.length % 2 === 0 ? hex : `0${hex}`, "hex"));
}

const varintLength = (n: number): number => (n < 128 ? 1 : n < 16_384 ? 2 : n < 2_097_152 ? 3 : Math.ceil(Math.log2(n + 1) / 7));

/** Writes `x` after `prev` (the previous value of the same column, or null): the shortest of the forms above. */
export function writeDecimal(w: ByteWriter, x: Scaled, prev: Scaled | null): void {
  if (prev !== null && x.m === prev.m && x.s === prev.s) {
    w.varint(0);
    return;
  }
  let s = x.s;
  let mant = x.m;
  let delta = 0;
  let mag = magnitudeBytes(mant < 0n ? -mant : mant);
  if (prev !== null) {
    const S = Math.max(x.s, prev.s);
    const d = x.m * pow10(S - x.s) - prev.m * pow10(S - prev.s);
    const dmag = magnitudeBytes(d < 0n ? -d : d);
    if (varintLength(1 + 2 * S + 1) + dmag.length < varintLength(1 + 2 * s) + mag.length) {
      s = S;
      mant = d;
      mag = dmag;
      delta = 1;
    }
  }
  w.varint(1 + 2 * s + delta);
  w.varint(2 * mag.length + (mant < 0n ? 1 : 0));
  w.bytes(mag);
}

/** Reads one value written by `writeDecimal` with the same `prev`. */
export function readDecimal(r: ByteReader, prev: Scaled | null): Scaled {
  const k = r.varint();
  if (k === 0) {
    if (prev === null) throw new RangeError("packed decimal repeats a value that does not exist");
    return prev;
  }
  const s = Math.floor((k - 1) / 2);
  const delta = (k - 1) % 2 === 1;
  const z = r.varint();
  const mag = r.bytes(Math.floor(z / 2));
  let m = mag.length === 0 ? 0n : BigInt(`0x${Buffer.from(mag).toString("hex")}`);
  if (z % 2 === 1) m = -m;
  if (!delta) return canonical(m, s);
  if (prev === null || prev.s > s) throw new RangeError("packed decimal delta without a previous value of its scale");
  return canonical(prev.m * pow10(s - prev.s) + m, s);
}
