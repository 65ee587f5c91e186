/**
 * The anchor memo (methodology section 8): `pegoracle-v1|<methodology_version>|<alert_id>|<receipt_sha256>`, written
 * with the SPL Memo program. Building and parsing live together so the worker and the verifier read one format.
 */

export const MEMO_PREFIX = "pegoracle-v1";

/** What a memo commits to. */
export interface AnchorMemoFields {
  readonly methodology_version: string;
  /** Lower-case UUID. */
  readonly alert_id: string;
  /** 64 lower-case hex digits. */
  readonly receipt_sha256: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const SHA256 = /^[0-9a-f]{64}$/;
// A dotted version: digits, letters, dots, dashes, plus; never the separator.
const VERSION = /^[0-9A-Za-z][0-9A-Za-z.+-]{0,31}$/;

/** A memo text that is not a well-formed anchor memo. `field` names the first part at fault. */
export class MemoFormatError extends Error {
  readonly code = "memo_format";
  constructor(
    readonly field: "prefix" | "parts" | "methodology_version" | "alert_id" | "receipt_sha256",
    message: string,
  ) {
    super(message);
    this.name = "MemoFormatError";
  }
}

function check(f: AnchorMemoFields): void {
  if (!VERSION.test(f.methodology_version)) throw new MemoFormatError("methodology_version", `methodology version ${JSON.stringify(f.methodology_version)} is not a dotted version`);
  if (!UUID.test(f.alert_id)) throw new MemoFormatError("alert_id", `alert id ${JSON.stringify(f.alert_id)} is not a lower-case UUID`);
  if (!SHA256.test(f.receipt_sha256)) throw new MemoFormatError("receipt_sha256", "receipt_sha256 must be 64 lower-case hex digits");
}

/** The memo text for a receipt. Throws MemoFormatError when a field would make an unparseable memo. */
export function anchorMemo(f: AnchorMemoFields): string {
  check(f);
  return `${MEMO_PREFIX}|${f.methodology_version}|${f.alert_id}|${f.receipt_sha256}`;
}

/** Parses a memo text; throws MemoFormatError unless it is exactly an anchor memo. */
export function parseAnchorMemo(text: string): AnchorMemoFields {
  const parts = text.split("|");
  if (parts[0] !== MEMO_PREFIX) throw new MemoFormatError("prefix", `memo does not start with "${MEMO_PREFIX}|"`);
  if (parts.length !== 4) throw new MemoFormatError("parts", `memo has ${parts.length} |-separated parts, expected 4`);
  const f = { methodology_version: parts[1]!, alert_id: parts[2]!, receipt_sha256: parts[3]! };
  check(f);
  return f;
}
