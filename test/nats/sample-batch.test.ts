/**
 * Issue 25 item 1: `PEG_SAMPLES` carries batches of samples (columns, gzip). The codec must give back every
 * `SampleMessage` exactly, member for member and in member order, whatever the message holds (dwell-timer
 * evaluations, gates, oracles, SOL legs, instants the engine does not write itself), and refuse what is not a batch.
 */
import { readFileSync } from "node:fs";
import { gunzipSync, gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { ActorHost, type StateEvent } from "../../src/actors/index.ts";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import { SimulatedClock } from "../../src/clock.ts";
import { D } from "../../src/methodology/index.ts";
import { sampleMessage, type SampleMessage } from "../../src/streams/jetstream/messages.ts";
import { decodeSampleBatch, encodeSampleBatch, isSampleBatch, SampleBatchError } from "../../src/streams/jetstream/sample-batch.ts";

const catalog = loadShippedCatalog();
const T0 = Date.UTC(2026, 10, 26, 12, 0, 0, 250);

/** Evaluations of several assets: pegged, a depeg committed by the dwell timer, an oracle-confidence gate, SOL legs. */
function evaluations(): SampleMessage[] {
  const clock = new SimulatedClock(T0);
  const assets = ["USDC", "USDT", "jitoSOL", "mSOL"].map((s) => catalog.bySymbol(s)!);
  const host = new ActorHost({ assets, clock, gitSha: "" });
  const out: StateEvent[] = [];
  host.events$.subscribe((e) => (e.kind === "state" ? out.push(e) : undefined));
  for (let i = 0; i < 40; i++) {
    clock.set(T0 + i * 1_000 + (i % 7));
    const stable = i < 38 ? "1" : "0.97";
    host.ingest({ asset: "USDC", ts: clock.now(), intrinsic_usd: new D(1), market_usd: new D(stable), intrinsic_sol: null, market_sol: null, cr: null, oracle: {}, intrinsic_stale: false });
    host.ingest({ asset: "USDT", ts: clock.now(), intrinsic_usd: new D(1), market_usd: new D("0.9999"), intrinsic_sol: null, market_sol: null, cr: new D("1.04"), oracle: {}, intrinsic_stale: i % 5 === 0 });
    for (const [symbol, nav] of [["jitoSOL", "1.149438162404"], ["mSOL", "1.349097762583"]] as const) {
      const sol = new D(150);
      const conf = i % 9 === 0 ? new D(9) : new D("0.045");
      host.ingest({
        asset: symbol,
        ts: clock.now(),
        intrinsic_usd: sol.mul(nav),
        market_usd: sol.mul(nav).mul("0.9993"),
        intrinsic_sol: new D(nav),
        market_sol: new D(nav).mul("0.9993"),
        cr: null,
        oracle: { "SOL/USD": { price: sol, conf, publish_time: clock.now() - 981 } },
        intrinsic_stale: false,
      });
    }
  }
  clock.set(T0 + 120_000); // the USDC candidate's dwell ends with no sample: a dwell-timer evaluation
  host.stop();
  return out.map(sampleMessage);
}

describe("sample batches", () => {
  it("decode gives back every message exactly, in order, member order included", async () => {
    const messages = evaluations();
    expect(new Set(messages.map((m) => m.trigger))).toEqual(new Set(["sample", "dwell_timer"]));
    expect(messages.some((m) => m.gate !== null)).toBe(true);
    expect(messages.some((m) => m.discount_raw !== m.discount)).toBe(true);
    const data = await encodeSampleBatch(messages);
    expect(isSampleBatch(data)).toBe(true);
    const back = decodeSampleBatch(data);
    expect(back).toEqual(messages);
    expect(back.map((m) => JSON.stringify(m))).toEqual(messages.map((m) => JSON.stringify(m)));
  });

  it("keeps instants and prices the engine would not write as they are", async () => {
    const [first] = evaluations();
    const odd: SampleMessage = {
      ...first!,
      ts: "2026-11-26T12:00:00Z",
      committed_since: "2026-11-26T12:00:00.000+00:00",
      published_since: null,
      market_usd: "0.99990",
      discount_raw: "-0.0001",
      sample: { ...first!.sample, ts: "2026-11-26T11:59:59.5Z", asset: "OTHER", oracle: { "A/B": { price: "1", conf: "0", publish_time: "garbage" } } },
    };
    const messages = [first!, odd, { ...first!, ts: "1970-01-01T00:00:00.000Z" }];
    expect(decodeSampleBatch(await encodeSampleBatch(messages))).toEqual(messages);
  });

  it("is about a tenth of the single-message JSON for samples of distinct assets", async () => {
    const messages = evaluations();
    const json = messages.reduce((n, m) => n + JSON.stringify(m).length, 0);
    const batch = (await encodeSampleBatch(messages)).length;
    expect(batch).toBeLessThan(json / 5);
  });

  it("refuses what is not a batch: not gzip, not JSON, not v2, columns of different lengths", async () => {
    const good = JSON.parse(gunzipSync(await encodeSampleBatch(evaluations().slice(0, 3))).toString("utf8")) as Record<string, unknown>;
    const bad = [
      new TextEncoder().encode('{"v":1}'),
      gzipSync("not json"),
      gzipSync(JSON.stringify({ ...good, v: 3 })),
      gzipSync(JSON.stringify({ ...good, mint: ["only one"] })),
      gzipSync(JSON.stringify({ ...good, sample: { ...(good["sample"] as object), oracle: [1, 2, 3] } })),
      gzipSync(JSON.stringify({ ...good, sample: undefined })),
    ];
    for (const data of bad) expect(() => decodeSampleBatch(data)).toThrow(SampleBatchError);
  });

  it("docs/nats.md's batch example is the page's SampleMessage example as a batch of one", () => {
    const page = readFileSync(new URL("../../docs/nats.md", import.meta.url), "utf8");
    const blocks = [...page.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => JSON.parse(m[1]!) as Record<string, unknown>);
    const batch = blocks.find((b) => b["v"] === 2)!;
    const single = blocks.find((b) => b["v"] === 1 && b["trigger"] === "sample")!;
    expect(decodeSampleBatch(gzipSync(JSON.stringify(batch)))).toEqual([single]);
  });
});
