/**
 * The attack corpus of the payment header: every way a payment is refused, through `GET /x402/peg-feed` (the
 * PAYMENT-SIGNATURE header) and the MCP `_meta["x402/payment"]`. Each refusal is the payment-required answer (402 with
 * PAYMENT-REQUIRED, or the PaymentRequired tool result) whose `error` starts with its reason, with no data, and
 * nothing moves on chain (over HTTP a payload that cannot be read is 400 instead); a replay under concurrency is
 * accepted once.
 */
import { randomBytes } from "node:crypto";
import { address, AccountRole, createKeyPairSignerFromPrivateKeyBytes, type Instruction } from "@solana/kit";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import type { PaymentPayload, PaymentRequired } from "@x402/core/types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ataOf } from "../support/solana-token-rpc.ts";
import {
  callTool,
  challenge,
  craftTransaction,
  header,
  MAINNET_USDC,
  metricValue,
  ONE_USDC,
  paymentRequiredOf,
  payloadWith,
  reasonOf,
  startHarness,
  type X402Harness,
} from "./harness.ts";

let h: X402Harness;
let pr: PaymentRequired;
let toolPr: PaymentRequired;

beforeAll(async () => {
  h = await startHarness();
  await h.node.fund(h.payer.address, ONE_USDC, MAINNET_USDC);
  // The route's challenge: its resource is the route's URL. The MCP refusals re-address the same payloads to the tool.
  pr = decodePaymentRequiredHeader((await h.http("/x402/peg-feed")).headers["payment-required"]!);
  toolPr = await challenge(h, "get_peg_feed");
}, 60_000);

afterAll(async () => {
  await h?.close();
});

const balances = async () => [await h.node.tokens(h.payer.address), await h.node.tokens(h.payTo.address), await h.node.tokens(h.payer.address, MAINNET_USDC)];

/**
 * GET /x402/peg-feed with this PAYMENT-SIGNATURE: refused with `reason`, no data; the challenge again (402), or for a
 * payload that cannot be read 400 Invalid Payment without one (x402 transports-v2/http.md, Error Handling).
 */
async function refusedOverHttp(signature: string, reason: string): Promise<string> {
  const r = await h.http("/x402/peg-feed", { "payment-signature": signature });
  if (reason === "malformed") {
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body).toMatchObject({ error: "invalid_payment", reason });
    expect(r.headers["payment-required"]).toBeUndefined();
    return r.body["message"] as string;
  }
  expect(r.status, JSON.stringify(r.body)).toBe(402);
  expect(r.body).toMatchObject({ error: "payment_refused", reason });
  expect(r.body).not.toHaveProperty("data");
  const challenge = decodePaymentRequiredHeader(r.headers["payment-required"]!);
  expect(challenge.accepts[0]).toEqual(pr.accepts[0]);
  expect(reasonOf(challenge)).toBe(reason);
  return challenge.error!;
}

/** The same payment in `_meta["x402/payment"]`, made for the tool: the PaymentRequired tool result with the same reason. */
async function refusedOverMcp(payment: unknown, reason: string): Promise<void> {
  const forTool = typeof payment === "object" && payment !== null && "resource" in payment ? { ...payment, resource: toolPr.resource } : payment;
  const r = await callTool(h, "get_peg_feed", {}, forTool);
  const answer = paymentRequiredOf(r);
  expect(reasonOf(answer), answer.error).toBe(reason);
}

async function latestBlockhash(): Promise<string> {
  const res = await fetch(h.node.url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "getLatestBlockhash", params: [] }) });
  return ((await res.json()) as { result: { value: { blockhash: string } } }).result.value.blockhash;
}

const accepted = (over: Record<string, unknown>): PaymentPayload => ({ ...payloadWith(pr, "AAAA"), accepted: { ...pr.accepts[0]!, ...over } });

describe("the header itself", () => {
  it("not base64, not JSON, not a payload, too long: malformed", async () => {
    const before = await balances();
    for (const bad of ["!!!", "a", "e30", Buffer.from("not json").toString("base64"), header([]), header(null), header("x"), header({ x402Version: 2 }), header({ x402Version: 2, accepted: {}, payload: {} }), "A".repeat(9000)]) {
      await refusedOverHttp(bad, "malformed");
    }
    for (const bad of [[], "x", 7, { x402Version: 2, payload: {} }]) await refusedOverMcp(bad, "malformed");
    expect(await balances()).toEqual(before);
  });

  it("another protocol version, scheme or network: unsupported", async () => {
    await refusedOverHttp(header({ ...payloadWith(pr, "AAAA"), x402Version: 1 }), "unsupported");
    await refusedOverHttp(header({ ...payloadWith(pr, "AAAA"), x402Version: "2" }), "unsupported");
    await refusedOverHttp(header(accepted({ scheme: "upto" })), "unsupported");
    await refusedOverHttp(header(accepted({ network: "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp" })), "unsupported");
    await refusedOverMcp(accepted({ network: "eip155:8453" }), "unsupported");
  });

  it("`accepted` rewritten: a lower amount, another asset, another payTo, another fee payer", async () => {
    expect(await refusedOverHttp(header(accepted({ amount: "1" })), "amount")).toContain("the price is 1000");
    await refusedOverHttp(header(accepted({ asset: MAINNET_USDC })), "mint");
    await refusedOverHttp(header(accepted({ payTo: h.payer.address })), "recipient");
    await refusedOverHttp(header(accepted({ extra: { feePayer: h.payer.address } })), "requirements_mismatch");
    await refusedOverHttp(header(accepted({ maxTimeoutSeconds: 3600 })), "requirements_mismatch");
    await refusedOverMcp(accepted({ amount: "999" }), "amount");
  });

  it("a transaction that is not one: malformed", async () => {
    await refusedOverHttp(header(payloadWith(pr, "AAAA")), "malformed");
    await refusedOverHttp(header(payloadWith(pr, Buffer.from(randomBytes(200)).toString("base64"))), "malformed");
  });
});

describe("the transfer (faithful `accepted`, a transaction built to cheat)", () => {
  const payTo = () => h.payTo.address;

  it("underpaid or overpaid: amount", async () => {
    const before = await balances();
    await refusedOverHttp(header(payloadWith(pr, await craftTransaction(h, { payer: h.payer, to: payTo(), amount: 999n }))), "amount");
    await refusedOverHttp(header(payloadWith(pr, await craftTransaction(h, { payer: h.payer, to: payTo(), amount: 1001n }))), "amount");
    await refusedOverMcp(payloadWith(pr, await craftTransaction(h, { payer: h.payer, to: payTo(), amount: 1n })), "amount");
    expect(await balances()).toEqual(before);
  });

  it("another token (mainnet USDC on this devnet challenge): mint", async () => {
    await refusedOverHttp(header(payloadWith(pr, await craftTransaction(h, { payer: h.payer, to: payTo(), amount: 1000n, mint: MAINNET_USDC }))), "mint");
  });

  it("to someone else's account: recipient", async () => {
    const thief = await createKeyPairSignerFromPrivateKeyBytes(randomBytes(32));
    await h.node.fund(thief.address, 0n);
    await refusedOverHttp(header(payloadWith(pr, await craftTransaction(h, { payer: h.payer, to: thief.address, amount: 1000n }))), "recipient");
    expect(await h.node.tokens(thief.address)).toBe(0n);
  });

  it("unsigned (the payer's signature zeroed), or signed by a key that does not own the USDC", async () => {
    const wire = Buffer.from(await craftTransaction(h, { payer: h.payer, to: payTo(), amount: 1000n }), "base64");
    // Wire layout: a one-byte signature count, then 64 bytes per signature; the payer signs second (the fee payer first).
    wire.fill(0, 1 + 64, 1 + 128);
    await refusedOverHttp(header(payloadWith(pr, wire.toString("base64"))), "signature");
    const forged = Buffer.from(await craftTransaction(h, { payer: h.payer, to: payTo(), amount: 1000n }), "base64");
    forged[1 + 64 + 5]! ^= 0xff;
    await refusedOverMcp(payloadWith(pr, forged.toString("base64")), "signature");
    // A third party signs as the authority of the payer's account: the signatures hold, the transfer cannot.
    const other = await createKeyPairSignerFromPrivateKeyBytes(randomBytes(32));
    await refusedOverHttp(header(payloadWith(pr, await craftTransaction(h, { payer: h.payer, authority: other, to: payTo(), amount: 1000n }))), "simulation");
  });

  it("instructions a payment may not have: a SOL transfer out of the fee payer, the fee payer moving tokens", async () => {
    const drain: Instruction = {
      programAddress: address("11111111111111111111111111111111"),
      accounts: [
        { address: h.feePayer.address, role: AccountRole.WRITABLE_SIGNER },
        { address: h.payer.address, role: AccountRole.WRITABLE },
      ],
      data: Uint8Array.from([2, 0, 0, 0, 0, 202, 154, 59, 0, 0, 0, 0]),
    };
    const solBefore = h.node.sol(h.feePayer.address);
    await refusedOverHttp(header(payloadWith(pr, await craftTransaction(h, { payer: h.payer, to: payTo(), amount: 1000n, extra: [drain] }))), "instructions");
    // The fee payer as the transfer's authority (its own USDC): refused before anything is signed.
    await h.node.fund(h.feePayer.address, ONE_USDC);
    const selfPay = await craftTransaction(h, { payer: h.feePayer, to: payTo(), amount: 1000n });
    await refusedOverHttp(header(payloadWith(pr, selfPay)), "instructions");
    expect(h.node.sol(h.feePayer.address)).toBe(solBefore);
    expect(await h.node.tokens(h.feePayer.address)).toBe(ONE_USDC);
  });

  it("a transaction the fee payer is not the fee payer of: requirements_mismatch", async () => {
    await refusedOverHttp(header(payloadWith(pr, await craftTransaction(h, { payer: h.payer, to: payTo(), amount: 1000n, feePayer: h.payer.address }))), "requirements_mismatch");
  });

  it("no USDC to pay with: simulation", async () => {
    const poor = await h.newPayer(0n);
    await refusedOverHttp(header(payloadWith(pr, await craftTransaction(h, { payer: poor.signer, to: payTo(), amount: 1000n }))), "simulation");
    const noAccount = await createKeyPairSignerFromPrivateKeyBytes(randomBytes(32));
    expect(await ataOf(noAccount.address, pr.accepts[0]!.asset)).toBeTruthy();
    await refusedOverMcp(payloadWith(pr, await craftTransaction(h, { payer: noAccount, to: payTo(), amount: 1000n })), "simulation");
  });

  it("an expired blockhash (paid with the x402 client library, presented too late): expired", async () => {
    const payment = await h.pay.createPaymentPayload(pr);
    const stale = await latestBlockhash();
    h.node.expireBlockhashes();
    await refusedOverHttp(header(payment), "expired");
    // The node's latest blockhash stays the expired one until its next block: the next payment (the race below) must
    // not be built on it, or every copy of it is refused `expired` and none gets the data.
    while ((await latestBlockhash()) === stale) await new Promise((r) => setTimeout(r, 10));
  });
});

describe("the resource paid for", () => {
  it("a payment made for one tool or route, presented to another of the same price: requirements_mismatch, and it still pays for its own", async () => {
    const before = await balances();
    const forRoute = await h.pay.createPaymentPayload(pr);
    expect(await refusedOverHttp(header({ ...forRoute, resource: toolPr.resource }), "requirements_mismatch")).toContain("made for mcp://tool/get_peg_feed");
    const { resource: _, ...anonymous } = forRoute;
    expect(await refusedOverHttp(header(anonymous), "requirements_mismatch")).toContain("does not name the resource");
    const r = await callTool(h, "get_peg_feed", {}, forRoute);
    expect(reasonOf(paymentRequiredOf(r))).toBe("requirements_mismatch");
    // simulate_depeg has the same price as get_peg_feed (0.001 USDC).
    const forTool = await h.pay.createPaymentPayload(toolPr);
    const other = paymentRequiredOf(await callTool(h, "simulate_depeg", { symbol: "USDC", shock_bps: 500 }, forTool));
    expect(other.accepts[0]!.amount).toBe(toolPr.accepts[0]!.amount);
    expect(reasonOf(other), other.error).toBe("requirements_mismatch");
    expect(await balances()).toEqual(before);
    expect((await h.http("/x402/peg-feed", { "payment-signature": header(forRoute) })).status).toBe(200);
    expect((await callTool(h, "get_peg_feed", {}, forTool)).isError).toBeFalsy();
  });
});

describe("reuse", () => {
  it("the same payment sent six times at once: one settlement; each answer is that data, or `reused` while it is in flight", async () => {
    const before = await balances();
    const payment = await h.pay.createPaymentPayload(pr);
    const answers = await Promise.all(Array.from({ length: 6 }, () => h.http("/x402/peg-feed", { "payment-signature": header(payment) })));
    // The claim decides: one request settles; one that comes after the settlement gets the same answer (owed to the
    // payment), the others are told it is in flight. Never a second settlement, never other data.
    const ok = answers.filter((a) => a.status === 200);
    expect(ok.length, JSON.stringify(answers)).toBeGreaterThanOrEqual(1);
    expect(new Set(ok.map((a) => a.headers["payment-response"])).size).toBe(1);
    for (const a of ok) expect(a.body).toEqual(ok[0]!.body);
    for (const a of answers.filter((x) => x.status !== 200)) {
      expect(a.status).toBe(402);
      expect(a.body["reason"]).toBe("reused");
      expect(a.body["message"]).not.toMatch(/create a new one/);
    }
    const [payer, payTo] = await balances();
    expect([payer, payTo]).toEqual([before[0]! - 1000n, before[1]! + 1000n]);
  });

  it("counts every refusal by reason on /metrics", async () => {
    for (const reason of ["malformed", "unsupported", "amount", "mint", "recipient", "signature", "instructions", "requirements_mismatch", "simulation", "expired", "reused"]) {
      expect(await metricValue(h.registry, "peg_oracle_x402_refusals_total", `reason="${reason}"`), reason).toBeGreaterThan(0);
    }
  });
});
