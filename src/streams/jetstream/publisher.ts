import type { JetStreamClient, PubAck } from "@nats-io/jetstream";
import { headers as natsHeaders } from "@nats-io/transport-node";
import { isTransientNatsError } from "./until-answered.ts";

/** Without an answer this long, the same publish is sent again (within the caller's timeout). */
const RESEND_MS = 1_000;
/** After a quick transient failure (no responders, JetStream temporarily unavailable): the next send. */
const RETRY_MS = 250;

function natsHeadersOf(record: Readonly<Record<string, string>>) {
  const h = natsHeaders();
  for (const [k, v] of Object.entries(record)) h.set(k, v);
  return h;
}

/** How one message is published (`BoundedPublisher.publish`). */
export interface PublishOptions {
  /** Stored only if the last message on the subject has this stream sequence (0: none), else error 10071. */
  readonly lastSubjectSequence?: number;
  /** Headers besides `Nats-Msg-Id`. */
  readonly headers?: Readonly<Record<string, string>>;
}

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

  readonly #resendMs: number;

  constructor(js: JetStreamClient, window = 256, options: { readonly resendMs?: number } = {}) {
    if (!Number.isInteger(window) || window < 1) throw new RangeError("window must be a positive integer");
    this.#js = js;
    this.#window = window;
    this.#resendMs = options.resendMs ?? RESEND_MS;
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
   *
   * Within `timeoutMs` the same message is sent again every `resendMs` (1 s) while unanswered, and 250 ms after a
   * transient failure: a publish sent while the stream elects a leader (4-7 s on nats-server 2.9 after its leader
   * died) is dropped unanswered, and waiting out the whole timeout before the caller's next try delivered the
   * transition seconds after the new leader was there (issue 26). A resend is the same message: `msgID` makes it a
   * duplicate, and with `lastSubjectSequence` one whose earlier send landed is refused with 10071, which the caller
   * reads as that send's ack (EngineLink). The first answer that is not a transient failure settles the call.
   */
  async publish(
    subject: string,
    data: string | Uint8Array,
    msgID: string,
    timeoutMs = 5_000,
    options: PublishOptions = {},
  ): Promise<PubAck> {
    while (this.#inFlight >= this.#window) await new Promise<void>((r) => this.#waiters.push(r));
    this.#inFlight++;
    try {
      const ack = await this.#resending(subject, data, msgID, timeoutMs, options);
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

  #resending(subject: string, data: string | Uint8Array, msgID: string, timeoutMs: number, options: PublishOptions): Promise<PubAck> {
    const deadline = performance.now() + timeoutMs;
    const { lastSubjectSequence, headers } = options;
    const extra = {
      ...(lastSubjectSequence === undefined ? {} : { expect: { lastSubjectSequence } }),
      ...(headers === undefined ? {} : { headers: natsHeadersOf(headers) }),
    };
    return new Promise<PubAck>((resolve, reject) => {
      let settled = false;
      let outstanding = 0;
      let lastError: unknown = null;
      let timer: ReturnType<typeof setTimeout> | null = null;
      const settle = (f: () => void) => {
        if (settled) return;
        settled = true;
        if (timer !== null) clearTimeout(timer);
        f();
      };
      const schedule = (ms: number) => {
        if (timer !== null) clearTimeout(timer);
        const left = deadline - performance.now();
        timer = left > ms ? setTimeout(send, ms) : null;
        if (timer === null && outstanding === 0) settle(() => reject(lastError));
      };
      const send = () => {
        timer = null;
        if (settled) return;
        const left = deadline - performance.now();
        outstanding++;
        this.#js.publish(subject, data, { msgID, timeout: Math.max(1, Math.ceil(left)), ...extra }).then(
          (ack) => settle(() => resolve(ack)),
          (e: unknown) => {
            outstanding--;
            if (!isTransientNatsError(e)) return settle(() => reject(e));
            lastError = e;
            schedule(RETRY_MS);
          },
        );
        schedule(this.#resendMs);
      };
      send();
    });
  }

  /** Resolves when nothing is in flight (for an orderly shutdown). */
  async drain(): Promise<void> {
    while (this.#inFlight > 0) await new Promise((r) => setTimeout(r, 5));
  }
}
