/**
 * The durable a batch consumer binds to (src/streams/jetstream/consumer.ts) when its creation's answer is lost, as a
 * cluster's meta leader does when two processes starting together create the same durable: the start looks it up
 * again instead of failing, and consumes from it.
 */
import { jetstream, jetstreamManager, StorageType, type JetStreamManager } from "@nats-io/jetstream";
import { beforeAll, describe, expect, it } from "vitest";
import { ensureDurable, startBatchConsumer, type BatchMessage } from "../../src/streams/jetstream/index.ts";
import { natsForSuite } from "../support/nats.ts";
import { waitFor } from "../support/ports.ts";

const suite = natsForSuite();
let jsm: JetStreamManager;

beforeAll(async () => {
  jsm = await jetstreamManager(suite.nc);
  await jsm.streams.add({ name: "BC", subjects: ["bc.>"], storage: StorageType.Memory });
});

/** A manager whose look-ups time out `lookups` times and whose first creation is carried out but its answer lost. */
function lossy(inner: JetStreamManager, lookups: number): { jsm: JetStreamManager; calls: string[] } {
  const calls: string[] = [];
  let added = false;
  const consumers = new Proxy(inner.consumers, {
    get(target, prop, receiver) {
      if (prop === "info") {
        return async (stream: string, name: string) => {
          calls.push("info");
          if (lookups-- > 0) throw new Error("TimeoutError: timeout");
          return target.info(stream, name);
        };
      }
      if (prop === "add") {
        return async (stream: string, config: never) => {
          calls.push("add");
          const info = await target.add(stream, config);
          if (!added) {
            added = true;
            throw new Error("TimeoutError: timeout");
          }
          return info;
        };
      }
      return Reflect.get(target, prop, receiver) as unknown;
    },
  });
  return { jsm: new Proxy(inner, { get: (t, p, r) => (p === "consumers" ? consumers : (Reflect.get(t, p, r) as unknown)) }), calls };
}

describe("startBatchConsumer", () => {
  it("looks the durable up again when its creation's answer was lost, and consumes from it", async () => {
    const { jsm: flaky, calls } = lossy(jsm, 0);
    const got: BatchMessage[] = [];
    const c = await startBatchConsumer(suite.nc, flaky, { stream: "BC", durable: "lost-answer", filterSubject: "bc.>" }, async (b) => void got.push(...b));
    // Not found, created (answer lost), found.
    expect(calls).toEqual(["info", "add", "info"]);
    await jetstream(suite.nc).publish("bc.x", "1");
    await waitFor(() => got.length === 1, 5_000, "the message");
    await c.stop();
  });

  it("tries a look-up that timed out again; the durable's look-up gives up after four (the start tries it again)", async () => {
    const slow = lossy(jsm, 2);
    const c = await startBatchConsumer(suite.nc, slow.jsm, { stream: "BC", durable: "slow-lookup", filterSubject: "bc.>" }, async () => {});
    expect(slow.calls).toEqual(["info", "info", "info", "add", "info"]);
    await c.stop();
    const never = lossy(jsm, 100);
    // startBatchConsumer runs this again while NATS times out (untilAnswered, test/nats/start-timeouts.test.ts).
    await expect(ensureDurable(never.jsm, "BC", { durable_name: "never", filter_subject: "bc.>" })).rejects.toThrow(/timeout/);
    expect(never.calls).toEqual(["info", "info", "info", "info"]);
  });
});
