/**
 * `GET /v1/audit/{id}/onchain` through the router (answers checked against the OpenAPI document by the harness):
 * 200 with the commit once anchored, 404 with `commit_status` otherwise, and the disabled-deployment hint.
 */
import { describe, expect, it } from "vitest";
import type { OnchainCommitRecord } from "../../src/store/index.ts";
import { harness } from "../http/helpers.ts";

type Obj = Record<string, unknown>;

describe("GET /v1/audit/{id}/onchain", () => {
  it("200 with tx_sig, slot, block_time, memo and signer once committed", async () => {
    const h = harness();
    const r = h.rm.receipts.find((x) => x.to_state === "DEPEG")!;
    const stored = h.rm.stored.get(r.alert_id)!;
    h.rm.stored.set(r.alert_id, { ...stored, commit_status: "committed" });
    const memo = `pegoracle-v1|${r.methodology_version}|${r.alert_id}|${r.receipt_sha256}`;
    const commit: OnchainCommitRecord = {
      tx_sig: "5".repeat(88),
      slot: 312_000_123,
      block_time: Date.UTC(2026, 5, 12, 10, 0, 42),
      memo,
      signer: "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin",
    };
    const asked: string[] = [];
    Object.assign(h.rm, {
      onchainCommit: async (id: string) => {
        asked.push(id);
        return id === r.alert_id ? commit : undefined;
      },
    });
    const a = await h.get(`/v1/audit/${r.alert_id.toUpperCase()}/onchain`, 200);
    expect(a.body).toEqual({
      commit_status: "committed",
      tx_sig: commit.tx_sig,
      slot: commit.slot,
      block_time: "2026-06-12T10:00:42.000Z",
      memo,
      signer: commit.signer,
    });
    expect(a.headers["cache-control"]).toBe("public, max-age=300");
    expect(asked).toEqual([r.alert_id]);
  });

  it("a committed receipt whose commit row is missing is an internal error (the pipeline answers 500), not a made-up answer", async () => {
    const h = harness();
    const r = h.rm.receipts.find((x) => x.to_state === "DEPEG")!;
    h.rm.stored.set(r.alert_id, { ...h.rm.stored.get(r.alert_id)!, commit_status: "committed" });
    Object.assign(h.rm, { onchainCommit: async () => undefined });
    await expect(h.get(`/v1/audit/${r.alert_id}/onchain`, 500)).rejects.toThrow(/commit is missing/);
  });

  it("404 with commit_status for each failure, and says when anchoring is disabled", async () => {
    const h = harness();
    const r = h.rm.receipts.find((x) => x.to_state === "DEPEG")!;
    const waiting = (await h.get(`/v1/audit/${r.alert_id}/onchain`, 404)).body as Obj;
    expect(waiting).toMatchObject({ error: "not_committed_yet", commit_status: "not_committed_yet" });
    expect(waiting["message"]).toMatch(/anchoring is not enabled/);
    for (const status of ["retry_exhausted", "wallet_drained", "persistence_failed", "not_applicable"] as const) {
      h.rm.stored.set(r.alert_id, { ...h.rm.stored.get(r.alert_id)!, commit_status: status });
      expect((await h.get(`/v1/audit/${r.alert_id}/onchain`, 404)).body).toMatchObject({ error: status, commit_status: status });
    }

    const enabled = harness({ env: { SOLANA_RPC_URL: "http://127.0.0.1:8899" } });
    const e = enabled.rm.receipts.find((x) => x.to_state === "DEPEG")!;
    const body = (await enabled.get(`/v1/audit/${e.alert_id}/onchain`, 404)).body as Obj;
    expect(body).toMatchObject({ error: "not_committed_yet", commit_status: "not_committed_yet" });
    expect(body["message"]).not.toMatch(/not enabled/);
  });
});
