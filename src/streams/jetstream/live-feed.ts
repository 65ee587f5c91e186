import { DeliverPolicy, jetstream, jetstreamManager, type ConsumerMessages, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Observable } from "rxjs";
import { parseTimestamp, type EpochMs, type PegState } from "../../methodology/index.ts";
import type { LogFn } from "./engine-link.ts";
import type { SampleMessage } from "./messages.ts";
import { BRIDGE_POLL_MS, bridgeManager, readOnBySequence } from "./read-by-sequence.ts";
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
 * Short pulls: a pull that expires every 3 s with heartbeats every 0.5 s notices a lost server quickly, and after a
 * failed check the client retries every `expires` (the 30 s default would leave clients without transitions that long
 * after a cluster node dies).
 */
const PULL = { expires: 3_000, idle_heartbeat: 500 } as const;
/**
 * Nothing heard from the consumer (no message, no heartbeat) this long: it is re-created. Heartbeats come every 0.5 s.
 * (2.5 s with heartbeats every 1 s until 2026-11-28: bench:cluster run c3 delivered a transition 0.9 s after it was
 * stored, waiting for the silence to last.)
 */
const SILENT_MS = 1_250;
/** The watchdog's period; a check that comes more than twice as late follows a stall of the event loop. */
const WATCHDOG_MS = 250;
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

/** A transition as stored in PEG_TRANSITIONS (its receipt), the fields the sink takes. */
interface StoredTransition {
  readonly alert_id: string;
  readonly mint: string;
  readonly asset: string;
  readonly from_state: PegState;
  readonly to_state: PegState;
  readonly discount: string;
  readonly detected_at: string;
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
        // A copy per try: the client writes the consumer's name into the options it is given (ordered-consumer.ts).
        const consumer = await js.consumers.get(TOPOLOGY.transitions.stream, { ...backfill });
        const info = await consumer.info(true);
        // Nothing in the window: everything after the stream's last sequence will be delivered.
        const emptyFrom = info.num_pending === 0 ? (await (await js.streams.get(TOPOLOGY.transitions.stream)).info(true)).state.last_seq + 1 : null;
        const jsm = await jetstreamManager(nc, { checkAPI: false, timeout: 1_500 });
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
  /** Hands transition `seq` to the sink (the next after `lastSeq`) and moves `lastSeq` on. */
  const deliver = (seq: number, read: () => StoredTransition, at: number): void => {
    lastSeq = seq;
    try {
      const r = read();
      if (!covered) {
        sink.coverFrom(seq);
        covered = true;
      }
      sink.transition({ seq, alert_id: r.alert_id, mint: r.mint, asset: r.asset, from_state: r.from_state, to_state: r.to_state, discount: r.discount, ts: r.detected_at, at });
    } catch (e) {
      log("warn", "unreadable transition in the stream", { seq, error: e instanceof Error ? e.message : String(e) });
    }
  };
  /**
   * While no consumer runs: the transitions after `lastSeq`, read one by one from the stream (`readOnBySequence`). A
   * consumer is created by the meta leader, and when the lost node led the meta group as well, its election can end
   * seconds after the stream's (a test saw the stream answer 4.8 s after the loss and a consumer only at 9 s):
   * meanwhile the stored transitions reach the clients this way, in order.
   */
  const bridge = async (until: Promise<unknown>): Promise<void> => {
    const bridgeJsm = await bridgeManager(nc);
    let done = false;
    void until.finally(() => (done = true));
    while (!done && !stopped && covered && !nc.isClosed()) {
      await readOnBySequence(bridgeJsm, TOPOLOGY.transitions.stream, {
        after: () => lastSeq,
        go: () => !done && !stopped,
        deliver: (m) => deliver(m.seq, () => m.json<StoredTransition>(), m.time.getTime()),
      });
      await new Promise((r) => setTimeout(r, BRIDGE_POLL_MS));
    }
  };
  // An ordered consumer recreates itself after a reconnect; should it give up (JetStream unavailable for a while, e.g.
  // while a cluster elects new leaders after losing a node), a new one continues after the last sequence delivered.
  const reopen = async (): Promise<void> => {
    const created = (async () => {
      // A closed connection never opens again: nothing to wait for (it used to retry every 0.5 s until the process
      // exited, a log line each time).
      for (let wait = 100; !stopped && !nc.isClosed(); wait = Math.min(wait * 2, REOPEN_MAX_WAIT_MS)) {
        try {
          const c = await js.consumers.get(TOPOLOGY.transitions.stream, lastSeq === 0 ? { ...backfill } : { opt_start_seq: lastSeq + 1 });
          return await c.consume(PULL);
        } catch (e) {
          log("warn", "live feed: cannot re-create the transitions consumer; retrying", { error: e instanceof Error ? e.message : String(e) });
          await new Promise((r) => setTimeout(r, wait));
        }
      }
      return null;
    })();
    const bridging = bridge(created);
    const next = await created;
    await bridging;
    if (next === null) return;
    messages = next;
  };
  // Watchdog: an ordered consumer is a single-replica ephemeral consumer; when the cluster node holding it dies, the
  // client may wait for it forever without noticing (after a reconnect it only asks the dead consumer for its info,
  // again and again, and stops watching the heartbeats). Two checks every 250 ms (monotonic time):
  // - nothing heard from the consumer (no message, no heartbeat: every pull asks for one a second) for SILENT_MS: it
  //   is re-created at once, without asking the stream (which, electing a leader, would not answer);
  // - the stream has moved past what was delivered and no message came for STALL_MS (a consumer that answers but
  //   delivers nothing).
  // A new consumer continues after the last sequence delivered (issue 26: the stream check alone came 4-8 s after a
  // node loss, once a transition was stored and 3 s had passed).
  let progressAt = performance.now();
  let heardAt = performance.now();
  let checking = false;
  /** A consumer is being followed (not while a new one is being created). */
  let following = false;
  const recreate = (why: string, fields: Record<string, unknown>) => {
    log("warn", `live feed: ${why}; re-creating the transitions consumer`, { after_seq: lastSeq, ...fields });
    progressAt = heardAt = performance.now();
    return Promise.race([messages.close(), new Promise((r) => setTimeout(r, 2_000))]);
  };
  let tickAt = performance.now();
  const watchdog = setInterval(() => {
    const now = performance.now();
    const late = now - tickAt > 2 * WATCHDOG_MS;
    tickAt = now;
    // After a stall of the event loop, what the consumer sent meanwhile is handled first (the next check looks).
    if (stopped || checking || !following || late) return;
    if (now - heardAt >= SILENT_MS) {
      checking = true;
      void recreate("nothing heard from the transitions consumer", { silent_ms: Math.round(now - heardAt) }).finally(() => (checking = false));
      return;
    }
    if (now - progressAt < STALL_MS) return;
    checking = true;
    void jsm.streams
      .info(TOPOLOGY.transitions.stream)
      .then(async (i) => {
        if (stopped || i.state.last_seq <= lastSeq || performance.now() - progressAt < STALL_MS) return;
        await recreate("the transitions consumer stalled", { stream_last_seq: i.state.last_seq });
      })
      .catch(() => {})
      .finally(() => (checking = false));
  }, WATCHDOG_MS);
  watchdog.unref?.();
  const follow = async () => {
    // What the client does with the consumer (missed heartbeats, resets, re-creations), for the operator.
    const current = messages;
    heardAt = performance.now();
    following = true;
    void (async () => {
      for await (const n of current.status()) {
        // What the server sends (a heartbeat, a pull's expiry or discard): "next" is the client's own pull.
        if (current === messages && n.type !== "next") heardAt = performance.now();
        if (n.type !== "next" && n.type !== "heartbeat" && n.type !== "debug" && n.type !== "flow_control" && n.type !== "discard") log("info", "live feed: transitions consumer", { event: n.type });
      }
    })().catch(() => {});
    for await (const m of messages) {
      progressAt = heardAt = performance.now();
      if (m.seq <= lastSeq) continue;
      deliver(m.seq, () => m.json<StoredTransition>(), m.time.getTime());
      if (m.info.pending === 0) markReady();
    }
  };
  const loop = (async () => {
    while (!stopped && !nc.isClosed()) {
      try {
        await follow();
      } catch (e) {
        following = false;
        log("warn", "live feed: the transitions consumer failed; re-creating it", { after_seq: lastSeq, error: e instanceof Error ? e.message : String(e) });
      }
      following = false;
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
