/**
 * An incremental Server-Sent Events decoder (WHATWG HTML "event stream interpretation", the subset a client of a
 * data-only stream needs): lines end in LF, CR or CRLF, even when a CRLF is split across two chunks; `data:` lines
 * accumulate, a blank line dispatches the event, `:` comments and other fields (`event`, `id`, `retry`) are ignored.
 * Chunks may cut a line, or a UTF-8 character (decode with `TextDecoder` in stream mode before `push`), anywhere.
 */
import { PayloadTooLargeError } from "./errors.ts";

const LINE_END = /[\r\n]/g;

export class SseDecoder {
  readonly #maxEventChars: number;
  #partial = "";
  #data: string[] | null = null;
  #dataChars = 0;
  #skipLf = false;

  /** `maxEventChars` caps one event (its unfinished line plus its data lines); beyond it `push` throws. */
  constructor(maxEventChars = 1 << 20) {
    this.#maxEventChars = maxEventChars;
  }

  /** Feeds decoded text; returns the `data` of every event it completed, in order. */
  push(text: string): string[] {
    const events: string[] = [];
    let start = 0;
    if (this.#skipLf && text.startsWith("\n")) start = 1;
    this.#skipLf = false;
    LINE_END.lastIndex = start;
    for (let m = LINE_END.exec(text); m !== null; m = LINE_END.exec(text)) {
      const end = m.index;
      const line = this.#partial + text.slice(start, end);
      this.#partial = "";
      this.#line(line, events);
      start = end + 1;
      if (text[end] === "\r") {
        if (end + 1 === text.length) this.#skipLf = true;
        else if (text[end + 1] === "\n") start = end + 2;
      }
      LINE_END.lastIndex = start;
    }
    this.#partial += text.slice(start);
    if (this.#partial.length + this.#dataChars > this.#maxEventChars) {
      this.reset();
      throw new PayloadTooLargeError(this.#maxEventChars);
    }
    return events;
  }

  /** Drops any half-received event (a new connection starts clean). */
  reset(): void {
    this.#partial = "";
    this.#data = null;
    this.#dataChars = 0;
    this.#skipLf = false;
  }

  #line(line: string, events: string[]): void {
    if (line === "") {
      if (this.#data !== null) events.push(this.#data.join("\n"));
      this.#data = null;
      this.#dataChars = 0;
      return;
    }
    if (line.startsWith(":")) return;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    if (field !== "data") return;
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    (this.#data ??= []).push(value);
    this.#dataChars += value.length + 1;
    if (this.#dataChars > this.#maxEventChars) {
      this.reset();
      throw new PayloadTooLargeError(this.#maxEventChars);
    }
  }
}
