/**
 * Walking the two list endpoints page by page as one sequence of rows: `/v1/audit` by its `next_before` cursor (kept
 * opaque: sent back exactly as received), `/v1/alerts` by `offset`, the only way that route pages.
 */
import type { components, operations } from "./generated/schema.ts";

/** A row of `/v1/alerts`: one published transition. */
export type AlertRow = components["schemas"]["AlertRow"];
/** A row of `/v1/audit`: one receipt of the ledger. */
export type AuditRow = components["schemas"]["AuditIndexRow"];

/** The filters of `/v1/alerts` (`since`: an RFC 3339 lower bound on `detected_at`); the pager sets `limit` and `offset`. */
export type AlertFilters = Omit<NonNullable<operations["getV1Alerts"]["parameters"]["query"]>, "limit" | "offset">;

/**
 * The filters of `/v1/audit` (`state`, `asset`, `from`, `to`; `before`: start after a cursor a previous walk ended
 * on). The pager sets `limit`. An omitted `to` is "now" at each request and `from` defaults to `to` minus 7 days:
 * give both for a fixed window.
 */
export type AuditFilters = Omit<NonNullable<operations["getV1Audit"]["parameters"]["query"]>, "limit">;

export interface PageOptions {
  /** Rows asked for per request (the API's `limit`): default 100, at most 500 for alerts and 100 for the audit ledger. */
  readonly pageSize?: number;
  /** Stop after this many rows (default: every row). */
  readonly max?: number;
  /** Cancels the walk: the request in flight (or its retry wait) is aborted and the loop throws `ApiError` `network_error`. */
  readonly signal?: AbortSignal;
}

type AlertQuery = NonNullable<operations["getV1Alerts"]["parameters"]["query"]>;
type AuditQuery = NonNullable<operations["getV1Audit"]["parameters"]["query"]>;
type AlertPage = components["schemas"]["AlertList"];
type AuditPage = components["schemas"]["AuditIndex"];

function bounds(options: PageOptions): { pageSize: number; max: number } {
  const pageSize = options.pageSize ?? 100;
  if (!(Number.isSafeInteger(pageSize) && pageSize >= 1)) throw new RangeError("pageSize must be a positive integer");
  const max = options.max ?? Number.POSITIVE_INFINITY;
  if (!(max === Number.POSITIVE_INFINITY || (Number.isSafeInteger(max) && max >= 0))) throw new RangeError("max must be a non-negative integer");
  return { pageSize, max };
}

/**
 * The audit ledger's rows, newest first, across pages until `next_before` is null. The cursor is passed back as it
 * came, never read: the service may change what it holds (and sign it).
 */
export function auditRows(getPage: (query: AuditQuery, signal?: AbortSignal) => Promise<AuditPage>, filters: AuditFilters, options: PageOptions): AsyncGenerator<AuditRow, void, undefined> {
  const { pageSize, max } = bounds(options); // a bad bound throws at the call, not at the first page
  return walkAudit(getPage, filters, pageSize, max, options.signal);
}

async function* walkAudit(getPage: (query: AuditQuery, signal?: AbortSignal) => Promise<AuditPage>, filters: AuditFilters, pageSize: number, max: number, signal: AbortSignal | undefined): AsyncGenerator<AuditRow, void, undefined> {
  let yielded = 0;
  let before = filters.before;
  while (yielded < max) {
    const page = await getPage({ ...filters, ...(before === undefined ? {} : { before }), limit: Math.min(pageSize, max - yielded) }, signal);
    for (const row of page.data) {
      yield row;
      if (++yielded >= max) return;
    }
    if (page.next_before === null || page.data.length === 0) return;
    before = page.next_before;
  }
}

/**
 * The transitions of `/v1/alerts`, newest first, across pages until one comes back short. The route pages by offset,
 * so a transition published during the walk shifts the later pages by one: the pager skips a row it already yielded
 * (by `id`) and misses none. The service serves offsets up to 10,000: a deeper walk fails there with `ApiError`
 * `invalid_query` (walk `auditLog` by time window instead).
 */
export function alertRows(getPage: (query: AlertQuery, signal?: AbortSignal) => Promise<AlertPage>, filters: AlertFilters, options: PageOptions): AsyncGenerator<AlertRow, void, undefined> {
  const { pageSize, max } = bounds(options);
  return walkAlerts(getPage, filters, pageSize, max, options.signal);
}

async function* walkAlerts(getPage: (query: AlertQuery, signal?: AbortSignal) => Promise<AlertPage>, filters: AlertFilters, pageSize: number, max: number, signal: AbortSignal | undefined): AsyncGenerator<AlertRow, void, undefined> {
  const seen = new Set<string>();
  let yielded = 0;
  let offset = 0;
  while (yielded < max) {
    const limit = Math.min(pageSize, max - yielded);
    const page = await getPage({ ...filters, limit, ...(offset === 0 ? {} : { offset }) }, signal);
    for (const row of page.data) {
      if (seen.has(row.id)) continue;
      seen.add(row.id);
      yield row;
      if (++yielded >= max) return;
    }
    if (page.data.length < limit) return;
    offset += page.data.length;
  }
}
