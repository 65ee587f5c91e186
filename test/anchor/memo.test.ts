import { describe, expect, it } from "vitest";
import { MEMO_PREFIX, MemoFormatError, anchorMemo, parseAnchorMemo } from "../../src/anchor/index.ts";

const ID = "0197a1b2-c3d4-8e5f-a6b7-c8d9e0f1a2b3";
const SHA = "ab".repeat(32);

describe("anchor memo", () => {
  it("is pegoracle-v1|version|alert_id|receipt_sha256 and parses back", () => {
    const memo = anchorMemo({ methodology_version: "1.0.0", alert_id: ID, receipt_sha256: SHA });
    expect(memo).toBe(`pegoracle-v1|1.0.0|${ID}|${SHA}`);
    expect(MEMO_PREFIX).toBe("pegoracle-v1");
    expect(parseAnchorMemo(memo)).toEqual({ methodology_version: "1.0.0", alert_id: ID, receipt_sha256: SHA });
    // 12 + 1 + 5 + 1 + 36 + 1 + 64: well inside a transaction.
    expect(Buffer.byteLength(memo)).toBe(120);
  });

  it("refuses fields that would make an ambiguous or unverifiable memo", () => {
    const ok = { methodology_version: "1.0.0", alert_id: ID, receipt_sha256: SHA };
    const field = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        expect(e).toBeInstanceOf(MemoFormatError);
        return (e as MemoFormatError).field;
      }
      return null;
    };
    expect(field(() => anchorMemo({ ...ok, methodology_version: "1.0|0" }))).toBe("methodology_version");
    expect(field(() => anchorMemo({ ...ok, methodology_version: "" }))).toBe("methodology_version");
    expect(field(() => anchorMemo({ ...ok, alert_id: ID.toUpperCase() }))).toBe("alert_id");
    expect(field(() => anchorMemo({ ...ok, receipt_sha256: SHA.slice(1) }))).toBe("receipt_sha256");
    expect(field(() => anchorMemo({ ...ok, receipt_sha256: SHA.toUpperCase() }))).toBe("receipt_sha256");
  });

  it("parses only exact anchor memos", () => {
    const field = (text: string) => {
      try {
        parseAnchorMemo(text);
      } catch (e) {
        return (e as MemoFormatError).field;
      }
      return null;
    };
    expect(field(`pegoracle-v2|1.0.0|${ID}|${SHA}`)).toBe("prefix");
    expect(field(`PEGORACLE-V1|1.0.0|${ID}|${SHA}`)).toBe("prefix");
    expect(field(`pegoracle-v1|1.0.0|${ID}`)).toBe("parts");
    expect(field(`pegoracle-v1|1.0.0|${ID}|${SHA}|extra`)).toBe("parts");
    expect(field(`pegoracle-v1|1.0.0|not-a-uuid|${SHA}`)).toBe("alert_id");
    expect(field(`pegoracle-v1|1.0.0|${ID}|${SHA} `)).toBe("receipt_sha256");
    expect(field(`pegoracle-v1||${ID}|${SHA}`)).toBe("methodology_version");
    expect(field(`pegoracle-v1|1.0.0|${ID}|${SHA}`)).toBeNull();
  });
});
