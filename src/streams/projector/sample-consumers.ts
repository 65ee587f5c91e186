import type { JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { startBatchConsumer, type BatchConsumer, type BatchMessage } from "../jetstream/consumer.ts";
import { TOPOLOGY } from "../jetstream/topology.ts";
import { SAMPLE_MESSAGES_PER_BATCH } from "./projector.ts";

/**
 * The durables the sample projector reads `PEG_SAMPLES` with, one per kind of message, so that neither ever changes
 * its filter (nats-server 2.9 applies a changed filter to new messages late): `projector-sample-batches` on
 * `peg.samples.>` (what this build publishes) and `projector-samples` on `peg.sample.>`, the durable of builds before
 * issue 25, which keeps its position and projects what such a build left, or an engine not yet upgraded publishes.
 */
export const SAMPLE_DURABLES = [
  { durable: "projector-sample-batches", filterSubject: TOPOLOGY.samples.subjects },
  { durable: "projector-samples", filterSubject: TOPOLOGY.samples.legacySubjects },
] as const;

/** Starts both durables on `handler` (the sample projector, idempotent); one `BatchConsumer` for the two. */
export async function startSampleConsumers(
  nc: NatsConnection,
  jsm: JetStreamManager,
  handler: (batch: readonly BatchMessage[]) => Promise<void>,
  onError?: (e: unknown) => void,
): Promise<BatchConsumer> {
  const started: BatchConsumer[] = [];
  try {
    for (const d of SAMPLE_DURABLES) {
      started.push(await startBatchConsumer(nc, jsm, { stream: TOPOLOGY.samples.stream, ...d, maxBatch: SAMPLE_MESSAGES_PER_BATCH, ...(onError === undefined ? {} : { onError }) }, handler));
    }
  } catch (e) {
    for (const c of started) await c.stop();
    throw e;
  }
  return {
    stop: async () => {
      for (const c of started) await c.stop();
    },
    get stats() {
      const sum = { batches: 0, messages: 0, failures: 0 };
      for (const c of started) {
        sum.batches += c.stats.batches;
        sum.messages += c.stats.messages;
        sum.failures += c.stats.failures;
      }
      return sum;
    },
  };
}
