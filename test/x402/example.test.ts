/** examples/mcp-agent.ts against the in-process agent server: the free tour, then a feed bought with x402. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { payForFeed, tour } from "../../examples/mcp-agent.ts";
import { startHarness, type X402Harness } from "./harness.ts";

let h: X402Harness;
beforeAll(async () => {
  h = await startHarness();
}, 60_000);
afterAll(async () => {
  await h?.close();
});

describe("examples/mcp-agent.ts", () => {
  it("tours the free tools and pays for the feed", async () => {
    const lines: string[] = [];
    const rm = (await import("../http/fixtures.ts")).fakeReadModel();
    await tour(h.mcp, (l) => lines.push(l), rm.receipts[0]!.alert_id);
    expect(lines[0]).toMatch(/^tools: .*get_peg_feed/);
    expect(lines.some((l) => /^\d+ assets tracked, \d+ off their peg/.test(l))).toBe(true);
    expect(lines.some((l) => / PASS \(exit 0\), re-derived /.test(l))).toBe(true);
    const settlement = await payForFeed(h.mcp, h.pay, (l) => lines.push(l));
    expect(settlement).toMatchObject({ success: true, payer: h.payer.address });
    expect(lines.at(-2)).toBe(`get_peg_feed costs 1000 micro-USDC on solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1, paid to ${h.payTo.address}`);
    expect(lines.at(-1)).toMatch(/^paid \(transaction \w+\); the feed has \d+ signals$/);
  });
});
