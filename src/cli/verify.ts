import { ANCHORED_STATES, ONCHAIN_EXIT, checkOnchain, isSignature, solanaRpc, type ClaimedCommit, type OnchainVerdict } from "../anchor/index.ts";
import { VERIFY_EXIT, verifyBundle, type PegState, type VerifyResult } from "../methodology/index.ts";
import { readBundleJson } from "./bundle-source.ts";
import { parseArgs, writeLine, type CliIO } from "./io.ts";

export const VERIFY_USAGE =
  "usage: peg-oracle verify <bundle.json | - | https://…/v1/audit/<id>[/replay-bundle]> [--json]\n" +
  "       [--rpc <solana-rpc-url> --signer <address>[,<address>…] [--id <alert-id>] [--tx <signature> | --api <base-url>]]";

const FETCH_TIMEOUT_MS = 10_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const BUNDLE_URL = /^(https?:\/\/.+?)\/v1\/audit\/([0-9a-fA-F-]{36})\/replay-bundle\/?$/;
const BASE58_ADDRESS = /^[1-9A-HJ-NP-Za-km-z]{32,44}$/;

/** What the on-chain check needs, from the flags and the bundle reference; or why the flags do not fit. */
interface OnchainRequest {
  readonly rpc: string;
  readonly signers: readonly string[];
  readonly id: string;
  readonly tx: string | null;
  readonly api: string | null;
}

function onchainRequest(ref: string, flags: Readonly<Record<string, string | boolean>>): OnchainRequest | null | { error: string } {
  const str = (k: string): string | null => (typeof flags[k] === "string" ? (flags[k] as string) : null);
  const rpc = str("rpc");
  const onchainFlags = ["signer", "id", "tx", "api"].filter((k) => str(k) !== null);
  if (rpc === null) return onchainFlags.length === 0 ? null : { error: `--${onchainFlags[0]} needs --rpc (the on-chain check reads the transaction from a Solana node)` };
  if (!/^https?:\/\/[^/\s]+/i.test(rpc)) return { error: "--rpc must be an http(s) URL of a Solana JSON-RPC node" };
  const signerText = str("signer");
  if (signerText === null) return { error: "--signer is required with --rpc: the fee payer address(es) you trust to anchor receipts" };
  const signers = signerText.split(",").map((s) => s.trim()).filter((s) => s !== "");
  const badSigner = signers.find((s) => !BASE58_ADDRESS.test(s));
  if (signers.length === 0 || badSigner !== undefined) return { error: `--signer must be base58 Solana addresses, comma-separated${badSigner === undefined ? "" : ` (not ${JSON.stringify(badSigner)})`}` };
  const fromUrl = BUNDLE_URL.exec(ref);
  const id = (str("id") ?? fromUrl?.[2] ?? "").toLowerCase();
  if (!UUID.test(id)) return { error: "the on-chain check needs the receipt id: give --id, or the bundle as …/v1/audit/<id>/replay-bundle" };
  const tx = str("tx");
  if (tx !== null && !isSignature(tx)) return { error: "--tx must be a base58 transaction signature (64 bytes)" };
  const api = str("api")?.replace(/\/+$/, "") ?? fromUrl?.[1] ?? null;
  if (tx === null && api === null) return { error: "the on-chain check needs the transaction: give --tx, --api <service base URL>, or the bundle URL" };
  if (api !== null && !/^https?:\/\/[^/\s]+/i.test(api)) return { error: "--api must be an http(s) base URL" };
  return { rpc, signers, id, tx, api };
}

const notVerifiable = (message: string): OnchainVerdict => ({ exit: 5, verdict: "NOT_VERIFIABLE", message });

/** Asks the service which transaction anchors the receipt. A verdict when it does not name one. */
async function claimedCommit(api: string, id: string, finalState: PegState | null): Promise<ClaimedCommit | OnchainVerdict> {
  const url = `${api}/v1/audit/${id}/onchain`;
  let res: Response;
  let body: Record<string, unknown>;
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS), headers: { accept: "application/json" } });
    body = (await res.json()) as Record<string, unknown>;
  } catch (e) {
    return notVerifiable(`cannot ask ${url}: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (res.status === 200 && body["commit_status"] === "committed" && typeof body["tx_sig"] === "string") {
    return {
      tx_sig: body["tx_sig"],
      ...(typeof body["slot"] === "number" ? { slot: body["slot"] } : {}),
      ...(typeof body["block_time"] === "string" ? { block_time: body["block_time"] } : {}),
      ...(typeof body["memo"] === "string" ? { memo: body["memo"] } : {}),
      ...(typeof body["signer"] === "string" ? { signer: body["signer"] } : {}),
    };
  }
  const status = typeof body["commit_status"] === "string" ? body["commit_status"] : null;
  if (res.status === 404 && status === "not_applicable") {
    // DRIFT, PEGGED and UNKNOWN are never anchored; a DEPEG-or-worse one was skipped by the cost budget.
    const why = finalState !== null && ANCHORED_STATES.has(finalState) ? "skipped by the daily commit budget" : "never anchored for this state";
    return { exit: 0, verdict: "ANCHORED", message: `no on-chain anchor applies (not_applicable: ${why})` };
  }
  if (res.status === 404 && status !== null) return notVerifiable(`the service reports commit_status ${status}: ${String(body["message"] ?? "")}`);
  return notVerifiable(`${url} answered ${res.status}${typeof body["error"] === "string" ? ` (${body["error"]})` : ""}`);
}

async function verifyOnchain(req: OnchainRequest, bundle: Record<string, unknown>, receiptSha: string): Promise<OnchainVerdict> {
  const computed = bundle["expected_computed"] as Record<string, unknown> | undefined;
  const finalState = typeof computed?.["final_state"] === "string" ? (computed["final_state"] as PegState) : null;
  let claim: ClaimedCommit;
  if (req.tx !== null) claim = { tx_sig: req.tx };
  else {
    const c = await claimedCommit(req.api!, req.id, finalState);
    if ("exit" in c) return c;
    claim = c;
  }
  const expected = { methodology_version: String(bundle["methodology_version"]), alert_id: req.id, receipt_sha256: receiptSha };
  return checkOnchain(solanaRpc(req.rpc), expected, claim, req.signers);
}

/**
 * `verify`: offline re-derivation of a replay bundle (methodology section 8), then, with `--rpc`, the on-chain anchor.
 * Exit 0 PASS, 1 hash or verdict mismatch, 2 unreadable or invalid input (or flags), 3 methodology version differs
 * from this build's, 4 the on-chain anchor does not match (memo, signer, failed transaction), 5 the anchor is not
 * verifiable yet (not committed, not confirmed, node or service unreachable).
 */
export async function verifyCommand(args: readonly string[], io: CliIO): Promise<number> {
  const { positionals, flags, error } = parseArgs(args, { json: "boolean", rpc: "string", signer: "string", id: "string", tx: "string", api: "string" });
  if (error !== null || positionals.length !== 1) {
    writeLine(io.stderr, error ?? VERIFY_USAGE);
    return VERIFY_EXIT.invalid;
  }
  const ref = positionals[0]!;
  const req = onchainRequest(ref, flags);
  if (req !== null && "error" in req) {
    writeLine(io.stderr, `${req.error}\n${VERIFY_USAGE}`);
    return VERIFY_EXIT.invalid;
  }
  let result: VerifyResult;
  let parsed: unknown;
  try {
    parsed = await readBundleJson(ref, io.stdin);
    result = verifyBundle(parsed);
  } catch (e) {
    result = { exit: 2, verdict: "INVALID", message: `cannot read ${ref}: ${e instanceof Error ? e.message : String(e)}` };
  }
  let onchain: OnchainVerdict | null = null;
  // The anchor is only worth checking for a receipt that verifies offline: it commits to the recomputed hash.
  if (req !== null && result.exit === VERIFY_EXIT.pass && result.receipt_sha256 !== undefined) {
    onchain = await verifyOnchain(req, parsed as Record<string, unknown>, result.receipt_sha256);
  }
  const exit = onchain !== null && onchain.exit !== ONCHAIN_EXIT.anchored ? onchain.exit : result.exit;
  if (flags["json"] === true) {
    writeLine(io.stdout, JSON.stringify({ bundle: ref, ...result, exit, ...(onchain === null ? {} : { onchain }) }));
  } else {
    writeLine(result.exit === 0 ? io.stdout : io.stderr, `${result.verdict} ${ref}: ${result.message}`);
    if (onchain !== null) writeLine(onchain.exit === 0 ? io.stdout : io.stderr, `ONCHAIN ${onchain.verdict}: ${onchain.message}`);
  }
  return exit;
}
