/**
 * The sample publisher (src/streams/jetstream/pipelined-publisher.ts) against a real nats-server: acks come back on one
 * subscription and settle the right publish, a repeated `Nats-Msg-Id` is a duplicate, the server's errors and its
 * silence are rejections (counted), the window bounds what is in flight, and a close settles everything.
 */
import { DiscardPolicy, jetstreamManager, JetStreamApiError, StorageType, type JetStreamManager } from "@nats-io/jetstream";
import { beforeAll, describe, expect, it } from "vitest";
import { PipelinedPublisher } from "../../src/streams/jetstream/index.ts";
import { natsForSuite } from "../support/nats.ts";

const utf8 = new TextEncoder();

const suite = natsForSuite();
let jsm: JetStreamManager;

beforeAll(async () => {
  jsm = await jetstreamManager(suite.nc);
  await jsm.streams.add({ name: "PP", subjects: ["pp.>"], storage: StorageType.Memory, duplicate_window: 60_000_000_000 });
  await jsm.streams.add({ name: "PP_ONE", subjects: ["one.>"], storage: StorageType.Memory, max_msgs: 1, discard: DiscardPolicy.New });
});

describe("PipelinedPublisher", () => {
  it("settles each publish with its own ack, in the stream, in publish order", async () => {
    const p = new PipelinedPublisher(suite.nc, { window: 64 });
    const n = 2_000;
    const acks = await Promise.all(Array.from({ length: n }, (_, i) => p.publish(`pp.a${i % 7}`, utf8.encode(String(i)), `m-${i}`)));
    // One connection keeps order: the sequences are consecutive in publish order.
    const first = acks[0]!.seq;
    expect(acks.map((a) => a.seq)).toEqual(Array.from({ length: n }, (_, i) => first + i));
    expect(acks.every((a) => a.stream === "PP" && !a.duplicate)).toBe(true);
    // Each ack belongs to its own message.
    for (const i of [0, 1, 999, n - 1]) {
      const m = await jsm.streams.getMessage("PP", { seq: acks[i]!.seq });
      expect(new TextDecoder().decode(m!.data)).toBe(String(i));
      expect(m!.header?.get("Nats-Msg-Id")).toBe(`m-${i}`);
    }
    expect(p.stats).toEqual({ published: n, failed: 0, inFlight: 0 });
    p.close();
  });

  it("reports a repeated Nats-Msg-Id as a duplicate of the stored message", async () => {
    const p = new PipelinedPublisher(suite.nc);
    const a = await p.publish("pp.dup", utf8.encode("x"), "dup-1");
    const b = await p.publish("pp.dup", utf8.encode("x"), "dup-1");
    expect(a.duplicate).toBe(false);
    expect(b).toMatchObject({ stream: "PP", seq: a.seq, duplicate: true });
    p.close();
  });

  it("rejects with the server's error, and when no stream listens on the subject", async () => {
    const p = new PipelinedPublisher(suite.nc);
    await p.publish("one.a", utf8.encode("1"), "one-1");
    const full = await p.publish("one.a", utf8.encode("2"), "one-2").catch((e: unknown) => e);
    expect(full).toBeInstanceOf(JetStreamApiError);
    expect((full as JetStreamApiError).message).toMatch(/maximum messages/i);
    await expect(p.publish("nostream.x", utf8.encode("3"), "none-1")).rejects.toThrow(/no JetStream stream listens on nostream\.x/);
    expect(p.stats).toEqual({ published: 1, failed: 2, inFlight: 0 });
    p.close();
  });

  it("rejects a publish nobody acknowledges within the timeout, and ignores its late ack", async () => {
    // A core subscriber that answers late: interest, so no 503, and no ack in time.
    const late = suite.nc.subscribe("silent.x", {
      callback: (_e, m) => {
        setTimeout(() => m.respond(utf8.encode('{"stream":"S","seq":1}')), 600);
      },
    });
    const p = new PipelinedPublisher(suite.nc, { timeoutMs: 200 });
    await expect(p.publish("silent.x", utf8.encode("1"), "s-1")).rejects.toThrow(/TimeoutError: no ack for the publish to silent\.x within 200 ms/);
    await new Promise((r) => setTimeout(r, 700));
    expect(p.stats).toEqual({ published: 0, failed: 1, inFlight: 0 });
    late.unsubscribe();
    p.close();
  });

  it("keeps at most `window` publishes in flight; a close rejects what is still pending", async () => {
    const held = suite.nc.subscribe("held.x", { callback: () => {} });
    const p = new PipelinedPublisher(suite.nc, { window: 4, timeoutMs: 60_000 });
    const results = Array.from({ length: 10 }, (_, i) => p.publish("held.x", utf8.encode(String(i)), `h-${i}`).then(() => "acked", (e: Error) => e.message));
    await new Promise((r) => setTimeout(r, 100));
    expect(p.stats.inFlight).toBe(4);
    p.close();
    expect(await Promise.all(results)).toEqual(Array.from({ length: 10 }, () => "the publisher is closed"));
    expect(p.stats).toEqual({ published: 0, failed: 4, inFlight: 0 });
    held.unsubscribe();
  });
});
