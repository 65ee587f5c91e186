import { randomBytes } from "node:crypto";
import type { PubAck } from "@nats-io/jetstream";
import { systemClock, type Clock } from "../../clock.ts";
import { partitionOf } from "./lease-partitions.ts";
import type { SampleMessage } from "./messages.ts";
import type { SamplePublisher } from "./pipelined-publisher.ts";
import { encodeSampleBatch } from "./sample-batch.ts";
import { subjects } from "./topology.ts";

export type LogFn = (level: "debug" | "info" | "warn" | "error", msg: string, fields?: Record<string, unknown>) => void;

/** Warnings about dropped samples: at most one per this period. */
const DROP_WARN_EVERY_MS = 10_000;
/** `overload()` reports a drop for this long after it. */
const OVERLOAD_HOLD_MS = 30_000;
/** Tries of one batch publish before its samples are counted as dropped (PEG_SAMPLES deduplicates retries for 60 s). */
const BATCH_ATTEMPTS = 3;

export interface SampleRecorderOptions {
  readonly publisher: SamplePublisher;
  /** Samples waiting (in an open batch or a publish not yet acknowledged) beyond which new ones are dropped. */
  readonly maxQueued: number;
  /** Subjects the batches are spread over (`peg.samples.<partitionOf(mint, n)>`); 1: `peg.samples.0` only. */
  readonly partitions: number;
  /** A batch is published at most this long after its first sample. */
  readonly flushMs: number;
  /** Samples in one message at most (a full batch is published at once). */
  readonly maxBatch: number;
  /** Wait before the first retry of a failed publish (doubling). */
  readonly retryBaseMs: number;
  /** Wall time of the overload report. */
  readonly clock?: Clock;
  readonly log: LogFn;
}

/**
 * Records evaluated samples in `PEG_SAMPLES`, many to a message (issue 25): per partition of the mints, a batch is
 * published when it holds `maxBatch` samples or `flushMs` after its first one, as `sample-batch.ts` encodes it, with a
 * `Nats-Msg-Id` unique to this process and batch (`<recorder id>.<n>`), so a retry of a publish whose ack was lost is a
 * server-side duplicate. Best effort, never silent: when `maxQueued` samples already wait, or a batch failed
 * `BATCH_ATTEMPTS` times, its samples are dropped, counted, logged as a warning and reported by `overload()`.
 * Batches are handed to the publisher in the order they were closed.
 */
export class SampleRecorder {
  readonly #o: SampleRecorderOptions;
  readonly #clock: Clock;
  /** This process's batches' id prefix. */
  readonly #id = randomBytes(8).toString("hex");
  readonly #open = new Map<number, SampleMessage[]>();
  readonly #inFlight = new Set<Promise<void>>();
  #order: Promise<unknown> = Promise.resolve();
  #timer: ReturnType<typeof setTimeout> | null = null;
  #batches = 0;
  #queued = 0;
  #acked = 0;
  #dropped = 0;
  #lastDropAt: number | null = null;
  #lastDropWarnAt = -Infinity;
  #closed = false;

  constructor(options: SampleRecorderOptions) {
    if (!Number.isSafeInteger(options.partitions) || options.partitions < 1) throw new RangeError("partitions must be a positive integer");
    if (!Number.isSafeInteger(options.maxBatch) || options.maxBatch < 1) throw new RangeError("maxBatch must be a positive integer");
    this.#o = options;
    this.#clock = options.clock ?? systemClock;
  }

  get stats() {
    return { queued: this.#queued, acked: this.#acked, dropped: this.#dropped, batches: this.#batches };
  }

  /** The publisher's own counts (messages, not samples). */
  get publisherStats() {
    return this.#o.publisher.stats;
  }

  /** Adds one evaluated sample to its partition's open batch, or drops it (counted) when too many wait. */
  record(mint: string, message: SampleMessage): void {
    if (this.#closed) return this.#drop(1, "the link is closed");
    if (this.#queued >= this.#o.maxQueued) return this.#drop(1, "the sample publish queue is full");
    this.#queued++;
    const p = this.#o.partitions === 1 ? 0 : partitionOf(mint, this.#o.partitions);
    const batch = this.#open.get(p);
    if (batch === undefined) this.#open.set(p, [message]);
    else batch.push(message);
    if ((batch?.length ?? 1) >= this.#o.maxBatch) this.#seal(p);
    else this.#timer ??= setTimeout(() => this.flush(), this.#o.flushMs);
  }

  /** Publishes every open batch now. */
  flush(): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    for (const p of [...this.#open.keys()]) this.#seal(p);
  }

  #seal(p: number): void {
    const batch = this.#open.get(p);
    this.#open.delete(p);
    if (batch === undefined || batch.length === 0) return;
    const subject = subjects.sampleBatch(p);
    const msgId = `${this.#id}.${++this.#batches}`;
    // Encoded on the thread pool now; handed to the publisher after the batches closed before it.
    const encoded = encodeSampleBatch(batch);
    const sent = this.#order.then(() => encoded).then((payload) => ({ payload, first: this.#o.publisher.publish(subject, payload, msgId) }));
    this.#order = sent.catch(() => {});
    const done = sent
      .then(({ payload, first }) => this.#settle(first, subject, payload, msgId, batch.length))
      .catch((e: unknown) => this.#drop(batch.length, `a sample batch could not be encoded: ${e instanceof Error ? e.message : String(e)}`))
      .finally(() => {
        this.#queued -= batch.length;
        this.#inFlight.delete(done);
      });
    this.#inFlight.add(done);
  }

  /** Waits for the publish's ack, publishing again (same `Nats-Msg-Id`) after a failure, up to `BATCH_ATTEMPTS` tries. */
  async #settle(first: Promise<PubAck>, subject: string, payload: Uint8Array, msgId: string, n: number): Promise<void> {
    let attempt = 1;
    let pending = first;
    for (let wait = this.#o.retryBaseMs; ; wait *= 2) {
      try {
        await pending;
        this.#acked += n;
        return;
      } catch {
        if (attempt >= BATCH_ATTEMPTS || this.#closed) return this.#drop(n, "a sample publish failed");
      }
      await new Promise((r) => setTimeout(r, wait));
      attempt++;
      pending = this.#o.publisher.publish(subject, payload, msgId);
    }
  }

  /** Counts samples not recorded in PEG_SAMPLES, and says so: a warning at most every 10 s while it lasts. */
  #drop(n: number, why: string): void {
    this.#dropped += n;
    const now = this.#clock.now();
    this.#lastDropAt = now;
    if (now - this.#lastDropWarnAt < DROP_WARN_EVERY_MS) return;
    this.#lastDropWarnAt = now;
    this.#o.log("warn", "overloaded: evaluated samples are being dropped from PEG_SAMPLES", {
      why,
      dropped_total: this.#dropped,
      queued: this.#queued,
      max_queued: this.#o.maxQueued,
    });
  }

  /** Why samples are being lost (one was dropped within the last `OVERLOAD_HOLD_MS`), or null. */
  overload(now = this.#clock.now()): string | null {
    if (this.#lastDropAt === null || now - this.#lastDropAt > OVERLOAD_HOLD_MS) return null;
    return `overloaded: ${this.#dropped} evaluated samples dropped since start, the last ${Math.max(0, Math.round((now - this.#lastDropAt) / 1000))} s ago (sample publish queue ${this.#queued}/${this.#o.maxQueued})`;
  }

  /** Publishes what is open, waits until every batch is acknowledged or dropped, then closes the publisher. */
  async close(): Promise<void> {
    this.flush();
    // From here a failed publish is not tried again, and a sample recorded late is dropped (counted).
    this.#closed = true;
    while (this.#inFlight.size > 0) await Promise.all([...this.#inFlight]);
    this.#o.publisher.close();
  }
}
