/**
 * Overload (issue 15): when JetStream cannot take the evaluated samples as fast as they come, the engine link's queue
 * fills and further samples are dropped. That is never silent: each drop is counted (`/metrics`
 * peg_oracle_samples_dropped_total), the link logs a warning (at most every 10 s) and `overload()` gives `/readyz` its
 * reason for 30 s after the last drop.
 */
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, type JetStreamClient } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ActorHost } from "../../src/actors/index.ts";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import { SimulatedClock } from "../../src/clock.ts";
import { readinessBody } from "../../src/http/routes/health.ts";
import { D } from "../../src/methodology/index.ts";
import { EngineLink, ensureTopology, type Topology } from "../../src/streams/jetstream/index.ts";
import { startNats, type TestNats } from "../support/nats.ts";

const catalog = loadShippedCatalog();
const USDC = catalog.bySymbol("USDC")!;
const T0 = Date.UTC(2026, 5, 12, 10, 0, 0);

let nats: TestNats;
let nc: NatsConnection;
let topology: Topology;

beforeAll(async () => {
  nats = await startNats();
  nc = await connect({ servers: nats.url });
  topology = await ensureTopology(nc);
});

afterAll(async () => {
  await nc?.close();
  await nats?.dispose();
});

/** A JetStream client whose sample publishes never get an ack (a stalled or saturated server). */
function stalled(js: JetStreamClient): JetStreamClient {
  return new Proxy(js, {
    get(target, prop, receiver) {
      if (prop === "publish") return (subject: string) => (subject.startsWith("peg.sample.") ? new Promise(() => {}) : Promise.reject(new Error("unexpected")));
      return Reflect.get(target, prop, receiver) as unknown;
    },
  });
}

describe("EngineLink under overload", () => {
  it("counts, logs and reports dropped samples instead of dropping them silently", async () => {
    const clock = new SimulatedClock(T0);
    const host = new ActorHost({ assets: [USDC], clock, gitSha: "" });
    const warnings: { msg: string; fields?: Record<string, unknown> }[] = [];
    const link = new EngineLink(host, nc, stalled(jetstream(nc)), topology, {
      maxQueuedSamples: 3,
      snapshotEveryMs: 60_000,
      log: (level, msg, fields) => {
        if (level === "warn") warnings.push({ msg, ...(fields === undefined ? {} : { fields }) });
      },
    });
    link.start();
    expect(link.overload()).toBeNull();
    for (let i = 0; i < 10; i++) {
      clock.set(T0 + i * 1_000);
      host.ingest({ asset: "USDC", ts: clock.now(), intrinsic_usd: new D(1), market_usd: new D("1"), intrinsic_sol: null, market_sol: null, cr: null, oracle: {}, intrinsic_stale: false });
    }
    expect(link.stats).toMatchObject({ queuedSamples: 3, droppedSamples: 7 });
    // One warning for the burst, with the figures.
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ msg: expect.stringMatching(/^overloaded/), fields: { dropped_total: 1, max_queued: 3 } });
    const why = link.overload();
    expect(why).toMatch(/^overloaded: 7 evaluated samples dropped since start/);
    // /readyz: not ready, with the reason.
    const body = readinessBody({ database: true, nats: true, engine: true, snapshot_age_secs: 0, overloaded: why! });
    expect(body).toMatchObject({ ok: false, error: "not_ready", message: why });
    // It clears 30 s after the last drop.
    expect(link.overload(Date.now() + 31_000)).toBeNull();
    host.stop?.();
  });
});
