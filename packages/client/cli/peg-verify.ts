/**
 * `peg-verify`: re-derives a receipt from its replay bundle, offline, and answers as `peg-oracle verify` does (the same
 * line, the same `--json` object, the same exit codes): 0 PASS, 1 FAIL (hash or verdict differs), 2 INVALID (not a
 * readable replay bundle, or bad arguments), 3 VERSION_MISMATCH (another methodology version).
 *
 *   npx peg-verify bundle.json
 *   curl -s https://oracle.example/v1/audit/<id>/replay-bundle | npx peg-verify -
 *   npx peg-verify https://oracle.example/v1/audit/<id>            # the alert's receipt URL: its bundle is fetched
 *
 * Node only (it reads files, stdin and URLs); the verification itself is the package's `verifyReceipt`.
 */
import { parseArgs } from "node:util";
import { readBundleJson } from "../../../src/cli/bundle-source.ts";
import { verifyReceipt } from "../src/index.ts";

const USAGE = "usage: peg-verify <bundle.json | - | https://…/v1/audit/<id>[/replay-bundle]> [--json]";

async function main(argv: readonly string[]): Promise<number> {
  let ref: string;
  let json: boolean;
  try {
    const { values, positionals } = parseArgs({ args: [...argv], options: { json: { type: "boolean" }, help: { type: "boolean", short: "h" } }, allowPositionals: true });
    if (values.help === true) {
      process.stdout.write(`${USAGE}\n`);
      return 0;
    }
    if (positionals.length !== 1) throw new Error(USAGE);
    ref = positionals[0]!;
    json = values.json === true;
  } catch (e) {
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n`);
    return 2;
  }
  let verdict: { exit: 0 | 1 | 2 | 3; verdict: string; message: string; receipt_sha256?: string };
  try {
    const parsed = await readBundleJson(ref, process.stdin);
    const v = verifyReceipt(parsed);
    verdict = { exit: v.exit, verdict: v.verdict, message: v.message, ...(v.receiptSha256 === null ? {} : { receipt_sha256: v.receiptSha256 }) };
  } catch (e) {
    verdict = { exit: 2, verdict: "INVALID", message: `cannot read ${ref}: ${e instanceof Error ? e.message : String(e)}` };
  }
  if (json) process.stdout.write(`${JSON.stringify({ bundle: ref, ...verdict })}\n`);
  else (verdict.exit === 0 ? process.stdout : process.stderr).write(`${verdict.verdict} ${ref}: ${verdict.message}\n`);
  return verdict.exit;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exitCode = 2;
  },
);
