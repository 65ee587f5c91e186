import { DeliverPolicy, jetstream, jetstreamManager, type ConsumerMessages, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Observable } from "rxjs";
import { parseTimestamp, type EpochMs, type PegState } from "../../methodology/index.ts";
import type { LogFn } from "./engine-link.ts";
import type { SampleMessage } from "./messages.ts";
import { subjects, TOPOLOGY } from "./topology.ts";
import { untilAnswered } from "./until-answered.ts";

/** One published recompute, as the live feed delivers it. */
export interface LiveState {
  readonly mint: string;
  readonly state: PegState;
  readonly discount: string | null;
  readonly at: EpochMs;
}

/** Where the live feed delivers (the WebSocket hub). */
export interface LiveSink {
  state(s: LiveState): void;
  transition(t: {
    seq: number;
    alert_id: string;
    mint: string;
    asset: string;
    from_state: PegState;
    to_state: PegState;
    discount: string;
    ts: string;
    at: EpochMs;
  }): void;
  /** The stream sequence from which every later transition is delivered (the start of the back-fill). */
  coverFrom(seq: number): void;
}

/**
 * Short pulls: a pull that expires every 3 s with heartbeats every 1 s notices a lost server quickly (two heartbeats
 * missed: 2 s), and after a failed check the client retries every `expires` (the 30 s default would leave clients
 * without transitions that long after a cluster node dies).
 */
const PULL = { expires: 3_000, idle_heartbeat: 1_000 } as const;
/** Tries to re-create the consumer this often (at most) until one answers: a new stream leader is there within seconds. */
const REOPEN_MAX_WAIT_MS = 500;
/** Behind the stream with nothing delivered for this long: the consumer is re-created. */
const STALL_MS = 3_000;

/**
 * The alert ids a process saw on PEG_TRANSITIONS (its live feed's back-fill and the live stream), most recent
 * `capacity` (default 10,000: about 1 MB) kept, oldest evicted first. An API process answers `GET
 * /v1/audit/{alert_id}` with 202 for an id held here that the store has not projected yet (addendum, audit receipt:
 * "the alert is known (it is in the event stream or the alert table) but its receipt is not persisted yet"); once
 * projected the store answers first, so an id is only consulted during the projection lag, which is seconds while
 * 10,000 ids are days of transitions.
 */
export class RecentAlertIds {
  readonly #ids = new Set<string>();
  readonly #capacity: number;

  constructor(capacity = 10_000) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError("capacity must be a positive integer");
    this.#capacity = capacity;
  }

  add(id: string): void {
    const key = id.toLowerCase();
    this.#ids.delete(key); // re-seen: most recent again
    this.#ids.add(key);
    while (this.#ids.size > this.#capacity) this.#ids.delete(this.#ids.values().next().value!);
  }

  has(id: string): boolean {
    return this.#ids.has(id.toLowerCase());
  }

  get size(): number {
    return this.#ids.size;
  }
}

export interface LiveFeed {
  /** Resolves when the back-fill of the last `windowMs` of transitions has been delivered. */
  readonly ready: Promise<void>;
  stop(): Promise<void>;
}

export interface LiveFeedOptions {
  readonly windowMs: number;
  readonly now: () => EpochMs;
  readonly log?: LogFn;
  /**
   * The published recomputes, when every one of them is decided in this process (ROLE=all runs every asset's engine):
   * delivered from here, and `peg.state.>` is not subscribed. Receiving its own 10,000 recomputes a second back from
   * NATS and parsing them cost the engine's thread a tenth of its time, and the server as much again.
   */
  readonly localStates?: Observable<LiveState>;
}

/**
 * Feeds an API process from NATS, so any API process can serve any client: `peg.state.>` (core) for published
 * recomputes (or `localStates`), and an ordered consumer on PEG_TRANSITIONS that first back-fills the last `windowMs`
 * (24 h) and then follows the stream live, in stream order, with the stream sequence of each transition.
 */
export async function startLiveFeed(nc: NatsConnection, sink: LiveSink, opts: LiveFeedOptions): Promise<LiveFeed> {
  const log = opts.log ?? (() => {});
  const states: { unsubscribe(): void } =
    opts.localStates !== undefined
      ? opts.localStates.subscribe((s) => {
          // Called on the engine's own emission: a failure here is logged, never thrown into the engine.
          try {
            sink.state(s);
          } catch (e) {
            log("warn", "live state not delivered", { mint: s.mint, error: e instanceof Error ? e.message : String(e) });
          }
        })
      : nc.subscribe(subjects.state("*"), {
          callback: (err, msg) => {
            if (err !== null) return;
            try {
              const m = msg.json<SampleMessage>();
              const at = parseTimestamp(m.ts);
              if (at === null) throw new Error(`bad ts ${JSON.stringify(m.ts)}`);
              sink.state({ mint: m.mint, state: m.state, discount: m.discount, at });
            } catch (e) {
              log("warn", "unreadable peg.state message", { subject: msg.subject, error: e instanceof Error ? e.message : String(e) });
            }
          },
        });

  // A short API timeout: while a cluster re-elects leaders a consumer creation can hang, and a quicker retry wins.
  const js = jetstream(nc, { timeout: 2_000 });
  const backfill = { deliver_policy: DeliverPolicy.StartTime, opt_start_time: new Date(opts.now() - opts.windowMs).toISOString() } as const;
  let covered = false;
  let markReady!: () => void;
  const ready = new Promise<void>((r) => (markReady = r));
  // The first consumer, tried again while JetStream does not answer (a loaded machine, a cluster electing): an API
  // process that exits because one request timed out during its start serves nobody (bench:cluster, issue 26).
  let opened: { messages: ConsumerMessages; jsm: JetStreamManager };
  try {
    opened = await untilAnswered(
      "opening the transitions feed",
      async () => {
        const consumer = await js.consumers.get(TOPOLOGY.transitions.stream, backfill);
        const info = await consumer.info(true);
        // Nothing in the window: everything after the stream's last sequence will be delivered.
        const emptyFrom = info.num_pending === 0 ? (await (await js.streams.get(TOPOLOGY.transitions.stream)).info(true)).state.last_seq + 1 : null;
        const jsm = await jetstreamManager(nc, { checkAPI: false });
        const messages = await consumer.consume(PULL);
        if (emptyFrom !== null) {
          sink.coverFrom(emptyFrom);
          covered = true;
          markReady();
        }
        return { messages, jsm };
      },
      { log },
    );
  } catch (e) {
    states.unsubscribe();
    throw e;
  }
  let messages: ConsumerMessages = opened.messages;
  const jsm = opened.jsm;
  let stopped = false;
  /** The last stream sequence delivered: a re-created consumer continues right after it. */
  let lastSeq = 0;
  // An ordered consumer recreates itself after a reconnect; should it give up (JetStream unavailable for a while, e.g.
  // while a cluster elects new leaders after losing a node), a new one continues after the last sequence delivered.
  const reopen = async (): Promise<void> => {
    for (let wait = 100; !stopped; wait = Math.min(wait * 2, REOPEN_MAX_WAIT_MS)) {
      try {
        const c = await js.consumers.get(TOPOLOGY.transitions.stream, lastSeq === 0 ? backfill : { opt_start_seq: lastSeq + 1 });
        messages = await c.consume(PULL);
        return;
      } catch (e) {
        log("warn", "live feed: cannot re-create the transitions consumer; retrying", { error: e instanceof Error ? e.message : String(e) });
        await new Promise((r) => setTimeout(r, wait));
      }
    }
  };
  // Watchdog: an ordered consumer is a single-replica ephemeral consumer; when the cluster node holding it dies, the
  // client may wait for it forever without noticing. When the stream has moved past what was delivered and nothing
  // arrived for STALL_MS (monotonic time), the consumer is dropped and a new one continues after the last sequence
  // delivered.
  let progressAt = performance.now();
  let checking = false;
  const watchdog = setInterval(() => {
    if (stopped || checking || performance.now() - progressAt < STALL_MS) return;
    checking = true;
    void jsm.streams
      .info(TOPOLOGY.transitions.stream)
      .then(async (i) => {
        if (stopped || i.state.last_seq <= lastSeq || performance.now() - progressAt < STALL_MS) return;
        log("warn", "live feed: the transitions consumer stalled; re-creating it", { after_seq: lastSeq, stream_last_seq: i.state.last_seq });
        progressAt = performance.now();
        await Promise.race([messages.close(), new Promise((r) => setTimeout(r, 2_000))]);
      })
      .catch(() => {})
      .finally(() => (checking = false));
  }, 1_000);
  watchdog.unref?.();
  const follow = async () => {
    // What the client does with the consumer (missed heartbeats, resets, re-creations), for the operator.
    const current = messages;
    void (async () => {
      for await (const n of current.status()) {
        if (n.type !== "next" && n.type !== "heartbeat" && n.type !== "debug" && n.type !== "flow_control" && n.type !== "discard") log("info", "live feed: transitions consumer", { event: n.type });
        // The consumer's server stopped answering (it died, or lost the stream): the client would only ask the dead
        // consumer for its info again and again; a new consumer continues after the last sequence delivered, as soon
        // as the stream has a leader (issue 26: an API process's clients waited for the watchdog, 8 s after a loss).
        if (n.type === "heartbeats_missed" && !stopped && current === messages) {
          log("warn", "live feed: the transitions consumer missed its heartbeats; re-creating it", { after_seq: lastSeq });
          void current.close();
        }
      }
    })().catch(() => {});
    for await (const m of messages) {
      progressAt = performance.now();
      if (m.seq <= lastSeq) continue;
      lastSeq = m.seq;
      try {
        const r = m.json<{ alert_id: string; mint: string; asset: string; from_state: PegState; to_state: PegState; discount: string; detected_at: string }>();
        if (!covered) {
          sink.coverFrom(m.seq);
          covered = true;
        }
        sink.transition({
          seq: m.seq,
          alert_id: r.alert_id,
          mint: r.mint,
          asset: r.asset,
          from_state: r.from_state,
          to_state: r.to_state,
          discount: r.discount,
          ts: r.detected_at,
          at: m.time.getTime(),
        });
      } catch (e) {
        log("warn", "unreadable transition in the stream", { seq: m.seq, error: e instanceof Error ? e.message : String(e) });
      }
      if (m.info.pending === 0) markReady();
    }
  };
  const loop = (async () => {
    while (!stopped) {
      try {
        await follow();
      } catch (e) {
        log("warn", "live feed: the transitions consumer failed; re-creating it", { after_seq: lastSeq, error: e instanceof Error ? e.message : String(e) });
      }
      if (!stopped) await reopen();
    }
  })();
  return {
    ready,
    stop: async () => {
      stopped = true;
      clearInterval(watchdog);
      states.unsubscribe();
      await messages.close();
      await loop.catch(() => {});
    },
  };
}
