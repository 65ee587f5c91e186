/**
 * `RestoreReads` (issue 26 item 3, kill -> restored): the states a take-over reads, batched. Reads asked for together
 * form one batch; a batch of `bulkFrom` assets or more is read in one pass over the streams' last messages, a smaller
 * one asset by asset; on a replicated cluster its transitions in one pass and its snapshots asset by asset; all give
 * exactly what a per-asset `readRecovery` gives, including a state rebuilt from a
 * transition message with its sample stamp (`Peg-Sample-Ts`), and while the streams are being written. On a real
 * nats-server.
 */
import { jetstream } from "@nats-io/jetstream";
import { connect, headers, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ActorHost, assetStateToJSON } from "../../src/actors/index.ts";
import { SimulatedClock } from "../../src/clock.ts";
import { D, type Receipt, type Sample } from "../../src/methodology/index.ts";
import { ensureTopology, readRecovery, subjects, type Topology } from "../../src/streams/jetstream/index.ts";
import { SAMPLE_TS_HEADER } from "../../src/streams/jetstream/messages.ts";
import { RestoreReads } from "../../src/streams/jetstream/restore-reads.ts";
import { syntheticCatalog } from "../../bench/synthetic.ts";
import { startNats, type TestNats } from "../support/nats.ts";

const assets = syntheticCatalog(40).active;
const T0 = Date.parse("2026-06-01T00:00:00Z");
const LATE_MS = 3_000;

describe("RestoreReads", () => {
  let nats: TestNats;
  let nc: NatsConnection;
  let topology: Topology;
  /** The asset whose last state is only in its transition message (its snapshot is older). */
  const moved = assets[7]!;

  beforeAll(async () => {
    nats = await startNats();
    nc = await connect({ servers: nats.url });
    topology = await ensureTopology(nc);
    const js = jetstream(nc);
    const clock = new SimulatedClock(T0);
    const host = new ActorHost({ assets, clock, gitSha: "" });
    const receipts: Receipt[] = [];
    host.events$.subscribe((e) => {
      if (e.kind === "transition") receipts.push(e.receipt);
    });
    const tick = (k: number, gated: (symbol: string) => boolean) => {
      const ts = T0 + k * 1_000;
      clock.set(ts + LATE_MS);
      for (const a of assets) {
        const oracle = gated(a.symbol) ? { pyth: { price: new D(1), conf: new D("0.2"), publish_time: ts } } : {};
        const s: Sample = { asset: a.symbol, ts, intrinsic_usd: new D(1), market_usd: new D("0.9993"), intrinsic_sol: null, market_sol: null, cr: null, oracle, intrinsic_stale: false };
        host.ingest(s, ts + LATE_MS);
      }
    };
    tick(1, () => false);
    for (const a of assets) await js.publish(subjects.actorSnapshot(a.mint), JSON.stringify(assetStateToJSON(host.engineState(a.mint)!)));
    // The moved asset's next sample fails a gate: a transition, stored with its sample's stamp, and no newer snapshot.
    tick(2, (symbol) => symbol === moved.symbol);
    expect(receipts).toHaveLength(1);
    const h = headers();
    h.set(SAMPLE_TS_HEADER, String(T0 + 2_000));
    await js.publish(subjects.transition(moved.mint), JSON.stringify(receipts[0]), { msgID: receipts[0]!.alert_id, headers: h });
    host.stop();
  }, 60_000);
  afterAll(async () => {
    await nc?.close();
    await nats?.dispose();
  });

  const perAsset = async (i: number) => {
    const r = await readRecovery([assets[i]!], topology, { bulk: false });
    return { recovered: r.states.get(assets[i]!.mint), seq: r.transitionSeqs.get(assets[i]!.mint) ?? 0 };
  };

  it("reads a batch of bulkFrom assets or more in one pass, the same states as asset by asset", async () => {
    const reads = new RestoreReads({ topology, log: () => {}, bulkFrom: 20 });
    const got = await Promise.all(assets.slice(0, 25).map((a) => reads.read(a)));
    expect(reads.stats).toEqual({ batches: 1, bulk: 1, transitionPasses: 0 });
    for (let i = 0; i < 25; i++) expect(got[i], assets[i]!.symbol).toEqual(await perAsset(i));
    // The transition's state resumes after its sample's stamp, not after its (later) evaluation instant.
    expect(got[7]!.recovered!.source).toBe("transition");
    expect(got[7]!.recovered!.state.last!.ts).toBe(T0 + 2_000);
    expect(got[7]!.recovered!.state.evaluatedAt).toBe(T0 + 2_000 + LATE_MS);
    expect(got[7]!.seq).toBeGreaterThan(0);
    expect(got[3]!.recovered!.source).toBe("snapshot");
  });

  it("ends its pass while the streams are being written (a take-over beside running engines), with every state", async () => {
    // Other engines keep rewriting the snapshots of assets 30-39, faster than a pass reads them, until the read is done
    // (waiting for nothing pending, the pass never ended).
    const rewritten = await Promise.all(
      assets.slice(30).map(async (a, i) => ({ subject: subjects.actorSnapshot(a.mint), payload: JSON.stringify(assetStateToJSON((await perAsset(30 + i)).recovered!.state)) })),
    );
    let writes = 0;
    const writer = setInterval(() => {
      for (let k = 0; k < 10; k++) {
        const w = rewritten[writes++ % rewritten.length]!;
        nc.publish(w.subject, w.payload);
      }
    }, 1);
    try {
      await new Promise((r) => setTimeout(r, 50));
      const reads = new RestoreReads({ topology, log: () => {}, bulkFrom: 20 });
      const got = await Promise.all(assets.map((a) => reads.read(a)));
      clearInterval(writer);
      expect(writes).toBeGreaterThan(0);
      expect(reads.stats).toEqual({ batches: 1, bulk: 1, transitionPasses: 0 });
      for (let i = 0; i < assets.length; i++) expect(got[i], assets[i]!.symbol).toEqual(await perAsset(i));
    } finally {
      clearInterval(writer);
    }
  }, 30_000);

  it("reads every asset on its own, unbatched, without bulkFrom (a replicated cluster)", async () => {
    const unbatched = new RestoreReads({ topology, log: () => {} });
    const got = await Promise.all(assets.slice(0, 25).map((a) => unbatched.read(a)));
    expect(unbatched.stats).toEqual({ batches: 0, bulk: 0, transitionPasses: 0 });
    for (let i = 0; i < 25; i++) expect(got[i], assets[i]!.symbol).toEqual(await perAsset(i));
  });

  it("on a replicated cluster reads a batch's transitions in one pass and each snapshot on its own, the same states", async () => {
    const reads = new RestoreReads({ topology, log: () => {}, passTransitions: true });
    const got = await Promise.all(assets.map((a) => reads.read(a)));
    expect(reads.stats).toEqual({ batches: 1, bulk: 0, transitionPasses: 1 });
    for (let i = 0; i < assets.length; i++) expect(got[i], assets[i]!.symbol).toEqual(await perAsset(i));
    expect(got[7]!.recovered!.source).toBe("transition");
    expect(got[7]!.recovered!.state.last!.ts).toBe(T0 + 2_000);
    expect(got[7]!.seq).toBeGreaterThan(0);
    // A batch below BULK_FROM (32) is read asset by asset.
    const few = await Promise.all(assets.slice(0, 5).map((a) => reads.read(a)));
    expect(reads.stats).toEqual({ batches: 2, bulk: 0, transitionPasses: 1 });
    for (let i = 0; i < 5; i++) expect(few[i], assets[i]!.symbol).toEqual(await perAsset(i));
  });

  it("settles each asset of a transition-pass batch on its own: one read that fails fails only its asset", async () => {
    const failing = assets[3]!.mint;
    // A snapshot read that times out (a loaded cluster), for one asset of the batch.
    const actors = new Proxy(topology.actors, {
      get: (target, key, receiver) =>
        key === "get" ? (mint: string) => (mint === failing ? Promise.reject(new Error("timeout")) : target.get(mint)) : Reflect.get(target, key, receiver),
    });
    const reads = new RestoreReads({ topology: { ...topology, actors }, log: () => {}, passTransitions: true });
    const got = await Promise.allSettled(assets.map((a) => reads.read(a)));
    expect(reads.stats).toEqual({ batches: 1, bulk: 0, transitionPasses: 1 });
    for (let i = 0; i < assets.length; i++) {
      const r = got[i]!;
      if (assets[i]!.mint === failing) expect(r.status).toBe("rejected");
      else expect(r.status === "fulfilled" ? r.value : r.reason, assets[i]!.symbol).toEqual(await perAsset(i));
    }
  });

  it("reads a smaller batch asset by asset, and a rejected token's re-read on its own", async () => {
    const reads = new RestoreReads({ topology, log: () => {}, bulkFrom: 20 });
    const got = await Promise.all(assets.slice(5, 10).map((a) => reads.read(a)));
    expect(reads.stats).toEqual({ batches: 1, bulk: 0, transitionPasses: 0 });
    for (let i = 5; i < 10; i++) expect(got[i - 5], assets[i]!.symbol).toEqual(await perAsset(i));
    const again = await reads.read(moved, true);
    expect(reads.stats).toEqual({ batches: 1, bulk: 0, transitionPasses: 0 });
    expect(again.recovered!.source).toBe("transition");
    expect(again.recovered!.state.last!.ts).toBe(T0 + 2_000);
  });

  it("reads asset by asset when the transitions stream has over 4 subjects per asset of the batch (a pass would read them all)", async () => {
    // Other assets' transitions (not in the catalogue read here): over 4 subjects per asset of the batch.
    const js = jetstream(nc);
    for (let i = 0; i < 4 * assets.length; i++) await js.publish(subjects.transition(`other-${i}`), JSON.stringify({ detected_at: new Date(T0).toISOString() }));
    const reads = new RestoreReads({ topology, log: () => {}, passTransitions: true });
    const got = await Promise.all(assets.map((a) => reads.read(a)));
    expect(reads.stats).toEqual({ batches: 1, bulk: 0, transitionPasses: 0 });
    for (let i = 0; i < assets.length; i++) expect(got[i], assets[i]!.symbol).toEqual(await perAsset(i));
  });
});
