/**
 * Where a replay bundle to verify comes from: a file, `-` (standard input) or a URL (a replay-bundle URL, or an
 * alert's receipt URL `…/v1/audit/<id>`, whose bundle is one path further). One implementation for `peg-oracle verify`
 * and the client package's `peg-verify` (compiled into its build), so both read the same references the same way and
 * fail with the same words.
 */
import { readFileSync } from "node:fs";
import type { Readable } from "node:stream";

const FETCH_TIMEOUT_MS = 10_000;
const MAX_BUNDLE_BYTES = 4 * 1024 * 1024;
/** A receipt's URL (`…/v1/audit/<id>`, an alert's `receipt_url`). */
const RECEIPT_URL = /^(https?:\/\/.+?\/v1\/audit\/[0-9a-fA-F-]{36})\/?$/;

async function readStream(stream: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream as AsyncIterable<Buffer | string>) {
    const bytes = typeof chunk === "string" ? Buffer.from(chunk, "utf8") : chunk;
    size += bytes.length;
    if (size > MAX_BUNDLE_BYTES) throw new Error("bundle larger than 4 MiB");
    chunks.push(bytes);
  }
  return Buffer.concat(chunks).toString("utf8");
}

async function readText(ref: string, stdin: Readable | undefined): Promise<string> {
  if (ref === "-") {
    if (stdin === undefined) throw new Error("no standard input");
    return readStream(stdin);
  }
  if (!/^https?:\/\//i.test(ref)) return readFileSync(ref, "utf8");
  const url = ref.replace(RECEIPT_URL, "$1/replay-bundle");
  const res = await fetch(url, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS), redirect: "follow", headers: { accept: "application/json" } });
  if (!res.ok) throw new Error(`GET ${url} answered ${res.status}`);
  const text = await res.text();
  if (text.length > MAX_BUNDLE_BYTES) throw new Error("bundle larger than 4 MiB");
  return text;
}

/** The parsed JSON `ref` names. Throws an Error that says why it cannot be read (the caller prefixes the reference). */
export async function readBundleJson(ref: string, stdin: Readable | undefined): Promise<unknown> {
  const text = await readText(ref, stdin);
  try {
    return JSON.parse(text) as unknown;
  } catch (e) {
    throw new Error(`not JSON: ${e instanceof Error ? e.message : String(e)}`);
  }
}
