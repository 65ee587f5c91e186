/**
 * `client.auditLog()` and `client.alerts()` against a real HTTP server (node:http on a random port) holding a ledger
 * of rows: the audit walk follows `next_before` across three pages, sending the cursor back byte for byte and the
 * same filters each time, until the cursor is null; the alerts walk pages by offset and yields a row once even when a
 * new transition shifts the pages under it; `max` and `pageSize` bound the requests; a page answered 503 is retried;
 * the caller's signal stops the walk.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { ApiError, PegClient, type AlertRow, type AuditRow } from "@peg-oracle/client";
import { httpServerForSuite } from "../support/http-server.ts";

/** Requests seen: path and query. */
let seen: URL[] = [];
/** The ledger, newest first. */
let ledger: AuditRow[] = [];
let alerts: AlertRow[] = [];
/** Runs before a request is answered (to publish a transition mid-walk). */
let beforeAnswer: ((url: URL) => void) | null = null;
/** Answer the next request with this status instead (once). */
let failNext: number | null = null;

const id = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, "0")}`;
const at = (n: number) => new Date(Date.UTC(2026, 10, 20) + n * 60_000).toISOString();

function auditRow(n: number): AuditRow {
  return { id: id(n), asset: "USDC", from_state: "PEGGED", to_state: "DRIFT", detected_at: at(n), receipt_url: `/v1/audit/${id(n)}` } as unknown as AuditRow;
}
function alertRow(n: number): AlertRow {
  return { id: id(n), asset: "USDC", from_state: "PEGGED", to_state: "DRIFT", detected_at: at(n) } as unknown as AlertRow;
}

/** Cursors the server hands out: opaque tokens it maps back to a position (as a signed cursor would be). */
const cursors = new Map<string, number>();

const api = httpServerForSuite((req, res) => {
  const url = new URL(req.url!, "http://x");
  seen.push(url);
  beforeAnswer?.(url);
  const send = (status: number, body: unknown) => res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
  if (failNext !== null) {
    const status = failNext;
    failNext = null;
    send(status, { error: "not_ready", message: "busy" });
    return;
  }
  const limit = Number(url.searchParams.get("limit") ?? 50);
  if (url.pathname === "/v1/audit") {
    const before = url.searchParams.get("before");
    let from = 0;
    if (before !== null) {
      const pos = cursors.get(before);
      if (pos === undefined) {
        send(400, { error: "invalid_query", message: "bad cursor" });
        return;
      }
      from = pos;
    }
    const page = ledger.slice(from, from + limit);
    let next: string | null = null;
    if (from + limit < ledger.length) {
      next = `opaque.${cursors.size}+/=~${Math.random().toString(36).slice(2)}`;
      cursors.set(next, from + limit);
    }
    send(200, { ok: true, generated_at: at(0), count: page.length, data: page, next_before: next });
    return;
  }
  if (url.pathname === "/v1/alerts") {
    const offset = Number(url.searchParams.get("offset") ?? 0);
    const page = alerts.slice(offset, offset + limit);
    send(200, { ok: true, generated_at: at(0), count: page.length, data: page });
    return;
  }
  send(404, { error: "not_found", message: "no route" });
});

beforeEach(() => {
  seen = [];
  beforeAnswer = null;
  failNext = null;
  cursors.clear();
  ledger = Array.from({ length: 25 }, (_, i) => auditRow(100 - i));
  alerts = Array.from({ length: 25 }, (_, i) => alertRow(100 - i));
});

const instant = { setTimeout: (fn: () => void) => setTimeout(fn, 0), clearTimeout: (h: unknown) => clearTimeout(h as ReturnType<typeof setTimeout>) };
const client = () => new PegClient({ baseUrl: api.base, timers: instant });

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

describe("client.auditLog()", () => {
  it("walks three pages by next_before until it is null, sending the cursor back as received and the filters each time", async () => {
    const rows = await collect(client().auditLog({ asset: "USDC", state: "DRIFT", from: at(0), to: at(200) }, { pageSize: 10 }));
    expect(rows.map((r) => r.id)).toEqual(ledger.map((r) => r.id));
    expect(seen).toHaveLength(3);
    const [first, second, third] = seen as [URL, URL, URL];
    expect(first.searchParams.get("before")).toBeNull();
    // The cursor is not a pattern the client knows: it went back exactly as it came (percent-encoding undone).
    expect([...cursors.keys()]).toEqual([second.searchParams.get("before"), third.searchParams.get("before")]);
    for (const u of seen) {
      expect(u.searchParams.get("asset")).toBe("USDC");
      expect(u.searchParams.get("state")).toBe("DRIFT");
      expect(u.searchParams.get("from")).toBe(at(0));
      expect(u.searchParams.get("to")).toBe(at(200));
      expect(u.searchParams.get("limit")).toBe("10");
    }
  });

  it("stops at max (asking no more than it needs), starts after a given cursor, and retries a page answered 503", async () => {
    const firstFive = await collect(client().auditLog({}, { pageSize: 10, max: 5 }));
    expect(firstFive.map((r) => r.id)).toEqual(ledger.slice(0, 5).map((r) => r.id));
    expect(seen.map((u) => u.searchParams.get("limit"))).toEqual(["5"]);

    seen = [];
    const twelve = await collect(client().auditLog({}, { pageSize: 10, max: 12 }));
    expect(twelve).toHaveLength(12);
    expect(seen.map((u) => u.searchParams.get("limit"))).toEqual(["10", "2"]);

    // Resume from the cursor a walk stopped at.
    seen = [];
    const page = await client().get("/v1/audit", { params: { query: { limit: 10 } } });
    beforeAnswer = (u) => {
      if (u.searchParams.has("before") && seen.length === 2) failNext = 503;
    };
    const rest = await collect(client().auditLog({ before: page.next_before! }, { pageSize: 10 }));
    expect(rest.map((r) => r.id)).toEqual(ledger.slice(10).map((r) => r.id));
    expect(seen).toHaveLength(4); // the first page, then 503 and its retry, then the last page
  });

  it("stops when the signal aborts, and a loop that breaks asks for no further page", async () => {
    const ac = new AbortController();
    const got: AuditRow[] = [];
    let err: unknown = null;
    try {
      for await (const row of client().auditLog({}, { pageSize: 10, signal: ac.signal })) {
        got.push(row);
        if (got.length === 10) ac.abort();
      }
    } catch (e) {
      err = e;
    }
    expect(got).toHaveLength(10);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ code: "network_error" });
    expect(seen).toHaveLength(1);

    seen = [];
    for await (const row of client().auditLog({}, { pageSize: 10 })) if (row.id === ledger[3]!.id) break;
    expect(seen).toHaveLength(1);
  });
});

describe("client.alerts()", () => {
  it("walks pages by offset until a short page, yielding each transition once when new ones shift the pages", async () => {
    let published = 0;
    beforeAnswer = (u) => {
      // Two transitions arrive before the second page is read and one before the third: rows move down.
      const offset = Number(u.searchParams.get("offset") ?? 0);
      const n = offset === 10 ? 2 : offset > 10 && published === 2 ? 1 : 0;
      for (let i = 0; i < n; i++) alerts.unshift(alertRow(200 + ++published));
    };
    const before = alerts.map((a) => a.id);
    const rows = await collect(client().alerts({ since: at(0) }, { pageSize: 10 }));
    expect(rows.map((r) => r.id)).toEqual(before);
    expect(seen.map((u) => [u.searchParams.get("offset"), u.searchParams.get("limit"), u.searchParams.get("since")])).toEqual([
      [null, "10", at(0)],
      ["10", "10", at(0)],
      ["20", "10", at(0)],
    ]);
  });

  it("ends on an empty first page and stops at max", async () => {
    alerts = [];
    expect(await collect(client().alerts())).toEqual([]);
    expect(seen).toHaveLength(1);
    alerts = Array.from({ length: 25 }, (_, i) => alertRow(100 - i));
    seen = [];
    expect(await collect(client().alerts({}, { max: 3 }))).toHaveLength(3);
    expect(seen.map((u) => u.searchParams.get("limit"))).toEqual(["3"]);
    expect(() => client().alerts({}, { pageSize: 0 })).toThrow(RangeError);
    expect(() => client().auditLog({}, { max: -1 })).toThrow(RangeError);
  });
});
