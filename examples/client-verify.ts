/**
 * Verifies the latest receipts of a running service offline, with `verifyReceipt` (`@peg-oracle/client`): the same
 * methodology code the CLI's `npx peg-oracle verify` runs re-derives each verdict and recomputes each hash on this
 * machine.
 *
 *   npm start                                                          # in another terminal; the simulated market's
 *                                                                      # first transition comes about 40 s after start
 *   node --import tsx examples/client-verify.ts [BASE_URL] [--limit N]  # default http://localhost:8080, 10 receipts
 *
 * One line per receipt: `PASS <id> <asset> <from> -> <to> sha256=<hash>` or `FAIL <id> …: <why>`. A receipt still
 * being written (202) is waited for, as its `Retry-After` says. Exit 0 when every receipt passes, 1 when one does
 * not, 2 on bad arguments or an unreachable service.
 */
import { fileURLToPath } from "node:url";
import { ApiError, PegClient, verifyReceipt, type Schemas } from "@peg-oracle/client";

/** A receipt's replay bundle; a 202 (receipt still being written) is retried after its Retry-After, up to `waitMs`. */
export async function replayBundleOf(client: PegClient, id: string, waitMs = 30_000, sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))): Promise<Schemas["ReplayBundle"]> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const answer = await client.get("/v1/audit/{id}/replay-bundle", { params: { path: { id } } });
    if ("schema_version" in answer) return answer;
    if (Date.now() >= deadline) throw new Error(`receipt ${id} is still being written after ${waitMs} ms`);
    await sleep(2_000); // the 202's Retry-After
  }
}

/** Verifies the newest `limit` receipts; prints one line each and returns how many failed. */
export async function verifyLatest(client: PegClient, limit: number, print: (line: string) => void): Promise<{ checked: number; failed: number }> {
  const alerts = await client.get("/v1/alerts", { params: { query: { limit } } });
  let failed = 0;
  for (const a of alerts.data) {
    const bundle = await replayBundleOf(client, a.id);
    const v = verifyReceipt(bundle);
    if (v.ok) print(`PASS ${a.id} ${a.asset} ${a.from_state} -> ${a.to_state} sha256=${v.receiptSha256 ?? ""}`);
    else {
      failed++;
      print(`${v.verdict} ${a.id} ${a.asset} ${a.from_state} -> ${a.to_state}: ${v.message}`);
    }
  }
  return { checked: alerts.data.length, failed };
}

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  const at = args.indexOf("--limit");
  const limit = at >= 0 ? Number(args[at + 1]) : 10;
  const rest = at >= 0 ? [...args.slice(0, at), ...args.slice(at + 2)] : args;
  if (!Number.isInteger(limit) || limit < 1 || limit > 100 || rest.length > 1) {
    process.stderr.write("usage: node --import tsx examples/client-verify.ts [BASE_URL] [--limit N (1-100)]\n");
    return 2;
  }
  const baseUrl = rest[0] ?? "http://localhost:8080";
  try {
    const { checked, failed } = await verifyLatest(new PegClient({ baseUrl }), limit, (line) => process.stdout.write(`${line}\n`));
    if (checked === 0) process.stderr.write("no transitions yet: the simulated market's first one comes about 40 s after start\n");
    return failed === 0 ? 0 : 1;
  } catch (e) {
    if (e instanceof ApiError && e.code === "network_error") {
      process.stderr.write(`cannot reach ${baseUrl} (is \`npm start\` running?): ${e.message}\n`);
      return 2;
    }
    throw e;
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exitCode = await main();
