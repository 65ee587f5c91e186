/**
 * x402 to the letter (issue 24, item 3): the status codes and headers of the HTTP transport (x402
 * specs/transports-v2/http.md, Error Handling: 400 Invalid Payment, 402 Payment Required or Failed, the failed
 * SettleResponse in PAYMENT-RESPONSE) and the MCP binding's settlement failure (mcp.md: `x402/payment-response` in the
 * PaymentRequired answer), through the real gate over a local Solana node.
 */
import type { FacilitatorClient } from "@x402/core/server";
import { decodePaymentResponseHeader } from "@x402/core/http";
import type { PaymentRequired, SettleResponse } from "@x402/core/types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callTool, header, ONE_USDC, paymentRequiredOf, payloadWith, reasonOf, startHarness, type Obj, type X402Harness } from "./harness.ts";

let h: X402Harness;

beforeAll(async () => {
  h = await startHarness();
  await h.node.fund(h.payer.address, ONE_USDC);
}, 60_000);

afterAll(async () => {
  await h?.close();
});

const balances = async () => ({ payer: await h.node.tokens(h.payer.address), payTo: await h.node.tokens(h.payTo.address) });

/** The local facilitator, whose settle answers a failure without sending anything (as a facilitator out of funds). */
const settleFails = (f: FacilitatorClient): FacilitatorClient => ({
  verify: (p, r) => f.verify(p, r),
  getSupported: () => f.getSupported(),
  settle: async (p, r): Promise<SettleResponse> => ({ success: false, errorReason: "insufficient_funds", errorMessage: "the fee payer cannot pay the fee", transaction: "", network: r.network }),
});

async function httpChallenge(path: string): Promise<PaymentRequired> {
  const first = await h.http(path);
  expect(first.status).toBe(402);
  return first.body["x402"] as PaymentRequired;
}

describe("HTTP status codes (transports-v2/http.md, Error Handling)", () => {
  it("a PAYMENT-SIGNATURE that is not a payment (not base64, not JSON, wrong shape, no transaction): 400 invalid_payment, no challenge", async () => {
    const pr = await httpChallenge("/x402/peg-feed");
    for (const bad of ["!!!", Buffer.from("not json").toString("base64"), header([]), header({ x402Version: 2, accepted: {}, payload: {} }), header(payloadWith(pr, "AAAA"))]) {
      const r = await h.http("/x402/peg-feed", { "payment-signature": bad });
      expect(r.status, bad).toBe(400);
      expect(r.body).toMatchObject({ error: "invalid_payment", reason: "malformed" });
      expect(r.headers["payment-required"]).toBeUndefined();
    }
  });

  it("a payment that is readable but refused stays 402 with the challenge", async () => {
    const pr = await httpChallenge("/x402/peg-feed");
    const r = await h.http("/x402/peg-feed", { "payment-signature": header({ ...payloadWith(pr, "AAAA"), accepted: { ...pr.accepts[0]!, amount: "1" } }) });
    expect(r.status).toBe(402);
    expect(r.body).toMatchObject({ error: "payment_refused", reason: "amount" });
    expect(r.headers["payment-required"]).toBeDefined();
  });

  it("a settlement that fails: 402 with the failed SettleResponse in PAYMENT-RESPONSE, no new PAYMENT-REQUIRED, no data, nothing charged", async () => {
    const gate = await h.gateWith(settleFails);
    const before = await balances();
    const pr = await httpChallenge("/x402/peg-feed");
    const r = await h.httpVia(gate, "/x402/peg-feed", { "payment-signature": header(await h.pay.createPaymentPayload(pr)) });
    expect(r.status).toBe(402);
    expect(r.headers["payment-required"]).toBeUndefined();
    expect(decodePaymentResponseHeader(r.headers["payment-response"]!)).toMatchObject({ success: false, errorReason: "insufficient_funds", transaction: "", network: pr.accepts[0]!.network });
    expect(r.body).toMatchObject({ error: "settlement_failed" });
    expect(Object.keys(r.body).sort()).toEqual(["error", "message", "reason"]);
    expect(await balances()).toEqual(before);
  });
});

describe("MCP settlement failure (transports-v2/mcp.md)", () => {
  it("the PaymentRequired answer carries the failed SettleResponse in x402/payment-response", async () => {
    const client = await h.mcpVia(await h.gateWith(settleFails));
    const pr = paymentRequiredOf(await callTool({ mcp: client }, "get_peg_feed", {}));
    const answer = paymentRequiredOf(await callTool({ mcp: client }, "get_peg_feed", {}, await h.pay.createPaymentPayload(pr)));
    expect(reasonOf(answer)).toBe("simulation");
    expect((answer as unknown as Obj)["x402/payment-response"]).toMatchObject({ success: false, errorReason: "insufficient_funds", transaction: "" });
    expect(answer.accepts).toEqual(pr.accepts);
  });
});

describe("a payment in flight elsewhere (one message, by the ledger's state)", () => {
  it("while another request holds it: reused, wait for that answer and send the same payment again if it was unavailable; once finished: create a new one", async () => {
    let entered!: () => void;
    const inVerify = new Promise<void>((r) => (entered = r));
    let letGo!: () => void;
    const held = new Promise<void>((r) => (letGo = r));
    // The first verification waits until the test lets it go: the claim, not timing, decides who holds the payment.
    const gate = await h.gateWith((f) => ({
      getSupported: () => f.getSupported(),
      settle: (p, r) => f.settle(p, r),
      verify: async (p, r) => {
        entered();
        await held;
        return f.verify(p, r);
      },
    }));
    const pr = await httpChallenge("/x402/peg-feed");
    const sig = { "payment-signature": header(await h.pay.createPaymentPayload(pr)) };
    const first = h.httpVia(gate, "/x402/peg-feed", sig);
    await inVerify;
    const racing = await h.httpVia(gate, "/x402/peg-feed", sig);
    expect(racing.status).toBe(402);
    expect(racing.body).toMatchObject({ error: "payment_refused", reason: "reused" });
    expect(racing.body["message"]).toMatch(/another request is handling this payment right now: wait for that request's answer; if it answered unavailable, send this same payment again/);
    expect(racing.body["message"]).not.toMatch(/create a new one/);
    letGo();
    expect((await first).status).toBe(200);
    // Finished: the same request gets the answer it bought again; another request (another query) is refused.
    expect((await h.httpVia(gate, "/x402/peg-feed", sig)).status).toBe(200);
    const after = await h.httpVia(gate, "/x402/peg-feed?other=query", sig);
    expect(after.body).toMatchObject({ reason: "reused" });
    expect(after.body["message"]).toMatch(/this one bought the answer to another request \(other arguments or query\): create a new one for this call/);
  });
});
