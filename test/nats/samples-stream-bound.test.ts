/**
 * `PEG_SAMPLES` is bounded by age and by bytes (issue 25, item 2), on a real nats-server (nats.conf: 20 GB of file
 * store): the default bound, a bound the server cannot reserve (halved until it can), a stream of the previous build
 * (no byte bound) updated in place without losing its messages, and the oldest samples discarded at the bound.
 */
import { jetstreamManager } from "@nats-io/jetstream";
import { describe, expect, it } from "vitest";
import { ensureTopology, subjects, TOPOLOGY } from "../../src/streams/jetstream/index.ts";
import { natsForSuite } from "../support/nats.ts";

const suite = natsForSuite();
const GIB = 2 ** 30;
const MINT = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";

async function samplesConfig() {
  const jsm = await jetstreamManager(suite.nc);
  return (await jsm.streams.info(TOPOLOGY.samples.stream)).config;
}

describe("PEG_SAMPLES bounds", () => {
  it("updates a stream of the previous build in place, then halves a bound the server cannot reserve", async () => {
    const jsm = await jetstreamManager(suite.nc);
    // As builds before issue 25 made it: one subject, one sample per message.
    await jsm.streams.add({ name: TOPOLOGY.samples.stream, subjects: ["peg.sample.>"], max_age: 24 * 3600 * 1e9 });
    const js = jsm.jetstream();
    for (let i = 0; i < 10; i++) await js.publish(subjects.sample(MINT), `{"i":${i}}`);

    const t = await ensureTopology(suite.nc);
    expect(t.samplesMaxBytes).toBe(10 * GIB);
    expect((await samplesConfig()).max_bytes).toBe(10 * GIB);
    expect((await samplesConfig()).subjects).toEqual(["peg.samples.>", "peg.sample.>"]);
    expect((await jsm.streams.info(TOPOLOGY.samples.stream)).state.messages).toBe(10);

    // 64 GiB does not fit the server's 20 GB file store: 32 GiB neither; 16 GiB does.
    const big = await ensureTopology(suite.nc, 1, { samplesMaxBytes: 64 * GIB });
    expect(big.samplesMaxBytes).toBe(16 * GIB);
    expect((await samplesConfig()).max_bytes).toBe(16 * GIB);
    expect((await samplesConfig()).max_age).toBe(24 * 3600 * 1e9);
  });

  it("discards the oldest samples at the byte bound", async () => {
    const jsm = await jetstreamManager(suite.nc);
    await ensureTopology(suite.nc, 1, { samplesMaxBytes: 256 * 1024 });
    const js = jsm.jetstream();
    const body = "x".repeat(1000);
    const acks = [];
    for (let i = 0; i < 600; i++) acks.push(js.publish(subjects.sample(MINT), body, { msgID: `bound-${i}` }));
    await Promise.all(acks);
    const { state } = await jsm.streams.info(TOPOLOGY.samples.stream);
    expect(state.bytes).toBeLessThanOrEqual(256 * 1024);
    expect(state.first_seq).toBeGreaterThan(11);
    expect(state.last_seq).toBe(610);
  });
});
