import { DeliverPolicy, jetstream, type ConsumerMessages } from "@nats-io/jetstream";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import { parseTimestamp, type EpochMs, type PegState } from "../../methodology/index.ts";
import type { LogFn } from "./engine-link.ts";
import type { SampleMessage } from "./messages.ts";
import { subjects, TOPOLOGY } from "./topology.ts";

/** Where the live feed delivers (the WebSocket hub). */
export interface LiveSink {
  state(s: { mint: string; state: PegState; discount: string | null; at: EpochMs }): void;
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

export interface LiveFeed {
  /** Resolves when the back-fill of the last `windowMs` of transitions has been delivered. */
  readonly ready: Promise<void>;
  stop(): Promise<void>;
}

/**
 * Feeds an API process from NATS, so any API process can serve any client: `peg.state.>` (core) for published
 * recomputes, and an ordered consumer on PEG_TRANSITIONS that first back-fills the last `windowMs` (24 h) and then
 * follows the stream live, in stream order, with the stream sequence of each transition.
 */
export async function startLiveFeed(nc: NatsConnection, sink: LiveSink, opts: { windowMs: number; now: () => EpochMs; log?: LogFn }): Promise<LiveFeed> {
  const log = opts.log ?? (() => {});
  const states: Subscription = nc.subscribe(subjects.state("*"), {
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

  const js = jetstream(nc);
  const consumer = await js.consumers.get(TOPOLOGY.transitions.stream, {
    deliver_policy: DeliverPolicy.StartTime,
    opt_start_time: new Date(opts.now() - opts.windowMs).toISOString(),
  });
  const info = await consumer.info(true);
  let covered = false;
  let markReady!: () => void;
  const ready = new Promise<void>((r) => (markReady = r));
  if (info.num_pending === 0) {
    // Nothing in the window: everything after the stream's last sequence will be delivered.
    const stream = await js.streams.get(TOPOLOGY.transitions.stream);
    const last = (await stream.info(true)).state.last_seq;
    sink.coverFrom(last + 1);
    covered = true;
    markReady();
  }
  const messages: ConsumerMessages = await consumer.consume();
  const loop = (async () => {
    for await (const m of messages) {
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
  })();
  return {
    ready,
    stop: async () => {
      states.unsubscribe();
      await messages.close();
      await loop.catch(() => {});
    },
  };
}
