/**
 * Issue 25 item 4, JetStream side: a `PEG_SAMPLES` stream and `projector-samples` durable of a build before sample
 * batches (one `v: 1` message per sample on `peg.sample.<mint>`, the durable filtered on it, part of it projected
 * already) are migrated in place at start. On a real nats-server: the stream gains `peg.samples.>` and keeps its
 * messages, the old durable keeps its position (a second one reads the batches), and the projector writes exactly the
 * samples not yet projected, old-format and batched alike: none lost, none twice.
 */
import { AckPolicy, jetstreamManager } from "@nats-io/jetstream";
import { describe, expect, it } from "vitest";
import { ActorHost, type StateEvent } from "../../src/actors/index.ts";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import { SimulatedClock } from "../../src/clock.ts";
import { D } from "../../src/methodology/index.ts";
import { ensureTopology, subjects, TOPOLOGY } from "../../src/streams/jetstream/index.ts";
import { sampleMessage } from "../../src/streams/jetstream/messages.ts";
import { encodeSampleBatch } from "../../src/streams/jetstream/sample-batch.ts";
import { sampleProjector, type ProjectorStats } from "../../src/streams/projector/projector.ts";
import { startSampleConsumers } from "../../src/streams/projector/sample-consumers.ts";
import { openStore } from "../../src/store/index.ts";
import { natsForSuite } from "../support/nats.ts";
import { waitFor } from "../support/ports.ts";

const suite = natsForSuite();
const catalog = loadShippedCatalog();
const USDC = catalog.bySymbol("USDC")!;
const T0 = Date.now() - 3600_000;

function evaluations(n: number): StateEvent[] {
  const clock = new SimulatedClock(T0);
  const host = new ActorHost({ assets: [USDC], clock, gitSha: "" });
  const out: StateEvent[] = [];
  host.events$.subscribe((e) => (e.kind === "state" ? out.push(e) : undefined));
  for (let i = 0; i < n; i++) {
    clock.set(T0 + i * 1_000);
    host.ingest({ asset: "USDC", ts: clock.now(), intrinsic_usd: new D(1), market_usd: new D(i % 2 === 0 ? "1" : "0.9995"), intrinsic_sol: null, market_sol: null, cr: null, oracle: {}, intrinsic_stale: false });
  }
  host.stop();
  return out;
}

describe("PEG_SAMPLES of an earlier build", () => {
  it("is migrated in place: the projector resumes where it was and projects old and new samples exactly once", async () => {
    const jsm = await jetstreamManager(suite.nc);
    const js = jsm.jetstream();
    const events = evaluations(30);
    const legacy = events.slice(0, 20).map(sampleMessage);
    const batched = events.slice(20).map(sampleMessage);

    // The earlier build: its stream, its durable (filtered on its subject), 20 samples of which 12 were projected.
    await jsm.streams.add({ name: TOPOLOGY.samples.stream, subjects: ["peg.sample.>"], max_age: 24 * 3600 * 1e9, duplicate_window: 60e9 });
    await jsm.consumers.add(TOPOLOGY.samples.stream, { durable_name: "projector-samples", ack_policy: AckPolicy.Explicit, filter_subject: "peg.sample.>", max_ack_pending: 2048 });
    for (const m of legacy) await js.publish(subjects.sample(m.mint), JSON.stringify(m), { msgID: `${m.mint}|${Date.parse(m.ts)}|${m.trigger}` });
    const old = await js.consumers.get(TOPOLOGY.samples.stream, "projector-samples");
    for (let i = 0; i < 12; i++) {
      const m = await old.next({ expires: 5_000 });
      expect(m?.seq).toBe(i + 1);
      await m!.ackAck();
    }

    // This build starts: topology, then the projector on the same durable; an engine publishes batches.
    await ensureTopology(suite.nc);
    expect((await jsm.streams.info(TOPOLOGY.samples.stream)).state.messages).toBe(20);
    const store = await openStore({ kind: "pglite-memory" }, new SimulatedClock(Date.now()));
    await store.upsertAssets(catalog.all);
    const stats: ProjectorStats = { projected: 0, duplicates: 0, rejected: 0 };
    const consumer = await startSampleConsumers(suite.nc, jsm, sampleProjector(store, stats));
    try {
      await js.publish(subjects.sampleBatch(0), await encodeSampleBatch(batched.slice(0, 6)), { msgID: "upgrade.1" });
      await js.publish(subjects.sampleBatch(0), await encodeSampleBatch(batched.slice(6)), { msgID: "upgrade.2" });

      await waitFor(() => stats.projected + stats.duplicates >= 8 + batched.length, 20_000, "the projection of what was not projected");
      await waitFor(async () => (await jsm.consumers.info(TOPOLOGY.samples.stream, "projector-samples")).num_ack_pending === 0, 10_000, "the acks");
      expect(stats).toMatchObject({ projected: 8 + batched.length, duplicates: 0, rejected: 0 });
      const rows = await store.history(USDC.mint, { bucket: "raw", from: T0 - 1, to: T0 + 3600_000, limit: 100 });
      expect(rows.map((r) => r.ts).sort((a, b) => a - b)).toEqual(events.slice(12).map((e) => e.now));
      for (const durable of ["projector-samples", "projector-sample-batches"]) expect((await jsm.consumers.info(TOPOLOGY.samples.stream, durable)).num_pending).toBe(0);
    } finally {
      await consumer.stop();
      await store.close();
    }
  });
});
