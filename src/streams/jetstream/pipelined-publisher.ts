import { createInbox, headers, type Msg, type MsgHdrs, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { JetStreamApiError, type ApiError, type PubAck } from "@nats-io/jetstream";

/** What publishes the link's sample messages: resolves with JetStream's ack, rejects when it is an error or late. */
export interface SamplePublisher {
  publish(subject: string, payload: Uint8Array, msgID?: string, extraHeaders?: Readonly<Record<string, string>>): Promise<PubAck>;
  readonly stats: { readonly published: number; readonly failed: number; readonly inFlight: number };
  /** Resolves when nothing is in flight (for an orderly shutdown). */
  drain(): Promise<void>;
  close(): void;
}

export interface PipelinedPublisherOptions {
  /** Publishes awaiting an ack at once; a further publish waits for a slot. Default 1024. */
  readonly window?: number;
  /** A publish not acknowledged within this is rejected (a retry with the same `Nats-Msg-Id` is a duplicate). Default 5 s. */
  readonly timeoutMs?: number;
  /** The connection's `inboxPrefix`, when it has one (its permissions may allow replies only there). Default `_INBOX`. */
  readonly inboxPrefix?: string;
}

interface Pending {
  readonly resolve: (ack: PubAck) => void;
  readonly reject: (e: Error) => void;
  readonly subject: string;
  readonly deadline: number;
  /** Sends the message again, as it was (a publish with a `Nats-Msg-Id` only: the stream stores it once). */
  readonly resend: (() => void) | null;
}

/**
 * JetStream publishes pipelined over one connection: each message goes out as a core publish whose reply subject is
 * `<inbox>.<n>`, and one subscription on `<inbox>.*` takes every ack, the way JetStream clients publish asynchronously
 * (a stream answers a message that has a reply subject with its ack, on that subject). `js.publish` makes every
 * message a request of its own (a reply mapping, a timer, a promise and, for every answered request, an error object
 * built when the request is settled): at 10,000 samples per second that was a third of the engine thread. Here a
 * publish costs a map entry; one sweep rejects the publishes still unanswered after `timeoutMs`. An ack is the
 * server's JSON (`{"stream","seq","duplicate"}` or `{"error"}`, rejected as a `JetStreamApiError`); a 503 status
 * without a body means no stream listens on the subject.
 *
 * A reconnect sends every unacknowledged publish that has a `Nats-Msg-Id` again at once, in order: what the client had
 * written to a connection whose server died is lost, and waiting for `timeoutMs` before the caller's retry left an
 * intake's samples 5 s late after a nats-server loss (bench:cluster, 2026-11-28). The stream stores each once; a
 * publish without an id (a KV put) is not sent again, since a late copy could overwrite a newer value.
 */
export class PipelinedPublisher implements SamplePublisher {
  readonly #nc: NatsConnection;
  readonly #prefix: string;
  readonly #sub: Subscription;
  readonly #window: number;
  readonly #timeoutMs: number;
  readonly #pending = new Map<number, Pending>();
  readonly #waiters: (() => void)[] = [];
  readonly #sweep: ReturnType<typeof setInterval>;
  readonly #decoder = new TextDecoder();
  readonly #status: ReturnType<NatsConnection["status"]>;
  #next = 0;
  #published = 0;
  #failed = 0;
  #resent = 0;
  #closed = false;

  constructor(nc: NatsConnection, options: PipelinedPublisherOptions = {}) {
    const window = options.window ?? 1024;
    const timeoutMs = options.timeoutMs ?? 5_000;
    if (!Number.isInteger(window) || window < 1) throw new RangeError("window must be a positive integer");
    if (!(timeoutMs > 0)) throw new RangeError("timeoutMs must be > 0");
    this.#nc = nc;
    this.#window = window;
    this.#timeoutMs = timeoutMs;
    this.#prefix = createInbox(options.inboxPrefix);
    this.#sub = nc.subscribe(`${this.#prefix}.*`, { callback: (err, msg) => (err === null ? this.#onAck(msg) : undefined) });
    this.#sweep = setInterval(() => this.#expire(), Math.min(250, timeoutMs / 4));
    this.#sweep.unref();
    const status = nc.status();
    this.#status = status;
    void (async () => {
      for await (const s of status) if (s.type === "reconnect") this.#resendPending();
    })().catch(() => {});
  }

  get stats(): { published: number; failed: number; inFlight: number } {
    return { published: this.#published, failed: this.#failed, inFlight: this.#pending.size };
  }

  /** Publishes sent again after a reconnect. */
  get resent(): number {
    return this.#resent;
  }

  /** Publishes with `msgID` as `Nats-Msg-Id` (none: no deduplication), and `extraHeaders`, and resolves with the stream's ack. */
  async publish(subject: string, payload: Uint8Array, msgID?: string, extraHeaders?: Readonly<Record<string, string>>): Promise<PubAck> {
    while (this.#pending.size >= this.#window && !this.#closed) await new Promise<void>((r) => this.#waiters.push(r));
    if (this.#closed) throw new Error("the publisher is closed");
    const id = ++this.#next;
    let h: MsgHdrs | undefined;
    if (msgID !== undefined || extraHeaders !== undefined) {
      h = headers();
      if (msgID !== undefined) h.set("Nats-Msg-Id", msgID);
      for (const [k, v] of Object.entries(extraHeaders ?? {})) h.set(k, v);
    }
    const opts = h === undefined ? { reply: `${this.#prefix}.${id}` } : { reply: `${this.#prefix}.${id}`, headers: h };
    const send = () => this.#nc.publish(subject, payload, opts);
    return new Promise<PubAck>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject, subject, deadline: performance.now() + this.#timeoutMs, resend: msgID === undefined ? null : send });
      try {
        send();
      } catch (e) {
        const p = this.#settle(id);
        if (p !== undefined) this.#fail(p, e instanceof Error ? e : new Error(String(e)));
      }
    });
  }

  #onAck(msg: Msg): void {
    const id = Number(msg.subject.slice(this.#prefix.length + 1));
    const p = this.#settle(id);
    if (p === undefined) return; // expired already: its retry is a duplicate
    if (msg.data.length === 0) {
      const status = msg.headers?.code ?? 0;
      this.#fail(p, new Error(status === 503 ? `no JetStream stream listens on ${p.subject}` : `publish to ${p.subject} answered with status ${status}`));
      return;
    }
    let ack: { stream?: string; seq?: number; duplicate?: boolean; error?: ApiError };
    try {
      ack = JSON.parse(this.#decoder.decode(msg.data)) as typeof ack;
    } catch {
      this.#fail(p, new Error(`publish to ${p.subject}: the ack is not JSON`));
      return;
    }
    if (ack.error !== undefined) this.#fail(p, new JetStreamApiError(ack.error));
    else if (typeof ack.stream !== "string" || typeof ack.seq !== "number") this.#fail(p, new Error(`publish to ${p.subject}: invalid ack`));
    else {
      this.#published++;
      p.resolve({ stream: ack.stream, seq: ack.seq, duplicate: ack.duplicate === true } as PubAck);
    }
  }

  /** After a reconnect: the unacknowledged publishes with an id, again, in the order first sent. */
  #resendPending(): void {
    for (const p of this.#pending.values()) {
      if (p.resend === null) continue;
      try {
        p.resend();
        this.#resent++;
      } catch {
        // disconnected again: the next reconnect sends it, or its deadline rejects it
      }
    }
  }

  /** Removes a pending publish and frees its slot. */
  #settle(id: number): Pending | undefined {
    const p = this.#pending.get(id);
    if (p === undefined) return undefined;
    this.#pending.delete(id);
    this.#waiters.shift()?.();
    return p;
  }

  #fail(p: Pending, e: Error): void {
    this.#failed++;
    p.reject(e);
  }

  /** Rejects the publishes past their deadline; deadlines grow with insertion order, so the scan stops at the first live one. */
  #expire(): void {
    const now = performance.now();
    for (const [id, p] of this.#pending) {
      if (p.deadline > now) break;
      this.#settle(id);
      this.#fail(p, new Error(`TimeoutError: no ack for the publish to ${p.subject} within ${this.#timeoutMs} ms`));
    }
  }

  async drain(): Promise<void> {
    while (this.#pending.size > 0) await new Promise((r) => setTimeout(r, 5));
  }

  /** Stops taking acks: what is still pending is rejected. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#sweep);
    // The client's status iterator (a QueuedIterator) stops, and leaves the connection's listeners, with `stop()`.
    (this.#status as { stop?: () => void }).stop?.();
    this.#sub.unsubscribe();
    for (const [id, p] of [...this.#pending]) {
      this.#settle(id);
      this.#fail(p, new Error("the publisher is closed"));
    }
    for (const w of this.#waiters.splice(0)) w();
  }
}
