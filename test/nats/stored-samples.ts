import type { JetStreamManager } from "@nats-io/jetstream";
import { TOPOLOGY } from "../../src/streams/jetstream/index.ts";
import { decodeSampleBatch, isSampleBatch } from "../../src/streams/jetstream/sample-batch.ts";
import type { SampleMessage } from "../../src/streams/jetstream/messages.ts";

/** Every sample `PEG_SAMPLES` holds, in stream order: the batches decoded, a single (`v: 1`) message as itself. */
export async function storedSamples(jsm: JetStreamManager): Promise<SampleMessage[]> {
  const { state } = await jsm.streams.info(TOPOLOGY.samples.stream);
  const out: SampleMessage[] = [];
  if (state.messages === 0) return out;
  for (let seq = state.first_seq; seq <= state.last_seq; seq++) {
    const m = await jsm.streams.getMessage(TOPOLOGY.samples.stream, { seq }).catch(() => null);
    if (m === null) continue;
    if (isSampleBatch(m.data)) out.push(...decodeSampleBatch(m.data));
    else out.push(m.json<SampleMessage>());
  }
  return out;
}
