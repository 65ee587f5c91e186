import { AckPolicy, DeliverPolicy, jetstream, type JetStreamManager, type JsMsg } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";

/** One message of a batch: its stream sequence and payload. */
export interface BatchMessage {
  readonly seq: number;
  readonly subject: string;
  readonly data: Uint8Array;
}

export interface BatchConsumerOptions {
  readonly stream: string;
  readonly durable: string;
  /** One subject filter (server 2.9 takes a single `filter_subject`). */
  readonly filterSubject: string;
  /** Most messages handed to the handler at once (credit-based backpressure). Default 256. */
  readonly maxBatch?: number;
  /** Longest wait for a batch to fill, at least 1000 ms (the server's minimum pull expiry). Default 1000 ms. */
  readonly maxWaitMs?: number;
  /** Called when a batch fails; the batch is not acked and is redelivered after the ack wait. */
  readonly onError?: (e: unknown) => void;
}

export interface BatchConsumer {
  /** Stops fetching after the batch in hand; resolves when the loop has ended. Idempotent. */
  stop(): Promise<void>;
  readonly stats: { readonly batches: number; readonly messages: number; readonly failures: number };
}

/**
 * A durable pull consumer that hands batches to `handler` and acks them only after it resolved: at-least-once, so
 * the handler must be idempotent (the projector is, by alert id and by stream sequence). The durable is created or
 * updated idempotently. At most one batch is in flight.
 */
export async function startBatchConsumer(
  nc: NatsConnection,
  jsm: JetStreamManager,
  opts: BatchConsumerOptions,
  handler: (batch: readonly BatchMessage[]) => Promise<void>,
): Promise<BatchConsumer> {
  const maxBatch = opts.maxBatch ?? 256;
  const config = {
    durable_name: opts.durable,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    filter_subject: opts.filterSubject,
    max_ack_pending: maxBatch * 4,
    ack_wait: 30_000_000_000, // 30 s in nanoseconds: a batch not acked by then is redelivered
  };
  try {
    await jsm.consumers.info(opts.stream, opts.durable);
  } catch {
    await jsm.consumers.add(opts.stream, config);
  }
  const consumer = await jetstream(nc).consumers.get(opts.stream, opts.durable);
  const stats = { batches: 0, messages: 0, failures: 0 };
  let running = true;
  const loop = (async () => {
    while (running) {
      const batch: JsMsg[] = [];
      try {
        const iter = await consumer.fetch({ max_messages: maxBatch, expires: Math.max(1000, opts.maxWaitMs ?? 1000) });
        for await (const m of iter) batch.push(m);
      } catch (e) {
        if (!running) break;
        opts.onError?.(e);
        await new Promise((r) => setTimeout(r, 500));
        continue;
      }
      if (batch.length === 0) continue;
      try {
        await handler(batch.map((m) => ({ seq: m.seq, subject: m.subject, data: m.data })));
        for (const m of batch) m.ack();
        stats.batches++;
        stats.messages += batch.length;
      } catch (e) {
        stats.failures++;
        for (const m of batch) m.nak(1_000);
        opts.onError?.(e);
      }
    }
  })();
  return {
    stats,
    stop: async () => {
      running = false;
      await loop;
    },
  };
}
