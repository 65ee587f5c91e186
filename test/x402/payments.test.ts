/**
 * x402 payments end to end in-process: the x402 project's client library pays from a generated keypair, the gate
 * verifies and settles through a local Solana node that executes the SPL transfer, over both transports (the MCP
 * tool-result binding and the HTTP 402 routes). A payment is accepted once (replays and concurrent reuse refused,
 * also by a restarted gate over the same store); an unreachable RPC charges nothing and the same payment works later.
 */
import { decodePaymentRequiredHeader, decodePaymentResponseHeader, x402HTTPClient } from "@x402/core/http";
import type { PaymentRequired, SettleResponse } from "@x402/core/types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { toolRequest } from "../../src/mcp/paid-call.ts";
import { paymentByKey } from "../../src/store/index.ts";
import { chainProbe } from "../../src/x402/probe.ts";
import { callTool, challenge, header, metricValue, paymentRequiredOf, reasonOf, startHarness, type Obj, type X402Harness } from "./harness.ts";

let h: X402Harness;

beforeAll(async () => {
  h = await startHarness();
}, 60_000);

afterAll(async () => {
  await h?.close();
});

const balances = async () => ({ payer: await h.node.tokens(h.payer.address), payTo: await h.node.tokens(h.payTo.address) });

describe("over MCP (tool-result binding)", () => {
  it("lists the paid tools with their price and an output schema that admits the PaymentRequired", async () => {
    const { tools } = await h.mcp.listTools();
    const feed = tools.find((t) => t.name === "get_peg_feed")!;
    expect(tools.map((t) => t.name).sort()).toEqual(["get_peg_feed", "get_peg_state", "list_assets", "simulate_depeg", "subscribe_peg_events", "verify_alert"]);
    expect(feed.description).toContain("Paid: 0.001 USDC per call");
    expect(feed._meta).toEqual({ "x402/price": { amount: "0.001", currency: "USDC" } });
    expect(feed.outputSchema).toMatchObject({ type: "object" });
    expect((feed.outputSchema as Obj)["anyOf"]).toHaveLength(2);
    expect(tools.find((t) => t.name === "subscribe_peg_events")!.description).toContain("0.0005 USDC");
  });

  it("an unpaid call gets the PaymentRequired: exact, the configured network, USDC, payTo, the price, our fee payer", async () => {
    const pr = await challenge(h, "get_peg_feed");
    expect(pr).toMatchObject({ x402Version: 2, resource: { url: "mcp://tool/get_peg_feed", mimeType: "application/json" } });
    expect(reasonOf(pr)).toBe("missing");
    expect(pr.accepts).toHaveLength(1);
    expect(pr.accepts[0]).toMatchObject({
      scheme: "exact",
      network: "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1",
      asset: "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU",
      payTo: h.payTo.address,
      amount: "1000",
      extra: { feePayer: h.feePayer.address },
    });
    expect((await challenge(h, "subscribe_peg_events")).accepts[0]!.amount).toBe("500");
  });

  it("pays with the x402 client library: the tool runs, the transfer lands, the result carries the settlement", async () => {
    const before = await balances();
    const pr = await challenge(h, "get_peg_feed");
    const payment = await h.pay.createPaymentPayload(pr);
    const r = await callTool(h, "get_peg_feed", {}, payment);
    expect(r.isError, JSON.stringify(r.content)).toBeFalsy();
    const feed = r.structuredContent as Obj;
    expect(feed["count"]).toBeGreaterThan(60);
    const settlement = (r._meta as Obj)["x402/payment-response"] as SettleResponse;
    expect(settlement).toMatchObject({ success: true, network: "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1", payer: h.payer.address });
    const landed = h.node.landed().find((t) => t.signature === settlement.transaction)!;
    expect(landed).toMatchObject({ err: null, feePayer: h.feePayer.address });
    expect(landed.transfers.map((t) => t.amount)).toEqual([1000n]);
    expect(await balances()).toEqual({ payer: before.payer - 1000n, payTo: before.payTo + 1000n });
    expect(await metricValue(h.registry, "peg_oracle_x402_paid_calls_total", 'tool="get_peg_feed"')).toBeGreaterThanOrEqual(1);

    // Presented again for the same call (its answer lost on the way, say): the answer it bought, the same settlement,
    // nothing moves; a restarted process (a new gate over the same store) answers the same.
    const replay = await callTool(h, "get_peg_feed", {}, payment);
    expect(replay.isError).toBeFalsy();
    expect(replay.structuredContent).toEqual(r.structuredContent);
    expect((replay._meta as Obj)["x402/payment-response"]).toEqual(settlement);
    expect(await balances()).toEqual({ payer: before.payer - 1000n, payTo: before.payTo + 1000n });
    const restarted = await h.restartedGate();
    const again = await restarted.verify("get_peg_feed", { url: "mcp://tool/get_peg_feed" }, payment, toolRequest("get_peg_feed", {}));
    expect(again).toMatchObject({ kind: "owed", settlement });
    // For other arguments it is spent: a payment pays for one call.
    const other = await restarted.verify("get_peg_feed", { url: "mcp://tool/get_peg_feed" }, payment, toolRequest("get_peg_feed", { other: "arguments" }));
    expect(other).toMatchObject({ kind: "refused", reason: "reused" });
    expect(await balances()).toEqual({ payer: before.payer - 1000n, payTo: before.payTo + 1000n });
  });

  it("runs the other paid tools; a tool that fails gives the payment back unused", async () => {
    const sim = await challenge(h, "simulate_depeg", { symbol: "USDC", shock_bps: 500 });
    // The fixture deployment tracks no lending positions: the tool answers not_ready, and nothing is charged.
    const before = await balances();
    const payment = await h.pay.createPaymentPayload(sim);
    const failed = await callTool(h, "simulate_depeg", { symbol: "USDC", shock_bps: 500 }, payment);
    expect(failed.isError).toBe(true);
    expect(JSON.parse((failed.content[0] as { text: string }).text)).toMatchObject({ error: "not_ready" });
    expect(await balances()).toEqual(before);
    const events = await callTool(h, "subscribe_peg_events", { after: 7, wait_secs: 0 }, payment);
    // The released payment was for simulate_depeg's price and resource: another tool's requirements differ.
    expect(reasonOf(paymentRequiredOf(events))).toMatch(/^(amount|requirements_mismatch)$/);

    const pr = await challenge(h, "subscribe_peg_events");
    const paid = await callTool(h, "subscribe_peg_events", { after: 7, wait_secs: 0 }, await h.pay.createPaymentPayload(pr));
    expect(paid.isError, JSON.stringify(paid.content)).toBeFalsy();
    expect(paid.structuredContent).toEqual({ events: [], next_cursor: 7 });
    expect(await h.node.tokens(h.payer.address)).toBe(before.payer - 500n);
  });

  it("a payment used concurrently is accepted exactly once", async () => {
    const before = await balances();
    const pr = await challenge(h, "get_peg_feed");
    const payment = await h.pay.createPaymentPayload(pr);
    const results = await Promise.all(Array.from({ length: 6 }, () => callTool(h, "get_peg_feed", {}, payment)));
    // One settlement: each result is its answer (a call after the settlement is owed it), or `reused` while in flight.
    const ok = results.filter((r) => r.isError !== true);
    expect(ok.length).toBeGreaterThanOrEqual(1);
    for (const r of ok) expect([r.structuredContent, r._meta]).toEqual([ok[0]!.structuredContent, ok[0]!._meta]);
    for (const r of results.filter((x) => x.isError === true)) expect(reasonOf(paymentRequiredOf(r))).toBe("reused");
    expect(await balances()).toEqual({ payer: before.payer - 1000n, payTo: before.payTo + 1000n });
  });

  it("the RPC unreachable (connection refused, HTTP 503): payment_unavailable, nothing charged, the same payment works later", async () => {
    for (const trouble of ["down", "503"] as const) {
      const before = await balances();
      const pr = await challenge(h, "get_peg_feed");
      const payment = await h.pay.createPaymentPayload(pr);
      await h.node.setHealth(trouble);
      try {
        const r = await callTool(h, "get_peg_feed", {}, payment);
        expect(r.isError).toBe(true);
        expect(r.structuredContent).toBeUndefined();
        expect(JSON.parse((r.content[0] as { text: string }).text)).toMatchObject({ error: "payment_unavailable" });
      } finally {
        await h.node.setHealth("up");
      }
      expect(await balances()).toEqual(before);
      const retried = await callTool(h, "get_peg_feed", {}, payment);
      expect(retried.isError, `${trouble}: ${JSON.stringify(retried.content)}`).toBeFalsy();
      expect(await balances()).toEqual({ payer: before.payer - 1000n, payTo: before.payTo + 1000n });
    }
    expect(await metricValue(h.registry, "peg_oracle_x402_unavailable_total", "")).toBeGreaterThanOrEqual(2);
  });
});

describe("over HTTP (402, PAYMENT-SIGNATURE, PAYMENT-RESPONSE)", () => {
  const http402 = () => new x402HTTPClient(h.pay);

  it("GET /x402/peg-feed: 402 with PAYMENT-REQUIRED, then the data to the replayed request, with PAYMENT-RESPONSE", async () => {
    const before = await balances();
    const first = await h.http("/x402/peg-feed");
    expect(first.status).toBe(402);
    const client = http402();
    const pr: PaymentRequired = client.getPaymentRequiredResponse((n) => first.headers[n.toLowerCase()], first.body);
    expect(pr).toEqual(decodePaymentRequiredHeader(first.headers["payment-required"]!));
    expect(pr.resource.url).toBe("http://localhost:8080/x402/peg-feed");
    expect(pr.accepts[0]).toMatchObject({ amount: "1000", payTo: h.payTo.address });
    const payload = await client.createPaymentPayload(pr);
    const paid = await h.http("/x402/peg-feed", client.encodePaymentSignatureHeader(payload));
    expect(paid.status, JSON.stringify(paid.body)).toBe(200);
    expect(paid.body["methodology"]).toBe("1.0.0");
    const settlement = client.getPaymentSettleResponse((n) => paid.headers[n.toLowerCase()]);
    expect(settlement).toEqual(decodePaymentResponseHeader(paid.headers["payment-response"]!));
    expect(settlement).toMatchObject({ success: true, payer: h.payer.address });
    expect(await balances()).toEqual({ payer: before.payer - 1000n, payTo: before.payTo + 1000n });
    // The ledger keeps it, settled and its answer handed out, with its transaction.
    const { transactionMessageHash, decodeTransactionFromPayload } = await import("@x402/svm");
    const key = transactionMessageHash(decodeTransactionFromPayload(payload.payload as { transaction: string }));
    expect(await paymentByKey(h.store.db, key)).toMatchObject({ status: "served", tool: "get_peg_feed", amount: 1000n, tx_sig: settlement.transaction, payer: h.payer.address });

    // Its settlement's id is known before it is sent (the fee payer's deterministic signature): what a restarted
    // process asks the chain for.
    expect(await chainProbe({ rpcUrl: h.node.url, feePayer: h.feePayer }).transactionId(payload)).toBe(settlement.transaction);

    // Sent again (the answer lost on the way): the same data and settlement, nothing charged again.
    const replay = await h.http("/x402/peg-feed", client.encodePaymentSignatureHeader(payload));
    expect(replay.status).toBe(200);
    expect(replay.body).toEqual(paid.body);
    expect(decodePaymentResponseHeader(replay.headers["payment-response"]!)).toEqual(settlement);
    expect(await balances()).toEqual({ payer: before.payer - 1000n, payTo: before.payTo + 1000n });
  });

  it("GET /x402/events: checks the query before any payment, then serves transitions after the cursor", async () => {
    expect((await h.http("/x402/events?after=-1")).status).toBe(400);
    expect((await h.http("/x402/events?wait=99")).status).toBe(400);
    const first = await h.http("/x402/events?after=12&wait=0");
    expect(first.status).toBe(402);
    const client = http402();
    const pr = client.getPaymentRequiredResponse((n) => first.headers[n.toLowerCase()], first.body);
    expect(pr.accepts[0]!.amount).toBe("500");
    const paid = await h.http("/x402/events?after=12&wait=0", client.encodePaymentSignatureHeader(await client.createPaymentPayload(pr)));
    expect(paid.status).toBe(200);
    expect(paid.body).toEqual({ events: [], next_cursor: 12 });
    expect(paid.headers["payment-response"]).toBeTruthy();
  });

  it("the RPC down: 503 payment_unavailable with Retry-After, nothing charged; the same payment is good afterwards", async () => {
    const before = await balances();
    const first = await h.http("/x402/peg-feed");
    const client = http402();
    const sig = client.encodePaymentSignatureHeader(await client.createPaymentPayload(client.getPaymentRequiredResponse((n) => first.headers[n.toLowerCase()], first.body)));
    await h.node.setHealth("down");
    let down;
    try {
      down = await h.http("/x402/peg-feed", sig);
    } finally {
      await h.node.setHealth("up");
    }
    expect(down.status).toBe(503);
    expect(down.headers["retry-after"]).toBe("5");
    expect(down.body).toMatchObject({ error: "payment_unavailable" });
    expect(await balances()).toEqual(before);
    expect((await h.http("/x402/peg-feed", sig)).status).toBe(200);
  });

  it("a header that is not a PaymentPayload is 400 Invalid Payment (malformed), without a challenge", async () => {
    const r = await h.http("/x402/peg-feed", { "payment-signature": header({ x402Version: 2 }) });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ error: "invalid_payment", reason: "malformed" });
    expect(r.body["message"]).toMatch(/^the payment is malformed: /);
    expect(r.headers["payment-required"]).toBeUndefined();
  });
});
