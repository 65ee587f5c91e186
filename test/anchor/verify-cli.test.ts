/**
 * `peg-oracle verify … --rpc … --signer …`: the on-chain half of the verifier against the local Solana node and a
 * small stand-in for the service's audit routes (the replay bundle of a genuine engine receipt, and whatever
 * `/onchain` answer a case needs). Exit 0 anchored, 4 mismatch, 5 not verifiable yet, 2 bad flags; an offline failure
 * keeps its own code and the chain is not consulted.
 */
import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createKeyPairSignerFromPrivateKeyBytes, type KeyPairSigner } from "@solana/kit";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { signAnchorTransaction, solanaRpc } from "../../src/anchor/index.ts";
import { verifyCommand } from "../../src/cli/verify.ts";
import { base58Encode } from "../../src/catalog/base58.ts";
import { replayBundle, type Receipt } from "../../src/methodology/index.ts";
import { runEngine } from "../store/fixtures.ts";
import { waitFor } from "../support/ports.ts";
import { MEMO_PROGRAMS, startLocalSolana, type LocalSolana } from "../support/solana-rpc.ts";
import { captureCli } from "../support/child.ts";

type Obj = Record<string, unknown>;

const randomSig = () => base58Encode(randomBytes(64));

const receipts = runEngine().receipts;
const depeg: Receipt = receipts.find((r) => r.to_state === "DEPEG")!;
const back: Receipt = receipts.find((r) => r.from_state === "DEPEG" && r.to_state === "PEGGED")!;
const memoOf = (r: Receipt, sha = r.receipt_sha256) => `pegoracle-v1|${r.methodology_version}|${r.alert_id}|${sha}`;

let node: LocalSolana;
let payer: KeyPairSigner;
let api: Server;
let base: string;
/** The `/onchain` answer per alert id. */
const onchain = new Map<string, { status: number; body: Obj }>();
/** Replaces a bundle (e.g. tampered) per alert id. */
const bundles = new Map<string, unknown>();
let anchoredSig = "";
let anchoredSlot = 0;
let anchoredTime = "";

function cli(args: string[]) {
  return captureCli((io) => verifyCommand(args, { ...io, env: {} }));
}

async function json(args: string[]): Promise<{ code: number; body: Obj }> {
  const r = await cli([...args, "--json"]);
  return { code: r.code, body: JSON.parse(r.out) as Obj };
}

const bundleUrl = (r: Receipt) => `${base}/v1/audit/${r.alert_id}/replay-bundle`;
const committed = (over: Obj = {}) => ({
  status: 200,
  body: { commit_status: "committed", tx_sig: anchoredSig, slot: anchoredSlot, block_time: anchoredTime, memo: memoOf(depeg), signer: payer.address, ...over },
});

beforeAll(async () => {
  node = await startLocalSolana({ blockMs: 20 });
  payer = await createKeyPairSignerFromPrivateKeyBytes(randomBytes(32));
  node.setBalance(payer.address, 1_000_000n);
  const rpc = solanaRpc(node.url);
  const signed = await signAnchorTransaction(payer, memoOf(depeg), await rpc.latestBlockhash());
  await rpc.send(signed.wire);
  await waitFor(() => node.landed().length === 1, 5000, "the anchor to land");
  await waitFor(async () => (await rpc.transaction(signed.signature)) !== null, 5000, "confirmation");
  const landed = node.landed()[0]!;
  anchoredSig = landed.signature;
  anchoredSlot = landed.slot!;
  anchoredTime = new Date(landed.blockTime! * 1000).toISOString();

  api = createServer((req, res) => {
    const m = /^\/v1\/audit\/([0-9a-f-]{36})\/(replay-bundle|onchain)$/.exec(req.url ?? "");
    const r = m === null ? undefined : receipts.find((x) => x.alert_id === m[1]);
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    if (m === null || r === undefined) return send(404, { error: "not_found", message: "no such receipt" });
    if (m[2] === "replay-bundle") return send(200, bundles.get(r.alert_id) ?? replayBundle(r));
    const a = onchain.get(r.alert_id) ?? { status: 404, body: { error: "not_found", message: "unknown" } };
    send(a.status, a.body);
  });
  await new Promise<void>((resolve) => api.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await node?.close();
  await new Promise<void>((r) => (api ? api.close(() => r()) : r()));
});
beforeEach(() => {
  onchain.clear();
  bundles.clear();
  onchain.set(depeg.alert_id, committed());
  onchain.set(back.alert_id, { status: 404, body: { error: "not_applicable", commit_status: "not_applicable", message: "never anchored" } });
});

describe("verify: on-chain anchor", () => {
  it("exit 0: the bundle passes offline and its memo is on chain, signed by an allowed signer", async () => {
    const r = await json([bundleUrl(depeg), "--rpc", node.url, "--signer", `${"1".repeat(32)},${payer.address}`]);
    expect(r.code).toBe(0);
    expect(r.body).toMatchObject({ verdict: "PASS", exit: 0, receipt_sha256: depeg.receipt_sha256 });
    expect(r.body["onchain"]).toEqual({
      exit: 0,
      verdict: "ANCHORED",
      message: `memo ${memoOf(depeg)} confirmed at slot ${anchoredSlot}, signed by ${payer.address}`,
      tx_sig: anchoredSig,
      slot: anchoredSlot,
      block_time: anchoredTime,
      signer: payer.address,
    });
    // Without the service: the id and the signature given directly.
    const direct = await cli([bundleUrl(depeg), "--rpc", node.url, "--signer", payer.address, "--tx", anchoredSig]);
    expect(direct.code).toBe(0);
    expect(direct.out).toContain("ONCHAIN ANCHORED");
  });

  it("exit 0 without a check for a transition that is never anchored (not_applicable)", async () => {
    const r = await json([bundleUrl(back), "--rpc", node.url, "--signer", payer.address]);
    expect(r.code).toBe(0);
    expect((r.body["onchain"] as Obj)["message"]).toMatch(/not_applicable: never anchored for this state/);
  });

  it("exit 4: a signer outside the allow-list", async () => {
    const other = await createKeyPairSignerFromPrivateKeyBytes(randomBytes(32));
    const r = await json([bundleUrl(depeg), "--rpc", node.url, "--signer", other.address]);
    expect(r.code).toBe(4);
    expect(r.body).toMatchObject({ verdict: "PASS", exit: 4, onchain: { exit: 4, verdict: "MISMATCH" } });
    expect((r.body["onchain"] as Obj)["message"]).toMatch(/not on the signer allow-list/);
  });

  it("exit 4: the transaction carries another receipt's memo, a malformed memo, two memos, or failed", async () => {
    const plantAndCheck = async (sig: string, memos: { program: string; data: Uint8Array }[], err: unknown, why: RegExp) => {
      node.plant({ signature: sig, signers: [payer.address], memos, ...(err === null ? {} : { err }) });
      const r = await json([bundleUrl(depeg), "--rpc", node.url, "--signer", payer.address, "--tx", sig]);
      expect(r.code, why.source).toBe(4);
      expect((r.body["onchain"] as Obj)["message"]).toMatch(why);
    };
    const text = (s: string) => ({ program: MEMO_PROGRAMS[1]!, data: new TextEncoder().encode(s) });
    await plantAndCheck(randomSig(), [text(memoOf(depeg, "0".repeat(64)))], null, /receipt_sha256 is 0{64}, the receipt's is/);
    await plantAndCheck(randomSig(), [text(memoOf(back))], null, /alert_id is .*, the receipt's is/);
    await plantAndCheck(randomSig(), [text(`pegoracle-v1|1.0.0|${depeg.alert_id}`)], null, /not an anchor memo/);
    await plantAndCheck(randomSig(), [text(memoOf(depeg)), text(memoOf(depeg))], null, /2 memo instructions, expected exactly 1/);
    await plantAndCheck(randomSig(), [], null, /0 memo instructions/);
    await plantAndCheck(randomSig(), [{ program: MEMO_PROGRAMS[1]!, data: Uint8Array.of(0xff, 0xfe) }], null, /not UTF-8/);
    await plantAndCheck(randomSig(), [text(memoOf(depeg))], { InstructionError: [0, "InvalidInstructionData"] }, /failed on chain/);
  });

  it("exit 4: the service's claim contradicts the chain (slot, signer, memo)", async () => {
    for (const [over, why] of [
      [{ slot: anchoredSlot + 1 }, /reports slot/],
      [{ memo: memoOf(depeg, "f".repeat(64)) }, /reports memo/],
      [{ block_time: "2020-01-01T00:00:00.000Z" }, /reports block time/],
      [{ tx_sig: "7".repeat(88) }, /is not a transaction signature/],
    ] as const) {
      onchain.set(depeg.alert_id, committed(over));
      const r = await json([bundleUrl(depeg), "--rpc", node.url, "--signer", payer.address]);
      expect(r.code, why.source).toBe(4);
      expect((r.body["onchain"] as Obj)["message"]).toMatch(why);
    }
  });

  it("exit 5: not committed yet, a failed commit, an unknown signature, an unreachable node or service", async () => {
    for (const status of ["not_committed_yet", "retry_exhausted", "wallet_drained", "persistence_failed"]) {
      onchain.set(depeg.alert_id, { status: 404, body: { error: status, commit_status: status, message: "x" } });
      const r = await json([bundleUrl(depeg), "--rpc", node.url, "--signer", payer.address]);
      expect(r.code, status).toBe(5);
      expect((r.body["onchain"] as Obj)["message"]).toContain(`commit_status ${status}`);
    }
    const unknown = await json([bundleUrl(depeg), "--rpc", node.url, "--signer", payer.address, "--tx", randomSig()]);
    expect(unknown.code).toBe(5);
    expect((unknown.body["onchain"] as Obj)["message"]).toMatch(/not confirmed on this node/);
    onchain.set(depeg.alert_id, committed());
    const deadNode = await json([bundleUrl(depeg), "--rpc", "http://127.0.0.1:9", "--signer", payer.address]);
    expect(deadNode.code).toBe(5);
    const deadApi = await json([bundleUrl(depeg), "--rpc", node.url, "--signer", payer.address, "--api", "http://127.0.0.1:9"]);
    expect(deadApi.code).toBe(5);
  });

  it("an offline failure keeps its code (1) and the chain is not consulted", async () => {
    const tampered = { ...replayBundle(depeg), expected_receipt_sha256: "e".repeat(64) };
    bundles.set(depeg.alert_id, tampered);
    const calls = node.calls["getTransaction"] ?? 0;
    const r = await json([bundleUrl(depeg), "--rpc", node.url, "--signer", payer.address]);
    expect(r.code).toBe(1);
    expect(r.body).not.toHaveProperty("onchain");
    expect(node.calls["getTransaction"] ?? 0).toBe(calls);
  });

  it("exit 2 for flags that cannot make an on-chain check", async () => {
    const cases: [string[], RegExp][] = [
      [[bundleUrl(depeg), "--rpc", node.url], /--signer is required/],
      [[bundleUrl(depeg), "--signer", payer.address], /--signer needs --rpc/],
      [[bundleUrl(depeg), "--rpc", node.url, "--signer", "not-an-address!"], /base58 Solana addresses/],
      [[bundleUrl(depeg), "--rpc", "ftp://x", "--signer", payer.address], /--rpc must be an http/],
      [["bundle.json", "--rpc", node.url, "--signer", payer.address], /needs the receipt id/],
      [["bundle.json", "--rpc", node.url, "--signer", payer.address, "--id", depeg.alert_id], /needs the transaction/],
      [[bundleUrl(depeg), "--rpc", node.url, "--signer", payer.address, "--tx", "0OIl"], /--tx must be a base58/],
      [[bundleUrl(depeg), "--rpc", node.url, "--signer", payer.address, "--tx", "7".repeat(88)], /--tx must be a base58 transaction signature \(64 bytes\)/],
    ];
    for (const [args, why] of cases) {
      const r = await cli(args);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.err).toMatch(why);
    }
  });
});
