import type { JetStreamClient, PubAck } from "@nats-io/jetstream";

/**
 * JetStream publishing with a bounded in-flight window: at most `window` publishes await their ack at once; a
 * further publish waits for a slot (backpressure reaches the caller as a pending promise, nothing is dropped).
 * `Nats-Msg-Id` makes a re-publish of the same decision a server-side duplicate.
 */
export class BoundedPublisher {
  readonly #js: JetStreamClient;
  readonly #window: number;
  #inFlight = 0;
  readonly #waiters: (() => void)[] = [];
  #published = 0;
  #failed = 0;

  constructor(js: JetStreamClient, window = 256) {
    if (!Number.isInteger(window) || window < 1) throw new RangeError("window must be a positive integer");
    this.#js = js;
    this.#window = window;
  }

  get inFlight(): number {
    return this.#inFlight;
  }

  get stats(): { published: number; failed: number; inFlight: number } {
    return { published: this.#published, failed: this.#failed, inFlight: this.#inFlight };
  }

  /**
   * Publishes and resolves with the server's ack (which reports `duplicate` for a repeated msgID). With
   * `lastSubjectSequence` the server stores the message only if the last message on `subject` has that stream
   * sequence (0: no message on the subject), else rejects it with JetStream error 10071 (wrong last sequence).
   */
  async publish(
    subject: string,
    data: string | Uint8Array,
    msgID: string,
    timeoutMs = 5_000,
    expect?: { readonly lastSubjectSequence: number },
  ): Promise<PubAck> {
    while (this.#inFlight >= this.#window) await new Promise<void>((r) => this.#waiters.push(r));
    this.#inFlight++;
    try {
      const ack = await this.#js.publish(subject, data, { msgID, timeout: timeoutMs, ...(expect === undefined ? {} : { expect }) });
      this.#published++;
      return ack;
    } catch (e) {
      this.#failed++;
      throw e;
    } finally {
      this.#inFlight--;
      this.#waiters.shift()?.();
    }
  }

  /** Resolves when nothing is in flight (for an orderly shutdown). */
  async drain(): Promise<void> {
    while (this.#inFlight > 0) await new Promise((r) => setTimeout(r, 5));
  }
}
