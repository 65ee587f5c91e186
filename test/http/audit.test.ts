import { beforeEach, describe, expect, it } from "vitest";
import { auditCsv, csvField } from "../../src/http/routes/audit.ts";
import { AUDIT_CSV_LIMIT } from "../../src/http/schemas/index.ts";
import { verifyBundle } from "../../src/methodology/index.ts";
import { asset, DAY, DEAD_ID, NOW, PENDING_ID, UNKNOWN_ID } from "./fixtures.ts";
import { harness, TEST_CURSORS, type Harness } from "./helpers.ts";

type Obj = Record<string, unknown>;

let h: Harness;
beforeEach(() => {
  h = harness();
});

const byTo = (to: string) => h.rm.receipts.find((r) => r.to_state === to)!;

describe("GET /v1/audit", () => {
  it("lists the ledger newest first over the last 7 days with next_before null on the last page", async () => {
    const body = (await h.get("/v1/audit")).body as { ok: boolean; count: number; data: Obj[]; next_before: string | null };
    expect(body.count).toBe(h.rm.receipts.length);
    expect(body.next_before).toBeNull();
    const first = body.data[0]!;
    expect(Object.keys(first)).toEqual([
      "id",
      "asset",
      "from_state",
      "to_state",
      "detected_at",
      "methodology_version",
      "receipt_sha256",
      "commit_status",
      "monitoring_only",
    ]);
    expect(h.rm.auditCalls.at(-1)).toEqual({ from: NOW - 7 * DAY, to: NOW, limit: 51 });
    const depeg = body.data.find((r) => r.to_state === "DEPEG")!;
    expect(depeg).toMatchObject({ asset: "USDC", commit_status: "not_committed_yet", monitoring_only: false, receipt_sha256: byTo("DEPEG").receipt_sha256 });
    expect(body.data.find((r) => r.to_state === "DRIFT")?.commit_status).toBe("not_applicable");
  });

  it("filters by state and asset", async () => {
    const drift = (await h.get("/v1/audit?state=DRIFT")).body as { data: Obj[] };
    expect(drift.data.map((r) => r.asset)).toEqual(["USDT"]);
    const jito = (await h.get("/v1/audit?asset=jitoSOL")).body as { data: Obj[] };
    expect(jito.data.map((r) => r.to_state)).toEqual(["PEGGED", "UNKNOWN"]);
    expect(h.rm.auditCalls.at(-1)?.mint).toBe(asset("jitoSOL").mint);
  });

  it("pages with the opaque before cursor", async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const path: string = `/v1/audit?limit=2${cursor === null ? "" : `&before=${cursor}`}`;
      const body = (await h.get(path)).body as { data: Obj[]; next_before: string | null };
      seen.push(...body.data.map((r) => r.id as string));
      cursor = body.next_before;
      if (cursor !== null) {
        expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
        expect(TEST_CURSORS.decode("audit", cursor)).toEqual({ detected_at: expect.any(Number), id: body.data.at(-1)!.id });
      }
      pages++;
    } while (cursor !== null && pages < 10);
    expect(pages).toBe(3);
    const all = ((await h.get("/v1/audit")).body as { data: Obj[] }).data.map((r) => r.id);
    expect(seen).toEqual(all);
  });

  it("400 invalid_state for a state outside the five graded bands", async () => {
    for (const q of ["state=UNKNOWN", "state=drift", "state=FOO", "state=DRIFT&state=DEPEG"]) {
      expect(((await h.get(`/v1/audit?${q}`, 400)).body as Obj).error, q).toBe("invalid_state");
    }
  });

  it("400 invalid_query for a bad window or limit, invalid_cursor for a bad cursor; 404 asset_not_found for an unknown asset", async () => {
    const from = new Date(NOW - 91 * DAY).toISOString();
    for (const q of [
      `from=${from}`,
      "from=2026-06-12T12:00:00Z&to=2026-06-11T12:00:00Z",
      "to=tomorrow",
      "limit=0",
      "limit=101",
      "limit=2.5",
    ]) {
      expect(((await h.get(`/v1/audit?${q}`, 400)).body as Obj).error, q).toBe("invalid_query");
    }
    for (const q of ["before=not-a-cursor!", `before=${Buffer.from('{"t":"x","id":"y"}').toString("base64url")}`, `before=${"A".repeat(56)}`]) {
      expect(((await h.get(`/v1/audit?${q}`, 400)).body as Obj).error, q).toBe("invalid_cursor");
    }
    await h.get(`/v1/audit?from=${new Date(NOW - 90 * DAY).toISOString()}`);
    expect((await h.get("/v1/audit?asset=usdc", 404)).body).toMatchObject({ error: "asset_not_found", asset: "usdc" });
  });
});

describe("GET /v1/audit.csv", () => {
  it("exports the ledger as RFC 4180 CSV with a header row, rate-limited in its own bucket", async () => {
    const a = await h.get("/v1/audit.csv?state=DEPEG");
    expect(a.contentType).toMatch(/^text\/csv/);
    expect(a.headers["content-disposition"]).toContain("audit.csv");
    const lines = a.text!.split("\r\n");
    expect(lines[0]).toBe("id,asset,from_state,to_state,detected_at,methodology_version,receipt_sha256,commit_status,monitoring_only");
    expect(lines.at(-1)).toBe("");
    const r = byTo("DEPEG");
    expect(lines[1]).toBe(`${r.alert_id},USDC,PEGGED,DEPEG,${r.detected_at},1.0.0,${r.receipt_sha256},not_committed_yet,false`);
    expect(lines).toHaveLength(3);
    expect(h.rm.auditCalls.at(-1)?.limit).toBe(AUDIT_CSV_LIMIT.default);
    const route = h.routes.find((x) => x.path === "/v1/audit.csv")!;
    expect(route.bucket).toEqual({ name: "audit_csv", perMinute: 10 });
    const all = await h.get("/v1/audit.csv");
    expect(all.text!.trimEnd().split("\r\n")).toHaveLength(h.rm.receipts.length + 1);
  });

  it("quotes fields per RFC 4180", () => {
    expect(csvField("USD*")).toBe("USD*");
    expect(csvField('a,"b"')).toBe('"a,""b"""');
    expect(csvField("x\ny")).toBe('"x\ny"');
    expect(csvField("x\ry")).toBe('"x\ry"');
    expect(auditCsv([])).toBe("id,asset,from_state,to_state,detected_at,methodology_version,receipt_sha256,commit_status,monitoring_only\r\n");
  });

  it("takes the same filters and refuses the same bad values", async () => {
    expect(((await h.get("/v1/audit.csv?state=UNKNOWN", 400)).body as Obj).error).toBe("invalid_state");
    expect(((await h.get("/v1/audit.csv?limit=50001", 400)).body as Obj).error).toBe("invalid_query");
    expect(((await h.get("/v1/audit.csv?asset=NOPE", 404)).body as Obj).error).toBe("asset_not_found");
  });
});

describe("GET /v1/audit/{id}", () => {
  it("200 the persisted receipt", async () => {
    const r = byTo("UNKNOWN");
    const body = (await h.get(`/v1/audit/${r.alert_id}`)).body as Obj;
    expect(body).toMatchObject({
      id: r.alert_id,
      asset: "jitoSOL",
      mint: r.mint,
      from_state: "PEGGED",
      to_state: "UNKNOWN",
      detected_at: r.detected_at,
      methodology_version: "1.0.0",
      receipt_sha256: r.receipt_sha256,
      state_reason: "premium_sanity",
      evidence_status: "ready",
      commit_status: "not_applicable",
      replay_bundle_url: `/v1/audit/${r.alert_id}/replay-bundle`,
      monitoring_only: false,
    });
    expect(body.inputs_frozen).toEqual(r.inputs_frozen);
    expect(body.computed).toEqual(r.computed);
    expect(body).not.toHaveProperty("onchain_tx_sig");
    // Upper-case ids are the same id.
    await h.get(`/v1/audit/${r.alert_id.toUpperCase()}`);
  });

  it("202 pending with Retry-After: 2 when the alert is known but its receipt is not persisted", async () => {
    const a = await h.get(`/v1/audit/${PENDING_ID}`, 202);
    expect(a.body).toEqual({ id: PENDING_ID, evidence_status: "pending" });
    expect(a.headers["retry-after"]).toBe("2");
    // An alert row without its receipt is pending too.
    const r = byTo("DRIFT");
    h.rm.stored.delete(r.alert_id);
    expect((await h.get(`/v1/audit/${r.alert_id}`, 202)).body).toEqual({ id: r.alert_id, evidence_status: "pending" });
  });

  it("410 gone when the receipt was dead-lettered; 404 not_found for an unknown or malformed id", async () => {
    expect(((await h.get(`/v1/audit/${DEAD_ID}`, 410)).body as Obj).error).toBe("gone");
    expect(((await h.get(`/v1/audit/${UNKNOWN_ID}`, 404)).body as Obj).error).toBe("not_found");
    for (const bad of ["not-a-uuid", "123", "0f0e0d0c0b0a890887060504030201000"]) {
      expect(((await h.get(`/v1/audit/${bad}`, 404)).body as Obj).error, bad).toBe("not_found");
    }
  });
});

describe("GET /v1/audit/{id}/detail", () => {
  it("adds the catalog entry, the dwell timeline and a human summary", async () => {
    const r = byTo("DEPEG");
    const body = (await h.get(`/v1/audit/${r.alert_id}/detail`)).body as Obj;
    expect(body.catalog_entry).toEqual(asset("USDC").entry);
    expect(body.dwell).toEqual({ candidate_since: r.inputs_frozen.candidate_since, committed_at: r.detected_at, dwell_secs: 30 });
    expect(body.summary).toContain("USDC moved from PEGGED to DEPEG");
    expect(body.summary).toContain("after 30 s of dwell");
    expect(body.receipt_sha256).toBe(r.receipt_sha256);
    // A gate transition has no dwell.
    const gate = byTo("UNKNOWN");
    const g = (await h.get(`/v1/audit/${gate.alert_id}/detail`)).body as Obj;
    expect(g.dwell).toEqual({ candidate_since: null, committed_at: gate.detected_at, dwell_secs: null });
    expect(g.summary).toContain("premium_sanity gate published UNKNOWN");
  });

  it("answers 202, 410 and 404 like the receipt", async () => {
    await h.get(`/v1/audit/${PENDING_ID}/detail`, 202);
    await h.get(`/v1/audit/${DEAD_ID}/detail`, 410);
    await h.get(`/v1/audit/${UNKNOWN_ID}/detail`, 404);
  });
});

describe("GET /v1/audit/{id}/onchain", () => {
  it("404 with error = commit_status while not anchored", async () => {
    const depeg = await h.get(`/v1/audit/${byTo("DEPEG").alert_id}/onchain`, 404);
    expect(depeg.body).toMatchObject({ error: "not_committed_yet", commit_status: "not_committed_yet" });
    const drift = await h.get(`/v1/audit/${byTo("DRIFT").alert_id}/onchain`, 404);
    expect(drift.body).toMatchObject({ error: "not_applicable", commit_status: "not_applicable" });
    const dead = await h.get(`/v1/audit/${DEAD_ID}/onchain`, 404);
    expect(dead.body).toMatchObject({ error: "persistence_failed", commit_status: "persistence_failed" });
    const pending = await h.get(`/v1/audit/${PENDING_ID}/onchain`, 404);
    expect(pending.body).toMatchObject({ error: "not_committed_yet", commit_status: "not_committed_yet" });
    const unknown = await h.get(`/v1/audit/${UNKNOWN_ID}/onchain`, 404);
    expect(unknown.body).toMatchObject({ error: "not_found" });
    expect(unknown.body).not.toHaveProperty("commit_status");
  });
});

describe("GET /v1/audit/{id}/replay-bundle", () => {
  it("serves the methodology replay bundle, which the offline verifier passes", async () => {
    const r = byTo("DEPEG");
    const body = (await h.get(`/v1/audit/${r.alert_id}/replay-bundle`)).body as Obj;
    expect(body).toMatchObject({
      schema_version: "1",
      methodology_version: "1.0.0",
      git_sha: "",
      expected_receipt_sha256: r.receipt_sha256,
      state_reason: null,
    });
    expect(verifyBundle(body)).toMatchObject({ exit: 0, verdict: "PASS" });
    const gate = (await h.get(`/v1/audit/${byTo("UNKNOWN").alert_id}/replay-bundle`)).body as Obj;
    expect(gate.state_reason).toBe("premium_sanity");
    expect(verifyBundle(gate).exit).toBe(0);
  });

  it("answers 202, 410 and 404 like the receipt", async () => {
    await h.get(`/v1/audit/${PENDING_ID}/replay-bundle`, 202);
    await h.get(`/v1/audit/${DEAD_ID}/replay-bundle`, 410);
    await h.get("/v1/audit/nope/replay-bundle", 404);
  });
});
