/**
 * A paid answer is never lost (issue 24, item 4), in-process: the gate over PGlite and the local token node, a
 * "crash" being a gate whose settlement never comes back (its process is gone: no in-memory state survives) and a
 * "restart" a new gate over the same store that reconciles the ledger. The real kill of a serving process is in
 * service.test.ts; here each state a crash can leave is driven to its outcome:
 *
 * - settlement sent and landed -> owed: the same payment gets the answer, charged once;
 * - settlement not sent, blockhash valid -> settled again at reconciliation (the same transaction) -> owed;
 * - settlement not sent, blockhash expired -> released (nothing can be charged);
 * - claimed (the work not done) -> held while its holder may be alive, released once stale;
 * - a settlement that got no answer -> the payment presented again is finished by the chain and gets its answer;
 * - past the answer window -> spent, and the stored answer cleared.
 */
import type { FacilitatorClient } from "@x402/core/server";
import type { PaymentPayload } from "@x402/core/types";
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemClock, type Clock } from "../../src/clock.ts";
import { paymentByKey } from "../../src/store/index.ts";
import { registerX402Metrics, x402Metrics, type PaymentGate, type ResourceInfo, type Ticket } from "../../src/x402/index.ts";
import { challenge, metricValue, startHarness, type X402Harness } from "./harness.ts";

let h: X402Harness;

beforeAll(async () => {
  h = await startHarness();
}, 60_000);

afterAll(async () => {
  await h?.close();
});

const FEED: ResourceInfo = { url: "mcp://tool/get_peg_feed" };
const REQUEST = 'mcp get_peg_feed {}';
const ANSWER = { content: [{ type: "text", text: "the feed" }], structuredContent: { feed: "the feed" } };
const never = new Promise<never>(() => undefined);

/** A facilitator that settles for real (or not at all), then never answers: the process died waiting. */
const dies = (sendFirst: boolean) => (f: FacilitatorClient): FacilitatorClient => ({
  getSupported: () => f.getSupported(),
  verify: (p, r) => f.verify(p, r),
  settle: async (p, r) => {
    if (sendFirst) await f.settle(p, r);
    return never;
  },
});

const balances = async () => ({ payer: await h.node.tokens(h.payer.address), payTo: await h.node.tokens(h.payTo.address) });

/** A fresh payment for get_peg_feed, verified and claimed by `gate`. */
async function claimed(gate: PaymentGate): Promise<{ payment: PaymentPayload; ticket: Ticket }> {
  const payment = await h.pay.createPaymentPayload(await challenge(h, "get_peg_feed"));
  const ticket = await gate.verify("get_peg_feed", FEED, payment, REQUEST);
  if (ticket.kind !== "verified") throw new Error(`expected a claim, got ${JSON.stringify(ticket)}`);
  return { payment, ticket };
}

/** Waits until the ledger row of `key` has `status` (the crashed gate's writes are asynchronous to the test). */
async function rowIs(key: string, status: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if ((await paymentByKey(h.store.db, key))?.status === status) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`payment ${key} never became ${status}: ${JSON.stringify(await paymentByKey(h.store.db, key))}`);
}

/** A gate that dies in the settlement (after sending it, or before): its row is left `settling`, the answer stored. */
async function crashInSettlement(sendFirst: boolean): Promise<{ payment: PaymentPayload; ticket: Ticket; before: { payer: bigint; payTo: bigint } }> {
  const crashed = await h.gateWith(dies(sendFirst));
  const before = await balances();
  const { payment, ticket } = await claimed(crashed);
  void crashed.settle(ticket, FEED, ANSWER);
  await rowIs(ticket.key, "settling");
  return { payment, ticket, before };
}

/** A restarted process: a new gate over the same store, with metrics of its own, reconciled as at start. */
async function restart(opts: { clock?: Clock; claimGraceMs?: number } = {}): Promise<{ gate: PaymentGate; registry: Registry }> {
  const metrics = x402Metrics();
  const registry = new Registry();
  registerX402Metrics(metrics, registry);
  const gate = await h.gateWith((f) => f, { ...opts, metrics });
  await gate.reconcile();
  return { gate, registry };
}

describe("a settlement a crash cut short", () => {
  it("sent and landed: the restarted gate owes the answer to the same payment, charged once", async () => {
    const { payment, ticket, before } = await crashInSettlement(true);
    await expect.poll(async () => (await balances()).payTo, { timeout: 30_000 }).toBe(before.payTo + 1000n);

    const { gate, registry } = await restart();
    expect(await paymentByKey(h.store.db, ticket.key)).toMatchObject({ status: "settled", request: expect.any(String) });
    expect(await metricValue(registry, "peg_oracle_x402_reconciled_total", 'outcome="owed"')).toBe(1);
    expect(await metricValue(registry, "peg_oracle_x402_owed_answers", "")).toBe(1);
    const owed = await gate.verify("get_peg_feed", FEED, payment, REQUEST);
    expect(owed).toMatchObject({ kind: "owed", answer: ANSWER, settlement: { success: true, payer: h.payer.address } });
    await gate.delivered(owed as Ticket);
    expect(await metricValue(registry, "peg_oracle_x402_owed_served_total", 'tool="get_peg_feed"')).toBe(1);
    expect(await metricValue(registry, "peg_oracle_x402_owed_answers", "")).toBe(0);
    // For another request it is spent.
    expect(await gate.verify("get_peg_feed", FEED, payment, "mcp get_peg_feed {\"other\":1}")).toMatchObject({ kind: "refused", reason: "reused" });
    expect(await balances()).toEqual({ payer: before.payer - 1000n, payTo: before.payTo + 1000n });
  });

  it("not sent, its blockhash still valid: settled again at start (the same transaction) and owed", async () => {
    const { payment, ticket, before } = await crashInSettlement(false);
    expect(await balances()).toEqual(before);

    const { gate, registry } = await restart();
    expect(await metricValue(registry, "peg_oracle_x402_reconciled_total", 'outcome="owed"')).toBe(1);
    expect(await gate.verify("get_peg_feed", FEED, payment, REQUEST)).toMatchObject({ kind: "owed", answer: ANSWER });
    expect(await balances()).toEqual({ payer: before.payer - 1000n, payTo: before.payTo + 1000n });
    const row = await paymentByKey(h.store.db, ticket.key);
    expect(h.node.landed().filter((t) => t.signature === row!.tx_sig)).toHaveLength(1);
  });

  it("not sent and its blockhash expired: released, nothing charged; the payment is then refused as expired, not reused", async () => {
    const { payment, ticket, before } = await crashInSettlement(false);
    h.node.expireBlockhashes();

    const { gate, registry } = await restart();
    expect(await paymentByKey(h.store.db, ticket.key)).toBeUndefined();
    expect(await metricValue(registry, "peg_oracle_x402_reconciled_total", 'outcome="released"')).toBe(1);
    expect(await metricValue(registry, "peg_oracle_x402_released_total", 'why="reconciled"')).toBe(1);
    expect(await gate.verify("get_peg_feed", FEED, payment, REQUEST)).toMatchObject({ kind: "refused", reason: "expired" });
    expect(await balances()).toEqual(before);
  });

  it("a settlement that got no answer: the payment sent again is finished by the chain and gets its answer", async () => {
    // The facilitator sends the transaction, then its answer is lost: the call fails, the outcome unknown.
    const gate = await h.gateWith((f) => ({
      getSupported: () => f.getSupported(),
      verify: (p, r) => f.verify(p, r),
      settle: async (p, r) => {
        await f.settle(p, r);
        throw new Error("socket hang up");
      },
    }));
    const before = await balances();
    const { payment, ticket } = await claimed(gate);
    const first = await gate.settle(ticket, FEED, ANSWER);
    expect(first).toMatchObject({ kind: "refused", reason: "settlement", settlement: { success: false, errorReason: "settle_unanswered" } });
    expect((first as { message: string }).message).toMatch(/if it lands, this same payment gets its answer/);
    expect(await gate.verify("get_peg_feed", FEED, payment, REQUEST)).toMatchObject({ kind: "owed", answer: ANSWER, settlement: { success: true } });
    expect(await balances()).toEqual({ payer: before.payer - 1000n, payTo: before.payTo + 1000n });
  });
});

describe("a claim a crash left (the work not done, nothing sent)", () => {
  it("is held while its holder may be alive, and released once stale", async () => {
    const crashed = await h.gateWith((f) => f);
    const { payment, ticket } = await claimed(crashed);
    // Another live process of this host (here: this one) may still be working on it.
    await restart();
    expect(await paymentByKey(h.store.db, ticket.key)).toMatchObject({ status: "claimed" });
    const { gate, registry } = await restart({ claimGraceMs: 0 });
    expect(await paymentByKey(h.store.db, ticket.key)).toBeUndefined();
    expect(await metricValue(registry, "peg_oracle_x402_released_total", 'why="reconciled"')).toBe(1);
    expect(await gate.verify("get_peg_feed", FEED, payment, REQUEST)).toMatchObject({ kind: "verified" });
  });
});

describe("the answer window", () => {
  it("past it, the payment is spent and its stored answer cleared", async () => {
    let now = systemClock.now();
    const clock: Clock = { ...systemClock, now: () => now };
    const gate = await h.gateWith((f) => f, { clock });
    const { payment, ticket } = await claimed(gate);
    expect(await gate.settle(ticket, FEED, ANSWER)).toMatchObject({ kind: "settled" });
    now += h.config.answerWindowMs - 1000;
    expect(await gate.verify("get_peg_feed", FEED, payment, REQUEST)).toMatchObject({ kind: "owed" });
    now += 2000;
    const late = await gate.verify("get_peg_feed", FEED, payment, REQUEST);
    expect(late).toMatchObject({ kind: "refused", reason: "reused" });
    expect((late as { message: string }).message).toMatch(/this one is finished \(settled\): create a new one/);
    await gate.reconcile();
    expect(await paymentByKey(h.store.db, ticket.key)).toMatchObject({ status: "settled", answer: null, payload: null });
  });
});
