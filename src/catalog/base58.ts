/**
 * Base58 with the Bitcoin alphabet, as Solana prints addresses. No dependency: the catalog only needs to check that a
 * mint is well formed, and the quadratic schoolbook conversion is fast enough for 32-byte keys.
 */

export const BASE58_ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

/** ASCII code -> digit value, -1 for characters outside the alphabet (0, O, I and l among them). */
const DIGIT: readonly number[] = (() => {
  const table = new Array<number>(128).fill(-1);
  for (let i = 0; i < BASE58_ALPHABET.length; i++) table[BASE58_ALPHABET.charCodeAt(i)] = i;
  return table;
})();

/** A character outside the base58 alphabet. `position` is the zero-based UTF-16 index in the input. */
export class Base58Error extends Error {
  readonly code = "invalid_base58";
  constructor(
    readonly position: number,
    readonly char: string,
  ) {
    super(`invalid base58 character ${JSON.stringify(char)} at position ${position}`);
    this.name = "Base58Error";
  }
}

/**
 * Decodes base58 text to bytes. Each leading `1` is one leading zero byte; the empty string decodes to no bytes.
 * Throws Base58Error on the first character outside the alphabet.
 */
export function base58Decode(text: string): Uint8Array {
  let zeros = 0;
  while (zeros < text.length && text.charCodeAt(zeros) === 49 /* "1" */) zeros++;
  // Little-endian base-256 digits of the value after the leading ones.
  const bytes: number[] = [];
  for (let i = zeros; i < text.length; i++) {
    const code = text.charCodeAt(i);
    let carry = code < 128 ? (DIGIT[code] ?? -1) : -1;
    if (carry < 0) throw new Base58Error(i, String.fromCodePoint(text.codePointAt(i) ?? code));
    for (let j = 0; j < bytes.length; j++) {
      carry += bytes[j]! * 58;
      bytes[j] = carry & 0xff;
      carry >>= 8;
    }
    while (carry > 0) {
      bytes.push(carry & 0xff);
      carry >>= 8;
    }
  }
  const out = new Uint8Array(zeros + bytes.length);
  for (let k = 0; k < bytes.length; k++) out[zeros + k] = bytes[bytes.length - 1 - k]!;
  return out;
}

/** Encodes bytes as base58; each leading zero byte becomes a leading `1`. The inverse of base58Decode. */
export function base58Encode(bytes: Uint8Array): string {
  let zeros = 0;
  while (zeros < bytes.length && bytes[zeros] === 0) zeros++;
  // Little-endian base-58 digits of the value after the leading zero bytes.
  const digits: number[] = [];
  for (let i = zeros; i < bytes.length; i++) {
    let carry = bytes[i]!;
    for (let j = 0; j < digits.length; j++) {
      carry += digits[j]! * 256;
      digits[j] = carry % 58;
      carry = Math.floor(carry / 58);
    }
    while (carry > 0) {
      digits.push(carry % 58);
      carry = Math.floor(carry / 58);
    }
  }
  let out = "1".repeat(zeros);
  for (let k = digits.length - 1; k >= 0; k--) out += BASE58_ALPHABET[digits[k]!]!;
  return out;
}

/** True when `text` is base58 and decodes to exactly `length` bytes (32 for a Solana public key). */
export function isBase58OfLength(text: string, length: number): boolean {
  try {
    return base58Decode(text).length === length;
  } catch (e) {
    if (e instanceof Base58Error) return false;
    throw e;
  }
}
