/**
 * Strict base64url (RFC 4648 section 5, no padding) for JWT segments. Node's decoder is lenient: it skips unknown
 * characters, accepts `=` and ignores the unused low bits of the last character, so several strings decode to the same
 * bytes. A token must have exactly one spelling, otherwise a changed character in the signature can still verify; we
 * accept a segment only if re-encoding its bytes gives back the same text.
 */

const ALPHABET = /^[A-Za-z0-9_-]*$/;

/** The bytes of a canonical unpadded base64url string, or null when `text` is not one. */
export function decodeBase64url(text: string): Buffer | null {
  if (!ALPHABET.test(text) || text.length % 4 === 1) return null;
  const bytes = Buffer.from(text, "base64url");
  return bytes.toString("base64url") === text ? bytes : null;
}

export function encodeBase64url(bytes: Uint8Array | string): string {
  return Buffer.from(bytes).toString("base64url");
}
