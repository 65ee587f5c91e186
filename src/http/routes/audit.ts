/**
 * Audit receipts (interface 4.4, addendum A, methodology section 8): the ledger index and its CSV export, receipt
 * lookup (200 / 202 / 404 / 410), detail, on-chain commit status and the replay bundle.
 */
import { replayBundle, timestampToWire, type EpochMs, type PegState } from "../../methodology/index.ts";
import type { StoredReceipt } from "../../store/index.ts";
import type { CursorCodec } from "../cursor.ts";
import { ApiError, assetNotFound, invalidQuery, notFound } from "../errors.ts";
import type { AuditQuery, AuditRow, ReadModel } from "../read-model.ts";
import {
  AUDIT_CSV_LIMIT,
  AUDIT_DEFAULT_WINDOW_MS,
  AUDIT_LIMIT,
  AUDIT_MAX_WINDOW_MS,
  AuditCsvQueryParams,
  AuditDetail,
  AuditIndex,
  AuditPending,
  AuditQueryParams,
  AuditReceipt,
  OnchainCommit,
  OnchainNotAnchored,
  PathParams,
  ReplayBundle,
  parseQuery,
  type AuditDetailBody,
  type AuditIndexRowBody,
  type AuditReceiptBody,
} from "../schemas/index.ts";
import type { HttpRequest, HttpResult } from "../types.ts";
import { jsonResult, type DocumentedRoute, type RouteSpec } from "./spec.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ANCHORED: ReadonlySet<PegState> = new Set(["DEPEG", "CRITICAL", "BLACK_SWAN"]);
export const RETRY_AFTER_PENDING_SECS = 2;
export const CSV_COLUMNS = [
  "id",
  "asset",
  "from_state",
  "to_state",
  "detected_at",
  "methodology_version",
  "receipt_sha256",
  "commit_status",
  "monitoring_only",
] as const;

type Lookup =
  | { readonly kind: "ready"; readonly stored: StoredReceipt }
  | { readonly kind: "pending"; readonly id: string; readonly toState: PegState | null }
  | { readonly kind: "dead"; readonly id: string };

/** Resolves an id to its receipt, or why there is none. A malformed or unknown id is a 404 `not_found`. */
async function lookup(rm: ReadModel, raw: string): Promise<Lookup> {
  const id = raw.toLowerCase();
  if (!UUID.test(id)) throw notFound(`no receipt with id "${raw.slice(0, 64)}" (ids are UUIDs)`);
  const stored = await rm.receiptById(id);
  if (stored !== undefined) return { kind: "ready", stored };
  if (await rm.deadLettered(id)) return { kind: "dead", id };
  const alert = await rm.alertById(id);
  if (alert !== undefined) return { kind: "pending", id, toState: alert.to_state };
  if (await rm.pendingAlert(id)) return { kind: "pending", id, toState: null };
  throw notFound(`no receipt with id ${id}`);
}

const gone = (id: string): ApiError =>
  new ApiError("gone", `the receipt of ${id} could not be persisted and was dead-lettered; it will not become available`);

const pending = (id: string): HttpResult =>
  jsonResult(202, { id, evidence_status: "pending" }, { "retry-after": String(RETRY_AFTER_PENDING_SECS) });

export function receiptBody(s: StoredReceipt): AuditReceiptBody {
  const r = s.receipt;
  return {
    id: r.alert_id,
    asset: r.asset,
    mint: r.mint,
    from_state: r.from_state,
    to_state: r.to_state,
    detected_at: r.detected_at,
    discount: r.discount,
    discount_bps: r.discount_bps,
    methodology_version: r.methodology_version,
    git_sha: r.git_sha,
    receipt_sha256: s.receipt_sha256,
    inputs_frozen: r.inputs_frozen as AuditReceiptBody["inputs_frozen"],
    computed: r.computed,
    ...(r.state_reason === null ? {} : { state_reason: r.state_reason }),
    evidence_status: "ready",
    commit_status: s.commit_status,
    replay_bundle_url: `/v1/audit/${r.alert_id}/replay-bundle`,
    monitoring_only: s.monitoring_only,
  };
}

const wholeSecs = (ms: number): number => Math.max(0, Math.trunc(ms / 1000));

/** The dwell timeline and a human summary of one receipt. */
export function detailBody(s: StoredReceipt): AuditDetailBody {
  const base = receiptBody(s);
  const r = s.receipt;
  const i = r.inputs_frozen;
  const c = r.computed;
  const bandChanged = c.band !== i.previous_band;
  const candidateSince = bandChanged ? i.candidate_since : null;
  const detected = Date.parse(r.detected_at);
  const dwellSecs = candidateSince === null ? null : wholeSecs(detected - Date.parse(candidateSince));
  const t = i.thresholds as Readonly<Record<string, number>>;
  const thresholdText =
    i.threshold_kind === "cr"
      ? `collateral-ratio thresholds drift ${t["cr_drift"]} / depeg ${t["cr_depeg"]} / critical ${t["cr_critical"]} / black swan ${t["cr_black_swan"]} %` +
        (i.cr === null ? "" : ` at collateral ratio ${i.cr}`)
      : `thresholds drift ${t["drift_bps"]} / depeg ${t["depeg_bps"]} / critical ${t["critical_bps"]} bps`;
  const parts = [
    `${r.asset} moved from ${r.from_state} to ${r.to_state} at ${r.detected_at}`,
    `smoothed discount ${r.discount} (${r.discount_bps} bps; raw ${c.discount_raw}) against ${thresholdText}`,
  ];
  if (bandChanged) {
    parts.push(
      `the ${c.band} band was committed ${dwellSecs === null ? "" : `after ${dwellSecs} s of dwell `}(from ${i.previous_band}, ${i.trigger === "dwell_timer" ? "by the dwell timer" : "on a sample"})`,
    );
  }
  if (c.gate !== null) parts.push(`the ${c.gate} gate published UNKNOWN over the ${c.band} band`);
  else if (r.from_state === "UNKNOWN") parts.push(`no gate fires any more, so the committed ${c.band} band is published again`);
  parts.push(`methodology ${r.methodology_version}, receipt hash ${s.receipt_sha256}`);
  return {
    ...base,
    catalog_entry: r.catalog_entry as Record<string, unknown>,
    dwell: { candidate_since: candidateSince, committed_at: r.detected_at, dwell_secs: dwellSecs },
    summary: `${parts.join("; ")}.`,
  };
}

function indexRow(r: AuditRow): AuditIndexRowBody {
  return {
    id: r.id,
    asset: r.asset,
    from_state: r.from_state as PegState,
    to_state: r.to_state as PegState,
    detected_at: timestampToWire(r.detected_at),
    methodology_version: r.methodology_version,
    receipt_sha256: r.receipt_sha256,
    commit_status: r.commit_status as AuditIndexRowBody["commit_status"],
    monitoring_only: r.monitoring_only,
  };
}

/** RFC 4180 field: quoted when it holds a quote, comma, CR or LF. */
export function csvField(v: string): string {
  return /[",\r\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v;
}

export function auditCsv(rows: readonly AuditIndexRowBody[]): string {
  const lines = [CSV_COLUMNS.join(",")];
  for (const r of rows) lines.push(CSV_COLUMNS.map((k) => csvField(String(r[k]))).join(","));
  return `${lines.join("\r\n")}\r\n`;
}

/** The listing audit cursors page (the index and the CSV export take the same `before`). */
const AUDIT_LISTING = "audit";

export function auditRoutes(rm: ReadModel, cursors: CursorCodec): DocumentedRoute[] {
  /** The ledger query of a request (filters shared by the index and the CSV export). */
  function ledgerQuery(req: HttpRequest, csv: boolean): AuditQuery {
    const q = csv ? parseQuery(req.query, AuditCsvQueryParams) : parseQuery(req.query, AuditQueryParams);
    const now = rm.clock.now();
    const to: EpochMs = q.to ?? now;
    const from: EpochMs = q.from ?? to - AUDIT_DEFAULT_WINDOW_MS;
    if (from > to) throw invalidQuery("from must not be after to");
    if (to - from > AUDIT_MAX_WINDOW_MS) throw invalidQuery("the from-to window is at most 90 days");
    let mint: string | undefined;
    if (q.asset !== undefined) {
      const a = rm.catalog.bySymbol(q.asset);
      if (a === undefined) throw assetNotFound(q.asset);
      mint = a.mint;
    }
    const limit = q.limit ?? (csv ? AUDIT_CSV_LIMIT.default : AUDIT_LIMIT.default);
    return {
      ...(q.state === undefined ? {} : { state: q.state }),
      ...(mint === undefined ? {} : { mint }),
      from,
      to,
      limit,
      ...(q.before === undefined ? {} : { before: cursors.verify(AUDIT_LISTING, q.before) }),
    };
  }

  const idParam = { id: PathParams.id };
  const lookupErrors: RouteSpec["errors"] = ["not_found", "gone", "invalid_query"];
  const pendingResponse = {
    schema: AuditPending,
    description: "The alert is known but its receipt is not persisted yet.",
    headers: { "Retry-After": { type: "integer" as const, description: "Seconds to wait before asking again." } },
  };

  return [
    {
      method: "GET",
      path: "/v1/audit",
      handler: async (req) => {
        const q = ledgerQuery(req, false);
        // One row more than the page tells whether an older page exists.
        const rows = await rm.audit({ ...q, limit: q.limit + 1 });
        const page = rows.slice(0, q.limit).map(indexRow);
        const last = rows.length > q.limit ? rows[q.limit - 1] : undefined;
        return jsonResult(200, {
          ok: true,
          generated_at: timestampToWire(rm.clock.now()),
          count: page.length,
          data: page,
          next_before: last === undefined ? null : cursors.encode(AUDIT_LISTING, { detected_at: last.detected_at, id: last.id }),
        });
      },
      spec: {
        summary: "Audit ledger",
        description: "Append-only, newest first, monitoring-only rows included. Filter by `state` (a graded band), `asset`, `from`/`to` (at most 90 days, default the last 7). Page with `before` = the previous `next_before`.",
        tags: ["audit"],
        query: AuditQueryParams,
        responses: { 200: AuditIndex },
        errors: ["invalid_query", "invalid_state", "invalid_cursor", "asset_not_found"],
      },
    },
    {
      method: "GET",
      path: "/v1/audit.csv",
      bucket: { name: "audit_csv", perMinute: 10 },
      handler: async (req) => {
        const q = ledgerQuery(req, true);
        const rows = (await rm.audit(q)).slice(0, q.limit).map(indexRow);
        return {
          status: 200,
          text: auditCsv(rows),
          contentType: "text/csv; charset=utf-8; header=present",
          headers: { "content-disposition": 'attachment; filename="audit.csv"' },
        };
      },
      spec: {
        summary: "Audit ledger as CSV",
        description: `The ledger with the same filters and columns (${CSV_COLUMNS.join(", ")}), one header row, RFC 4180 quoting and CRLF line ends, at most 50,000 rows. Rate limited to 10 requests per minute per IP.`,
        tags: ["audit"],
        query: AuditCsvQueryParams,
        responses: { 200: { schema: null, contentType: "text/csv", description: "RFC 4180 CSV with a header row." } },
        errors: ["invalid_query", "invalid_state", "invalid_cursor", "asset_not_found"],
      },
    },
    {
      method: "GET",
      path: "/v1/audit/{id}",
      handler: async (req) => {
        const l = await lookup(rm, req.params["id"] ?? "");
        if (l.kind === "dead") throw gone(l.id);
        if (l.kind === "pending") return pending(l.id);
        return jsonResult(200, receiptBody(l.stored), { "cache-control": "public, max-age=300" });
      },
      spec: {
        summary: "Receipt lookup",
        description: "200 the receipt; 202 the alert is known but its receipt is not persisted yet (Retry-After: 2); 404 unknown (or malformed) id; 410 the receipt write failed permanently and was dead-lettered.",
        tags: ["audit"],
        params: idParam,
        responses: { 200: AuditReceipt, 202: pendingResponse },
        errors: lookupErrors,
      },
    },
    {
      method: "GET",
      path: "/v1/audit/{id}/detail",
      handler: async (req) => {
        const l = await lookup(rm, req.params["id"] ?? "");
        if (l.kind === "dead") throw gone(l.id);
        if (l.kind === "pending") return pending(l.id);
        return jsonResult(200, detailBody(l.stored), { "cache-control": "public, max-age=300" });
      },
      spec: {
        summary: "Receipt detail",
        description: "The receipt plus the catalog entry it was decided under, the dwell timeline (candidate since, committed at) and a human summary. Same lookup answers as the receipt.",
        tags: ["audit"],
        params: idParam,
        responses: { 200: AuditDetail, 202: pendingResponse },
        errors: lookupErrors,
      },
    },
    {
      method: "GET",
      path: "/v1/audit/{id}/onchain",
      handler: async (req) => {
        const l = await lookup(rm, req.params["id"] ?? "");
        let status: "not_applicable" | "not_committed_yet" | "retry_exhausted" | "wallet_drained" | "persistence_failed";
        if (l.kind === "dead") status = "persistence_failed";
        else if (l.kind === "pending") status = l.toState !== null && !ANCHORED.has(l.toState) ? "not_applicable" : "not_committed_yet";
        else if (l.stored.commit_status === "committed") {
          const c = await rm.onchainCommit?.(l.stored.receipt.alert_id);
          // A committed receipt whose commit row cannot be read is a store inconsistency, not a client error.
          if (c === undefined) throw new Error(`receipt ${l.stored.receipt.alert_id} is committed but its on-chain commit is missing`);
          return jsonResult(
            200,
            { commit_status: "committed", tx_sig: c.tx_sig, slot: c.slot, block_time: timestampToWire(c.block_time), memo: c.memo, signer: c.signer },
            { "cache-control": "public, max-age=300" },
          );
        } else status = l.stored.commit_status;
        const why: Record<typeof status, string> = {
          not_applicable:
            "this transition is not anchored on chain (only transitions into DEPEG, CRITICAL or BLACK_SWAN are, within the daily commit budget)",
          not_committed_yet: rm.config.anchor.enabled
            ? "the receipt hash is not committed on chain yet"
            : "the receipt hash is not committed on chain yet: anchoring is not enabled on this deployment (SOLANA_RPC_URL unset)",
          retry_exhausted: "the on-chain commit failed after every retry",
          wallet_drained: "the commit wallet has no funds left",
          persistence_failed: "the receipt could not be persisted and was dead-lettered",
        };
        throw new ApiError(status, why[status], { body: { commit_status: status } });
      },
      spec: {
        summary: "On-chain commit",
        description:
          "200 with the SPL Memo commit (`tx_sig`, `slot`, `block_time`, `memo` = `pegoracle-v1|<methodology_version>|<alert_id>|<receipt_sha256>`, fee payer `signer`) once the receipt is anchored. While it is not, the answer is always 404 with `error` = `commit_status`: not_applicable (DRIFT, PEGGED or UNKNOWN, or over the daily commit budget), not_committed_yet, retry_exhausted, wallet_drained (the fee payer cannot pay), persistence_failed.",
        tags: ["audit"],
        params: idParam,
        responses: {
          200: { schema: OnchainCommit, description: "Anchored: the memo transaction, confirmed." },
          404: { schema: OnchainNotAnchored, description: "Not anchored: `commit_status` says why (an unknown id is an ApiError `not_found`)." },
        },
        errors: ["not_found", "invalid_query"],
      },
    },
    {
      method: "GET",
      path: "/v1/audit/{id}/replay-bundle",
      handler: async (req) => {
        const l = await lookup(rm, req.params["id"] ?? "");
        if (l.kind === "dead") throw gone(l.id);
        if (l.kind === "pending") return pending(l.id);
        return jsonResult(200, replayBundle(l.stored.receipt), { "cache-control": "public, max-age=300" });
      },
      spec: {
        summary: "Replay bundle",
        description: "Everything `peg-oracle verify` needs to recompute the receipt hash and re-derive the verdict offline.",
        tags: ["audit"],
        params: idParam,
        responses: { 200: ReplayBundle, 202: pendingResponse },
        errors: lookupErrors,
      },
    },
  ];
}
