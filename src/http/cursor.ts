/**
 * Keyset cursors as the API hands them out (`next_before`, taken back as `before`): opaque and tamper-evident. A
 * cursor is the position (instant, id) of the last row of a page followed by a truncated HMAC-SHA256 tag over the
 * listing it pages and that position, under a key derived from the deployment's secrets key (`SecretBox.derive`
 * with CURSOR_KEY_PURPOSE), so a cursor one process issued pages on every other process of the deployment, and
 * across restarts. A cursor that was altered, truncated, forged or issued for another listing does not verify: a 400
 * `invalid_cursor`, never another page. A new secrets key invalidates the cursors issued under the old one (a client
 * starts again from the first page).
 *
 * Text: unpadded base64url of 42 bytes, the instant (unsigned 64-bit big-endian epoch ms), the id's 16 bytes and 18
 * bytes (144 bits) of tag: 56 characters with no spare bits, so every text is one byte string and a change of any
 * character changes the bytes the tag covers or the tag itself.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { ApiError } from "./errors.ts";
import { CURSOR_MAX_MS, CURSOR_PATTERN, type AuditCursor } from "./schemas/query.ts";

/** The purpose the cursor key is derived for from the secrets key (`SecretBox.derive`). */
export const CURSOR_KEY_PURPOSE = "http-cursor-v1";

const POSITION_BYTES = 24;
const TAG_BYTES = 18;
const UUID_TEXT = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Issues and checks cursors. `listing` names what a cursor pages (`audit`, `deliveries:<webhook id>`): a cursor
 * verifies only for the listing it was issued for.
 */
export interface CursorCodec {
  /** The cursor of a position. A RangeError when the instant is outside 0..CURSOR_MAX_MS or the id is no UUID. */
  encode(listing: string, position: AuditCursor): string;
  /** The position of a cursor this codec issued for `listing` (the id in lowercase), else null. */
  decode(listing: string, text: string): AuditCursor | null;
  /** `decode`, or a 400 `invalid_cursor` that says what to do. */
  verify(listing: string, text: string): AuditCursor;
}

/** A codec under `key` (32 bytes, from `SecretBox.derive(CURSOR_KEY_PURPOSE)`). */
export function cursorCodec(key: Uint8Array): CursorCodec {
  if (key.length < 32) throw new RangeError(`a cursor key is at least 32 bytes, got ${key.length}`);
  const k = Buffer.from(key); // a private copy
  const tag = (listing: string, position: Uint8Array): Buffer =>
    createHmac("sha256", k).update(`peg-oracle cursor\0${listing}\0`, "utf8").update(position).digest().subarray(0, TAG_BYTES);
  const decode = (listing: string, text: string): AuditCursor | null => {
    if (!CURSOR_PATTERN.test(text)) return null;
    const bytes = Buffer.from(text, "base64url");
    const position = bytes.subarray(0, POSITION_BYTES);
    if (!timingSafeEqual(bytes.subarray(POSITION_BYTES), tag(listing, position))) return null;
    const at = Number(position.readBigUInt64BE(0));
    if (at > CURSOR_MAX_MS) return null; // never issued: encode refuses it
    const hex = position.toString("hex", 8, 24);
    return { detected_at: at, id: `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}` };
  };
  return {
    encode: (listing, c) => {
      if (!Number.isSafeInteger(c.detected_at) || c.detected_at < 0 || c.detected_at > CURSOR_MAX_MS) {
        throw new RangeError(`cursor instant out of range: ${String(c.detected_at)}`);
      }
      if (!UUID_TEXT.test(c.id)) throw new RangeError("cursor id must be a UUID");
      const position = Buffer.alloc(POSITION_BYTES);
      position.writeBigUInt64BE(BigInt(c.detected_at), 0);
      position.write(c.id.replace(/-/g, ""), 8, "hex");
      return Buffer.concat([position, tag(listing, position)]).toString("base64url");
    },
    decode,
    verify: (listing, text) => {
      const c = decode(listing, text);
      if (c === null) {
        throw new ApiError(
          "invalid_cursor",
          `invalid query parameter before=${JSON.stringify(text.slice(0, 64))}: not a next_before this listing issued (altered, truncated, from another listing or from before a secrets-key change); start again from the first page`,
        );
      }
      return c;
    },
  };
}

/**
 * A codec under a random key of this process, for route tables built without the deployment's key (the stdio
 * agent tools, tests): its cursors page only in this process. The service passes the deployment's key.
 */
export function processCursorCodec(): CursorCodec {
  return cursorCodec(randomBytes(32));
}
