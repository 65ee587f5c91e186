import { readFileSync } from "node:fs";
import { VERIFY_EXIT, verifyBundle, type VerifyResult } from "../methodology/index.ts";
import { parseArgs, writeLine, type CliIO } from "./io.ts";

export const VERIFY_USAGE = "usage: peg-oracle verify <bundle.json|https://…/replay-bundle> [--json]";

const FETCH_TIMEOUT_MS = 10_000;
const MAX_BUNDLE_BYTES = 4 * 1024 * 1024;

async function readBundle(ref: string): Promise<string> {
  if (/^https?:\/\//i.test(ref)) {
    const res = await fetch(ref, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS), redirect: "follow" });
    if (!res.ok) throw new Error(`GET ${ref} answered ${res.status}`);
    const text = await res.text();
    if (text.length > MAX_BUNDLE_BYTES) throw new Error("bundle larger than 4 MiB");
    return text;
  }
  return readFileSync(ref, "utf8");
}

/**
 * `verify`: offline re-derivation of a replay bundle (methodology section 8). Exit 0 PASS, 1 hash or verdict mismatch,
 * 2 unreadable or invalid input, 3 methodology version differs from this build's.
 */
export async function verifyCommand(args: readonly string[], io: CliIO): Promise<number> {
  const { positionals, flags, error } = parseArgs(args, { json: "boolean" });
  if (error !== null || positionals.length !== 1) {
    writeLine(io.stderr, error ?? VERIFY_USAGE);
    return VERIFY_EXIT.invalid;
  }
  const ref = positionals[0]!;
  let result: VerifyResult;
  try {
    const text = await readBundle(ref);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (e) {
      throw new Error(`not JSON: ${e instanceof Error ? e.message : String(e)}`);
    }
    result = verifyBundle(parsed);
  } catch (e) {
    result = { exit: 2, verdict: "INVALID", message: `cannot read ${ref}: ${e instanceof Error ? e.message : String(e)}` };
  }
  if (flags["json"] === true) writeLine(io.stdout, JSON.stringify({ bundle: ref, ...result }));
  else writeLine(result.exit === 0 ? io.stdout : io.stderr, `${result.verdict} ${ref}: ${result.message}`);
  return result.exit;
}
