/**
 * The memo transaction built with @solana/kit against the local node (which decodes the wire bytes and checks the
 * Ed25519 signature itself), and the sorting of the node's errors into what the worker does about them.
 */
import { randomBytes } from "node:crypto";
import { createKeyPairSignerFromPrivateKeyBytes, type KeyPairSigner } from "@solana/kit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ANCHOR_MEMO_PROGRAM, RpcFailure, signAnchorTransaction, solanaRpc, type AnchorRpc } from "../../src/anchor/index.ts";
import { decodeTransaction, startLocalSolana, type LocalSolana } from "../support/solana-rpc.ts";
import { waitFor } from "../support/ports.ts";

let node: LocalSolana;
let rpc: AnchorRpc;
let payer: KeyPairSigner;
const MEMO = `pegoracle-v1|1.0.0|0197a1b2-c3d4-8e5f-a6b7-c8d9e0f1a2b3|${"cd".repeat(32)}`;

beforeAll(async () => {
  node = await startLocalSolana({ blockMs: 20, validBlocks: 20 });
  rpc = solanaRpc(node.url, { timeoutMs: 2000 });
  payer = await createKeyPairSignerFromPrivateKeyBytes(randomBytes(32));
  node.setBalance(payer.address, 1_000_000n);
});
afterAll(async () => {
  await node?.close();
});

async function failureOf(p: Promise<unknown>): Promise<RpcFailure> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(RpcFailure);
    return e as RpcFailure;
  }
  throw new Error("expected an RpcFailure");
}

describe("memo transaction", () => {
  it("is one v0 memo instruction signed by the fee payer; the node verifies and lands it", async () => {
    const lifetime = await rpc.latestBlockhash();
    const signed = await signAnchorTransaction(payer, MEMO, lifetime);
    const d = decodeTransaction(Buffer.from(signed.wire, "base64"));
    expect(d.version).toBe(0);
    expect(d.header.numRequiredSignatures).toBe(1);
    expect(d.instructions).toHaveLength(1);
    expect(Buffer.from(d.instructions[0]!.data).toString("utf8")).toBe(MEMO);
    expect(d.instructions[0]!.accounts).toEqual([]);

    expect(await rpc.send(signed.wire)).toBe(signed.signature);
    await waitFor(async () => ["confirmed", "finalized"].includes((await rpc.signatureStatus(signed.signature))?.confirmationStatus ?? ""), 5000, "confirmation");
    const tx = await rpc.transaction(signed.signature);
    expect(tx).not.toBeNull();
    expect(tx!.signers).toEqual([payer.address]);
    expect(tx!.memos).toEqual([{ programId: ANCHOR_MEMO_PROGRAM, text: MEMO }]);
    expect(tx!.err).toBeNull();
    expect(tx!.blockTime! % 1000).toBe(0);
    expect(node.balance(payer.address)).toBe(1_000_000n - 5000n);
    // The same bytes again: the node has processed them.
    expect((await failureOf(rpc.send(signed.wire))).kind).toBe("already_processed");
  });

  it("a tampered transaction fails the node's signature check", async () => {
    const signed = await signAnchorTransaction(payer, MEMO, await rpc.latestBlockhash());
    const bytes = Buffer.from(signed.wire, "base64");
    const at = bytes.length - 3; // a memo byte
    bytes[at] = bytes[at]! ^ 1;
    const f = await failureOf(rpc.send(bytes.toString("base64")));
    expect(f.kind).toBe("unavailable");
    expect(f.message).toMatch(/signature verification/i);
  });

  it("sorts the node's refusals: expired blockhash, no account, too few lamports", async () => {
    const old = await rpc.latestBlockhash();
    await waitFor(() => node.blockHeight() > old.lastValidBlockHeight, 5000, "blockhash expiry");
    const expired = await signAnchorTransaction(payer, MEMO, old);
    expect((await failureOf(rpc.send(expired.wire))).kind).toBe("blockhash_not_found");

    const poor = await createKeyPairSignerFromPrivateKeyBytes(randomBytes(32));
    const none = await signAnchorTransaction(poor, MEMO, await rpc.latestBlockhash());
    const f1 = await failureOf(rpc.send(none.wire));
    expect(f1.kind).toBe("insufficient_funds");
    node.setBalance(poor.address, 4999n);
    const f2 = await failureOf(rpc.send(none.wire));
    expect(f2.kind).toBe("insufficient_funds");
    expect(await rpc.balance(poor.address)).toBe(4999n);
  });

  it("an unhealthy node, an HTTP 503 or a dead port are `unavailable`", async () => {
    const signed = await signAnchorTransaction(payer, MEMO, await rpc.latestBlockhash());
    node.failSends(1, "node_unhealthy");
    expect((await failureOf(rpc.send(signed.wire))).kind).toBe("unavailable");
    node.failSends(1, "http_503");
    expect((await failureOf(rpc.send(signed.wire))).kind).toBe("unavailable");
    const dead = solanaRpc("http://127.0.0.1:9", { timeoutMs: 500 });
    expect((await failureOf(dead.blockHeight())).kind).toBe("unavailable");
  });
});
