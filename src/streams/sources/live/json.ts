/**
 * A JSON parser that keeps numbers as their source text, so a price sent as a JSON number (Jupiter's `usdPrice`)
 * becomes a Decimal from exactly the digits on the wire, never through a binary float. Node 20 has no
 * `JSON.parse` source-text access, hence this small recursive-descent reader (RFC 8259; strings decoded by
 * `JSON.parse` of the string token itself).
 */
import { MalformedPayloadError } from "./errors.ts";

/** A JSON number, as written (`0.9997073145154354`, `1e-7`). */
export class JsonNumber {
  constructor(readonly text: string) {}
}

export type LosslessJson = null | boolean | string | JsonNumber | LosslessJson[] | { [key: string]: LosslessJson };

const WS = /[ \t\n\r]*/y;
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
// eslint-disable-next-line no-control-regex
const STRING = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y;
const MAX_DEPTH = 64;
const LITERALS: ReadonlyArray<readonly [string, LosslessJson]> = [["true", true], ["false", false], ["null", null]];

/** Parses `text`; throws MalformedPayloadError (with the offset) on anything that is not one JSON value. */
export function parseLosslessJson(text: string): LosslessJson {
  let pos = 0;

  const fail = (what: string): never => {
    throw new MalformedPayloadError(`invalid JSON at offset ${pos}: ${what}`);
  };
  const skip = (): void => {
    WS.lastIndex = pos;
    WS.test(text);
    pos = WS.lastIndex;
  };
  const token = (re: RegExp): string | null => {
    re.lastIndex = pos;
    const m = re.exec(text);
    if (m === null) return null;
    pos = re.lastIndex;
    return m[0];
  };
  const expect = (ch: string): void => {
    skip();
    if (text[pos] !== ch) fail(`expected ${JSON.stringify(ch)}`);
    pos++;
  };

  const value = (depth: number): LosslessJson => {
    if (depth > MAX_DEPTH) fail("nested too deeply");
    skip();
    const c = text[pos];
    if (c === "{") {
      pos++;
      const obj: { [key: string]: LosslessJson } = Object.create(null) as { [key: string]: LosslessJson };
      skip();
      if (text[pos] === "}") {
        pos++;
        return obj;
      }
      for (;;) {
        skip();
        const key = token(STRING);
        if (key === null) fail("expected a member name");
        expect(":");
        obj[JSON.parse(key!) as string] = value(depth + 1);
        skip();
        if (text[pos] === ",") pos++;
        else if (text[pos] === "}") {
          pos++;
          return obj;
        } else fail("expected , or }");
      }
    }
    if (c === "[") {
      pos++;
      const arr: LosslessJson[] = [];
      skip();
      if (text[pos] === "]") {
        pos++;
        return arr;
      }
      for (;;) {
        arr.push(value(depth + 1));
        skip();
        if (text[pos] === ",") pos++;
        else if (text[pos] === "]") {
          pos++;
          return arr;
        } else fail("expected , or ]");
      }
    }
    if (c === '"') {
      const s = token(STRING);
      if (s === null) fail("bad string");
      return JSON.parse(s!) as string;
    }
    for (const [word, literal] of LITERALS) {
      if (text.startsWith(word, pos)) {
        pos += word.length;
        return literal;
      }
    }
    const n = token(NUMBER);
    if (n === null) fail(c === undefined ? "unexpected end" : `unexpected ${JSON.stringify(c)}`);
    return new JsonNumber(n!);
  };

  const result = value(0);
  skip();
  if (pos !== text.length) fail("trailing data");
  return result;
}

/** A plain-object check that also narrows `LosslessJson`. */
export function isJsonObject(v: unknown): v is { readonly [key: string]: LosslessJson } {
  return typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof JsonNumber);
}
