import { AckPolicy, DeliverPolicy, jetstream, JetStreamApiCodes, JetStreamApiError, type ConsumerConfig, type ConsumerInfo, type JetStreamManager, type JsMsg } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { untilAnswered } from "./until-answered.ts";

/** Tries of a durable's look-up and creation before a start fails. */
const DURABLE_ATTEMPTS = 4;

/**
 * The durable's info when it exists (undefined when this call created it). On a cluster, processes starting together
 * create the same durable at once; the meta leader may then leave one request unanswered (a JetStream API timeout)
 * although the durable was created: a failed look-up or creation is tried again, from the look-up, a few times.
 */
export async function ensureDurable(jsm: JetStreamManager, stream: string, config: Partial<ConsumerConfig> & { durable_name: string }): Promise<ConsumerInfo | undefined> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await jsm.consumers.info(stream, config.durable_name);
    } catch (e) {
      const missing = e instanceof JetStreamApiError && e.code === JetStreamApiCodes.ConsumerNotFound;
      if (!missing && attempt >= DURABLE_ATTEMPTS) throw e;
      if (missing) {
        try {
          await jsm.consumers.add(stream, config);
          return undefined;
        } catch (addError) {
          if (attempt >= DURABLE_ATTEMPTS) throw addError;
        }
      }
    }
    await new Promise((r) => setTimeout(r, 250 * attempt));
  }
}

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
  /** Most messages handed to the handler at once. Default 256. */
  readonly maxBatch?: number;
  /** How long a partial batch waits for more messages before it is handled. Default 10 ms. */
  readonly lingerMs?: number;
  /** Called when a batch fails; the batch is nak'ed and redelivered. */
  readonly onError?: (e: unknown) => void;
  /**
   * Where a newly created durable starts: `all` (default) from the first message the stream holds, `new` from the
   * next one published (a consumer added to a stream with history must not act on that history).
   */
  readonly startAt?: "all" | "new";
  /**
   * Strictly in stream order, even across crashes and across processes sharing the durable: at most one message is
   * outstanding (`max_ack_pending` 1, batches of one), so the next is delivered only once this one is acked, and an
   * unacked message of a dead process is redelivered (after `ackWaitMs`) before anything after it. For handlers
   * whose decisions depend on the ones before (webhook dispatch). Applied to an existing durable too.
   */
  readonly inOrder?: { readonly ackWaitMs: number };
}

export interface BatchConsumer {
  /** Stops consuming, waits for the batch in hand to be handled and acked. Idempotent. */
  stop(): Promise<void>;
  readonly stats: { readonly batches: number; readonly messages: number; readonly failures: number };
}

/**
 * A durable pull consumer that hands batches to `handler` and acks them only after it resolved: at-least-once, so
 * the handler must be idempotent (the projector is, by alert id and by sample identity). The durable is created if
 * missing. Backpressure is credit-based: `consume()` keeps at most two batches of messages buffered, and the next
 * batch is not handled before the previous one is acked; a partial batch waits at most `lingerMs`.
 */
export async function startBatchConsumer(
  nc: NatsConnection,
  jsm: JetStreamManager,
  opts: BatchConsumerOptions,
  handler: (batch: readonly BatchMessage[]) => Promise<void>,
): Promise<BatchConsumer> {
  const maxBatch = opts.inOrder === undefined ? (opts.maxBatch ?? 256) : 1;
  const lingerMs = opts.lingerMs ?? 10;
  const maxAckPending = opts.inOrder === undefined ? maxBatch * 4 : 1;
  // In nanoseconds: a batch not acked by then is redelivered.
  const ackWait = (opts.inOrder?.ackWaitMs ?? 30_000) * 1_000_000;
  // Every step is idempotent: a start under load (JetStream requests timing out) tries again instead of failing.
  const messages = await untilAnswered(`starting the consumer ${opts.durable}`, async () => {
    const existing = await ensureDurable(jsm, opts.stream, {
      durable_name: opts.durable,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: opts.startAt === "new" ? DeliverPolicy.New : DeliverPolicy.All,
      filter_subject: opts.filterSubject,
      max_ack_pending: maxAckPending,
      ack_wait: ackWait,
    });
    if (existing !== undefined && opts.inOrder !== undefined && (existing.config.max_ack_pending !== maxAckPending || existing.config.ack_wait !== ackWait)) {
      await jsm.consumers.update(opts.stream, opts.durable, { max_ack_pending: maxAckPending, ack_wait: ackWait });
    }
    const consumer = await jetstream(nc).consumers.get(opts.stream, opts.durable);
    return consumer.consume({ max_messages: maxBatch * 2 });
  });
  const stats = { batches: 0, messages: 0, failures: 0 };
  let buffer: JsMsg[] = [];
  let timer: ReturnType<typeof setTimeout> | null = null;
  let chain: Promise<void> = Promise.resolve();

  const handle = async (batch: JsMsg[]) => {
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
  };
  const flush = (): Promise<void> => {
    if (timer !== null) clearTimeout(timer);
    timer = null;
    const batch = buffer;
    buffer = [];
    if (batch.length > 0) chain = chain.then(() => handle(batch));
    return chain;
  };
  const loop = (async () => {
    for await (const m of messages) {
      buffer.push(m);
      if (buffer.length >= maxBatch) await flush();
      else timer ??= setTimeout(() => void flush(), lingerMs);
    }
  })().catch((e: unknown) => opts.onError?.(e));
  let stopped: Promise<void> | null = null;
  return {
    stats,
    stop: () =>
      (stopped ??= (async () => {
        await messages.close();
        await loop;
        await flush();
      })()),
  };
}
