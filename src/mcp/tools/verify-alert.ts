/**
 * `verify_alert` (free): re-derives an alert's verdict exactly as `peg-oracle verify` does. The verdict and exit code
 * are `verifyBundle`'s, the function the CLI runs; the details (recomputed hash, re-derived state) come from the same
 * methodology functions it composes (`receiptHash`, `rederive`). By alert id the bundle is the one the service serves
 * at /v1/audit/{id}/replay-bundle; its on-chain commit status is /v1/audit/{id}/onchain, and a committed receipt is
 * checked against a Solana node with the CLI's `checkOnchain` when the server has one configured.
 */
import { z } from "zod";
import { checkOnchain, solanaRpc, type ClaimedCommit, type OnchainVerdict } from "../../anchor/index.ts";
import {
  METHODOLOGY_VERSION,
  PEG_STATES,
  ReceiptFormatError,
  computedToWire,
  receiptHash,
  rederive,
  verifyBundle,
  type ReplayBundle,
  type VerifyResult,
} from "../../methodology/index.ts";
import { COMMIT_STATUSES } from "../../store/index.ts";
import { okBody, type ApiCaller } from "../api.ts";
import { ToolError } from "../errors.ts";
import { defineTool, type ToolDef } from "../tool.ts";

const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const BASE58_ADDRESS = /^[1-9A-HJ-NP-Za-km-z]{32,44}$/;
const Hex64 = z.string().regex(/^[0-9a-f]{64}$/);
const PegState = z.enum(PEG_STATES);

export const VerifyAlertInput = z
  .strictObject({
    alert_id: z
      .string()
      .regex(UUID, "must be an alert id (a UUID)")
      .optional()
      .describe("The alert (receipt) id, a UUID such as the `id` of /v1/alerts rows or of subscribe_peg_events events. The service's own replay bundle is verified."),
    bundle: z
      .record(z.string(), z.unknown())
      .optional()
      .describe(
        "A replay bundle (the JSON object served at /v1/audit/{id}/replay-bundle, or written by `peg-oracle replay --bundles`) to verify instead of the service's copy. Give alert_id with it to also report that alert's on-chain commit.",
      ),
    trusted_signers: z
      .array(z.string().regex(BASE58_ADDRESS, "must be a base58 Solana address"))
      .min(1)
      .max(10)
      .optional()
      .describe(
        "Fee-payer addresses you trust to anchor receipts (like `peg-oracle verify --signer`). Default: the signer the service reports for the commit, which proves the memo is on chain but not who paid for it.",
      ),
  })
  .refine((a) => a.alert_id !== undefined || a.bundle !== undefined, { message: "give alert_id, or bundle (or both)" });

const ChainCheck = z.object({
  verdict: z.enum(["ANCHORED", "MISMATCH", "NOT_VERIFIABLE"]),
  exit_code: z.int().describe("What `peg-oracle verify --rpc` exits with for this check: 0 anchored, 4 mismatch, 5 not verifiable yet."),
  message: z.string(),
});

const Onchain = z.object({
  commit_status: z.enum(COMMIT_STATUSES).describe("The service's anchoring status of the receipt (committed: its hash is in an SPL Memo transaction)."),
  tx_sig: z.string().optional(),
  slot: z.int().optional(),
  block_time: z.string().optional(),
  memo: z.string().optional(),
  signer: z.string().optional(),
  message: z.string().optional().describe("Why the receipt is not committed, when it is not."),
  chain_check: ChainCheck.nullable().describe("The commit read back from a Solana node; null when not committed, not verified offline, or no Solana RPC is configured."),
});

export const VerifyAlertOutput = z.object({
  source: z.enum(["alert_id", "bundle"]).describe("Whose bundle was verified: the service's (alert_id) or the one given."),
  alert_id: z.string().nullable(),
  verdict: z.enum(["PASS", "FAIL", "INVALID", "VERSION_MISMATCH"]).describe("`peg-oracle verify`'s verdict: PASS only when the hash and the re-derived verdict both match."),
  exit_code: z.int().describe("The exit code `peg-oracle verify` gives this bundle: 0 pass, 1 mismatch, 2 invalid, 3 other methodology version (4 / 5 from the on-chain check)."),
  message: z.string(),
  hash_match: z.boolean().nullable().describe("Whether the recomputed receipt hash equals the bundle's expected_receipt_sha256; null when the bundle is unreadable."),
  receipt_sha256: Hex64.nullable().describe("The receipt hash recomputed from the bundle."),
  expected_receipt_sha256: z.string().nullable(),
  methodology_version: z.string().nullable().describe("The bundle's methodology version."),
  verifier_methodology_version: z.string().describe("The methodology this verifier implements."),
  rederived_state: PegState.nullable().describe("The state re-derived from the frozen inputs by this server's methodology code."),
  expected_state: PegState.nullable().describe("The state the receipt claims (expected_computed.final_state)."),
  onchain: Onchain.nullable().describe("The on-chain commit of the receipt; null when no alert id is known."),
});

export interface VerifyAlertDeps {
  readonly api: ApiCaller;
  /** A Solana JSON-RPC URL to read anchor transactions from; null: commits are reported, not read back. */
  readonly rpcUrl: string | null;
}

type Obj = Record<string, unknown>;
type Output = z.output<typeof VerifyAlertOutput>;

/** The details `verifyBundle` does not report: the recomputed hash and the re-derived state. */
function details(bundle: Obj, result: VerifyResult): Pick<Output, "hash_match" | "receipt_sha256" | "rederived_state"> {
  const none = { hash_match: null, receipt_sha256: null, rederived_state: null };
  if (result.exit === 2 || result.exit === 3) return none;
  try {
    const hash = receiptHash(String(bundle["methodology_version"]), String(bundle["git_sha"]), bundle["catalog_entry"], bundle["inputs_frozen"], bundle["expected_computed"]);
    const derived = rederive(bundle as unknown as ReplayBundle);
    return {
      hash_match: hash === bundle["expected_receipt_sha256"],
      receipt_sha256: hash,
      rederived_state: "skipped" in derived ? null : computedToWire(derived).final_state,
    };
  } catch (e) {
    if (e instanceof ReceiptFormatError) return none;
    throw e;
  }
}

function expectedState(bundle: Obj): Output["expected_state"] {
  const c = bundle["expected_computed"];
  const s = typeof c === "object" && c !== null ? (c as Obj)["final_state"] : undefined;
  return PegState.safeParse(s).data ?? null;
}

/** The service's commit record of an alert, and, when committed and verified offline, the chain's word on it. */
async function onchain(deps: VerifyAlertDeps, id: string, verified: VerifyResult, methodologyVersion: string, signers: readonly string[] | undefined): Promise<z.output<typeof Onchain>> {
  const a = await deps.api.get(`/v1/audit/${id}/onchain`);
  const body = (a.body ?? {}) as Obj;
  if (a.status !== 200) {
    const status = Onchain.shape.commit_status.safeParse(body["commit_status"]);
    if (!status.success) okBody(a); // an unknown id, or a failure: its ToolError
    return { commit_status: status.data!, ...(typeof body["message"] === "string" ? { message: body["message"] } : {}), chain_check: null };
  }
  const claim: ClaimedCommit = {
    tx_sig: String(body["tx_sig"]),
    ...(typeof body["slot"] === "number" ? { slot: body["slot"] } : {}),
    ...(typeof body["block_time"] === "string" ? { block_time: body["block_time"] } : {}),
    ...(typeof body["memo"] === "string" ? { memo: body["memo"] } : {}),
    ...(typeof body["signer"] === "string" ? { signer: body["signer"] } : {}),
  };
  let check: OnchainVerdict | null = null;
  // As the CLI: the anchor is only worth checking for a receipt that verifies offline (it commits to that hash).
  if (deps.rpcUrl !== null && verified.exit === 0 && verified.receipt_sha256 !== undefined) {
    const allowed = signers ?? (claim.signer === undefined ? [] : [claim.signer]);
    check = await checkOnchain(solanaRpc(deps.rpcUrl), { methodology_version: methodologyVersion, alert_id: id, receipt_sha256: verified.receipt_sha256 }, claim, allowed);
  }
  return {
    commit_status: "committed",
    ...claim,
    chain_check: check === null ? null : { verdict: check.verdict, exit_code: check.exit, message: check.message },
  };
}

export function verifyAlertTool(deps: VerifyAlertDeps): ToolDef<typeof VerifyAlertInput, typeof VerifyAlertOutput> {
  return defineTool({
    name: "verify_alert",
    title: "Verify an alert's receipt",
    description:
      "Independently re-checks a peg-state alert (a transition such as USDC PEGGED -> DEPEG): recomputes its receipt hash from the frozen inputs and re-derives the state with the published methodology, exactly as the `peg-oracle verify` command does, and reports the on-chain commit of the receipt hash. " +
      "Call it before acting on an alert, or to audit one. Give `alert_id` (from an alert feed) to verify the service's own replay bundle, or `bundle` to verify a bundle you hold. " +
      "PASS means the hash and the re-derived verdict both match; FAIL means the receipt does not reproduce; VERSION_MISMATCH means the bundle needs another methodology release. " +
      "Errors: not_found (unknown id), receipt_pending (retry after retry_after_secs), receipt_gone, invalid_input. Free.",
    input: VerifyAlertInput,
    output: VerifyAlertOutput,
    annotations: { title: "Verify an alert's receipt", readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    async run(args) {
      const id = args.alert_id?.toLowerCase() ?? null;
      let bundle: Obj;
      if (args.bundle !== undefined) bundle = args.bundle;
      else if (id !== null) bundle = okBody(await deps.api.get(`/v1/audit/${id}/replay-bundle`)) as Obj;
      else throw new ToolError("invalid_input", "give alert_id, or bundle");
      // verifyBundle answers INVALID (exit 2) for anything malformed; it throws only on a bug.
      const result = verifyBundle(bundle);
      const version = typeof bundle["methodology_version"] === "string" ? bundle["methodology_version"] : null;
      const chain = id === null ? null : await onchain(deps, id, result, version ?? METHODOLOGY_VERSION, args.trusted_signers);
      const check = chain?.chain_check ?? null;
      return {
        source: args.bundle === undefined ? "alert_id" : "bundle",
        alert_id: id,
        verdict: result.verdict,
        // `peg-oracle verify --rpc`: an on-chain check that does not anchor decides the exit code.
        exit_code: check !== null && check.exit_code !== 0 ? check.exit_code : result.exit,
        message: result.message,
        ...details(bundle, result),
        expected_receipt_sha256: typeof bundle["expected_receipt_sha256"] === "string" ? bundle["expected_receipt_sha256"] : null,
        methodology_version: version,
        verifier_methodology_version: METHODOLOGY_VERSION,
        expected_state: expectedState(bundle),
        onchain: chain,
      };
    },
  });
}
