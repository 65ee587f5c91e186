import { DeliverPolicy, jetstream, type ConsumerMessages, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import type { MsgHdrs, NatsConnection } from "@nats-io/transport-node";
import type { SimulatedClock } from "../../clock.ts";
import type { EpochMs } from "../../methodology/index.ts";
import type { SupplyLeg } from "../sources/legs.ts";
import { decodeIntakeBatch, decodeIntakeSupplies, INTAKE_WATERMARK_HEADER } from "./intake-batch.ts";
import { IntakeRing } from "./intake-ring.ts";
import { limiter } from "./limiter.ts";
import { orderedConsumer } from "./ordered-consumer.ts";
import { BRIDGE_POLL_MS, bridgeManager, readOnBySequence } from "./read-by-sequence.ts";
import type { ReceivedSample } from "./recent-samples.ts";
import type { LogFn } from "./sample-recorder.ts";
import { subjects, TOPOLOGY } from "./topology.ts";

/** Pull options of the intake consumers: short pulls, so a stalled one is noticed. */
const PULL = { max_messages: 1_000, expires: 3_000 } as const;
/** No message for this long (the intake ticks every 50 ms) while the stream moved on: the consumer is re-created. */
const STALL_MS = 3_000;
/**
 * The consumer silent this long (the intake publishes every 50 ms: ten publishes missed): the stream is read message
 * by message meanwhile (`#bridge`), until the consumer delivers again. A stall of the engine's own event loop does not
 * count (the bridge's first tick after one only looks). 1 s until 2026-11-28: in bench:cluster run c3 an engine whose
 * consumer died with its node evaluated 1.6 s late; a needless bridge costs a few reads of what the consumer delivers.
 */
const BRIDGE_AFTER_MS = 500;
/** Read a partition's history from this long before the wall instant of the state it resumes from. */
const HISTORY_SLACK_MS = 2_000;
/**
 * Partition histories read at once, each through a consumer of its own: a failover acquires dozens of partitions
 * together, and as many consumer creations at once timed out on a loaded 3-node cluster (bench:cluster).
 */
const HISTORIES_AT_ONCE = 4;
/** Evaluation per turn of the event loop, at most (`#advance`). */
const TURN_BUDGET_MS = 25;
/** JetStream API timeout of a history read's stream info, and how long its consumer's creation is tried. */
const HISTORY_TIMEOUT_MS = 10_000;
/** Received messages kept for take-overs (`IntakeRing`): 60 s, at most 128 MiB (about 40 MB at 10,000 samples/s). */
const RING = { windowMs: 60_000, maxBytes: 128 * 2 ** 20 } as const;

/** A partition being acquired: its live samples are held while its history is read. */
export interface IntakeHold {
  /** The partition's samples in PEG_INTAKE from about `after` on, up to where holding began, in stream order. */
  history(after: EpochMs): Promise<readonly ReceivedSample[]>;
  /** Ends the hold: returns what arrived meanwhile (after the history) and from now on evaluates the partition live. */
  release(): readonly ReceivedSample[];
  /** Ends the hold without running the partition (the lease was lost meanwhile). */
  cancel(): void;
}

export interface IntakeConsumerOptions {
  readonly nc: NatsConnection;
  /** The engine's clock: the actors' timers fire as the intake's watermark moves it. */
  readonly clock: SimulatedClock;
  /** Evaluates one sample of a partition this engine runs, at its instant (`ReceivedSample.at`). */
  readonly ingest: (s: ReceivedSample) => void;
  /** The wall-clock instant (the stream's message time) an intake instant corresponds to: a scenario's is scaled. */
  readonly wallOf: (at: EpochMs) => EpochMs;
  /** Receives the circulating supplies the intake observed (every engine's projector stamps them on the cards). */
  readonly supply?: (leg: SupplyLeg) => void;
  readonly log: LogFn;
}

/** A message of PEG_INTAKE, from the consumer or read by sequence. */
interface IntakeMsg {
  readonly seq: number;
  readonly subject: string;
  readonly headers: MsgHdrs | undefined;
  /** The stream's timestamp, in ms. */
  readonly time: number;
  readonly data: Uint8Array;
}

type Unit = "live" | { readonly since: number; readonly held: ReceivedSample[]; readonly only: ReadonlySet<string> | null };

/**
 * An engine's side of PEG_INTAKE (issue 26 item 2): one ordered consumer follows the whole stream in stream order,
 * reads every message's watermark from its header and decodes only the partitions this engine runs. Samples are
 * evaluated in the order of their instants up to the watermark, and the engine's clock is then moved to it, firing
 * the dwell timers due; that is the order an offline replay evaluates them in, whatever the delivery latency. A
 * partition being acquired is held (`hold`): its history is read from the stream by a consumer of its own, and what
 * arrives meanwhile is kept for `release`.
 */
export class IntakeConsumer {
  readonly #o: IntakeConsumerOptions;
  readonly #js: JetStreamClient;
  readonly #historyJs: JetStreamClient;
  readonly #histories = limiter(HISTORIES_AT_ONCE);
  readonly #units = new Map<string, Unit>();
  /** Samples of running partitions not yet evaluated (stamped after the watermark), in arrival order. */
  #pending: ReceivedSample[] = [];
  #sorted = true;
  #wm: EpochMs = -Infinity;
  /** The rest of an evaluation run that used its turn's budget (`#advance`). */
  #continuation: ReturnType<typeof setImmediate> | null = null;
  /** The last message received (by the consumer or the bridge): everything up to it was handled, in order. */
  #lastSeq = 0;
  /** The last message the consumer delivered (the bridge may be ahead of it). */
  #consumerSeq = 0;
  #bridgeJsm: JetStreamManager | null = null;
  #bridging = false;
  /** When the bridge's timer last fired: a timer that fires late says the event loop was blocked, not the consumer. */
  #bridgeTickAt = performance.now();
  #bridgeTimer: ReturnType<typeof setInterval> | null = null;
  #messages: ConsumerMessages | null = null;
  #ring: IntakeRing | null = null;
  #progressAt = performance.now();
  #stopped = false;
  #checking = false;
  #loop: Promise<void> | null = null;
  #watchdog: ReturnType<typeof setInterval> | null = null;
  #stats = { messages: 0, decoded: 0, evaluated: 0, held: 0, reopened: 0, histories_kept: 0, histories_read: 0, yields: 0, bridged: 0 };

  constructor(options: IntakeConsumerOptions) {
    this.#o = options;
    this.#js = jetstream(options.nc, { timeout: 2_000 });
    this.#historyJs = jetstream(options.nc, { timeout: HISTORY_TIMEOUT_MS });
  }

  get stats() {
    return { ...this.#stats, watermark: this.#wm, last_seq: this.#lastSeq, pending: this.#pending.length };
  }

  /** Follows the stream from its end (what came before is read per partition, on acquisition). */
  async start(): Promise<void> {
    const info = await (await this.#js.streams.get(TOPOLOGY.intake.stream)).info();
    this.#lastSeq = this.#consumerSeq = info.state.last_seq;
    // Every message after the stream's last one is received from here on.
    this.#ring = new IntakeRing(RING, info.state.last_seq === 0 ? 0 : Date.parse(info.state.last_ts) + 1);
    this.#messages = await this.#open();
    this.#loop = this.#follow();
    this.#watchdog = setInterval(() => this.#checkStall(), 1_000);
    this.#watchdog.unref?.();
    this.#bridgeJsm = await bridgeManager(this.#o.nc);
    this.#bridgeTimer = setInterval(() => void this.#bridge(), BRIDGE_POLL_MS);
    this.#bridgeTimer.unref?.();
  }

  /**
   * Starts holding a partition's live samples (before its actors are restored); `only` (asset symbols) holds those
   * assets' samples alone, the others of the partition go on live (one asset restored again after a rejected
   * transition: its partition's other assets run on).
   */
  hold(unit: string, only?: ReadonlySet<string>): IntakeHold {
    const state = { since: this.#lastSeq, held: [] as ReceivedSample[], only: only ?? null };
    this.#units.set(unit, state);
    return {
      history: (after) => this.#histories.run(() => this.#history(unit, after, state.since)),
      release: () => {
        if (this.#units.get(unit) !== state) return [];
        this.#units.set(unit, "live");
        return state.held;
      },
      cancel: () => {
        if (this.#units.get(unit) === state) this.#units.delete(unit);
      },
    };
  }

  /** Stops evaluating a partition (its lease was lost or handed back). */
  drop(unit: string): void {
    this.#units.delete(unit);
  }

  async #open(): Promise<ConsumerMessages> {
    // The consumer starts after what was received (the bridge may have read on while it was re-created).
    this.#consumerSeq = this.#lastSeq;
    const c = await this.#js.consumers.get(TOPOLOGY.intake.stream, { filter_subjects: TOPOLOGY.intake.subjects, opt_start_seq: this.#lastSeq + 1 });
    return c.consume(PULL);
  }

  async #follow(): Promise<void> {
    while (!this.#stopped) {
      try {
        for await (const m of this.#messages!) {
          this.#progressAt = performance.now();
          this.#consumerSeq = m.seq;
          if (m.seq <= this.#lastSeq) continue;
          this.#lastSeq = m.seq;
          this.#receive({ seq: m.seq, subject: m.subject, headers: m.headers, time: Math.floor(m.info.timestampNanos / 1_000_000), data: m.data });
        }
      } catch (e) {
        this.#o.log("warn", "intake consumer failed; re-creating it", { after_seq: this.#lastSeq, error: e instanceof Error ? e.message : String(e) });
      }
      for (let wait = 250; !this.#stopped; wait = Math.min(wait * 2, 2_000)) {
        try {
          this.#messages = await this.#open();
          this.#stats.reopened++;
          break;
        } catch (e) {
          this.#o.log("warn", "intake consumer cannot be re-created; retrying", { error: e instanceof Error ? e.message : String(e) });
          await new Promise((r) => setTimeout(r, wait));
        }
      }
    }
  }

  /**
   * An ordered consumer can wait for ever on a node that died: when the stream moved past what it delivered meanwhile,
   * it is re-created (after what was received, the bridge's messages included).
   */
  #checkStall(): void {
    if (this.#stopped || this.#checking || performance.now() - this.#progressAt < STALL_MS) return;
    this.#checking = true;
    void this.#js.streams
      .get(TOPOLOGY.intake.stream)
      .then((s) => s.info())
      .then(async (i) => {
        if (this.#stopped || i.state.last_seq <= this.#consumerSeq || performance.now() - this.#progressAt < STALL_MS) return;
        this.#o.log("warn", "intake consumer stalled; re-creating it", { after_seq: this.#lastSeq, consumer_seq: this.#consumerSeq, stream_last_seq: i.state.last_seq });
        this.#progressAt = performance.now();
        await Promise.race([this.#messages?.close(), new Promise((r) => setTimeout(r, 2_000))]);
      })
      .catch(() => {})
      .finally(() => (this.#checking = false));
  }

  /**
   * While the consumer is silent for `BRIDGE_AFTER_MS`, the stream's next messages are read one by one by sequence
   * (`readOnBySequence`), and the engine goes on evaluating. Both paths deliver in stream order; a message the other
   * delivered first is skipped. A round ends at a request that fails or finds nothing; the next comes `BRIDGE_POLL_MS`
   * later.
   */
  async #bridge(): Promise<void> {
    const now = performance.now();
    const late = now - this.#bridgeTickAt > 2 * BRIDGE_POLL_MS;
    this.#bridgeTickAt = now;
    // After a stall of the event loop, the consumer's messages that arrived meanwhile are handled first.
    if (late) return;
    const silent = () => performance.now() - this.#progressAt >= BRIDGE_AFTER_MS;
    if (this.#stopped || this.#bridging || this.#bridgeJsm === null || !silent()) return;
    this.#bridging = true;
    try {
      await readOnBySequence(this.#bridgeJsm, TOPOLOGY.intake.stream, {
        after: () => this.#lastSeq,
        go: () => !this.#stopped && silent(),
        deliver: (m) => {
          this.#lastSeq = m.seq;
          this.#stats.bridged++;
          this.#receive({ seq: m.seq, subject: m.subject, headers: m.header, time: m.time.getTime(), data: m.data });
        },
      });
    } finally {
      this.#bridging = false;
    }
  }

  #receive(m: IntakeMsg): void {
    this.#stats.messages++;
    const wm = Number(m.headers?.get(INTAKE_WATERMARK_HEADER) ?? NaN);
    const token = m.subject.slice(TOPOLOGY.intake.subjects.length - 1);
    if (token === "supply") return this.#supplies(m);
    if (token !== "tick") this.#ring?.add(token, { seq: m.seq, time: m.time, data: m.data.slice() });
    const unit = token === "tick" ? undefined : this.#units.get(token);
    if (unit !== undefined) {
      try {
        const { samples } = decodeIntakeBatch(m.data);
        this.#stats.decoded += samples.length;
        if (unit === "live") this.#enqueue(samples);
        else if (unit.only === null) {
          unit.held.push(...samples);
          this.#stats.held += samples.length;
        } else {
          const { only } = unit;
          const held = samples.filter((s) => only.has(s.sample.asset));
          unit.held.push(...held);
          this.#stats.held += held.length;
          if (held.length < samples.length) this.#enqueue(samples.filter((s) => !only.has(s.sample.asset)));
        }
      } catch (e) {
        this.#o.log("warn", "unreadable intake message", { seq: m.seq, subject: m.subject, error: e instanceof Error ? e.message : String(e) });
      }
    }
    if (Number.isFinite(wm)) this.#advance(wm);
  }

  #supplies(m: IntakeMsg): void {
    try {
      for (const leg of decodeIntakeSupplies(m.data)) this.#o.supply?.(leg);
    } catch (e) {
      this.#o.log("warn", "unreadable intake supply message", { seq: m.seq, error: e instanceof Error ? e.message : String(e) });
    }
  }

  #enqueue(samples: readonly ReceivedSample[]): void {
    for (const s of samples) {
      const last = this.#pending[this.#pending.length - 1];
      if (last !== undefined && s.at < last.at) this.#sorted = false;
      this.#pending.push(s);
    }
  }

  /**
   * Evaluates the pending samples stamped up to `wm` in the order of their instants, then moves the clock to it. At
   * most `TURN_BUDGET_MS` per turn of the event loop: a tick of 10,000 assets is 10,000 evaluations, about a second in
   * one go on a loaded machine, and the engine's lease renewals (their answers unread, their fence timers due first)
   * missed their deadline behind it. The rest continues in the next turn, in the same order; what arrives meanwhile
   * waits behind it.
   */
  #advance(wm: EpochMs): void {
    this.#wm = Math.max(this.#wm, wm);
    if (this.#continuation !== null) return;
    if (!this.#sorted) {
      this.#pending.sort((a, b) => a.at - b.at);
      this.#sorted = true;
    }
    const { clock } = this.#o;
    const started = performance.now();
    let i = 0;
    for (; i < this.#pending.length && this.#pending[i]!.at <= this.#wm; i++) {
      if ((i & 63) === 63 && performance.now() - started > TURN_BUDGET_MS) {
        this.#stats.yields++;
        this.#continuation = setImmediate(() => {
          this.#continuation = null;
          if (!this.#stopped) this.#advance(this.#wm);
        });
        break;
      }
      const s = this.#pending[i]!;
      if (s.at > clock.now()) clock.set(s.at);
      try {
        this.#o.ingest(s);
        this.#stats.evaluated++;
      } catch (e) {
        this.#o.log("warn", "an intake sample could not be evaluated", { asset: s.sample.asset, error: e instanceof Error ? e.message : String(e) });
      }
    }
    if (i > 0) this.#pending = this.#pending.slice(i);
    if (this.#continuation === null && this.#wm > clock.now()) clock.set(this.#wm);
  }

  /** A partition's messages from about `after` up to stream sequence `upTo` (what the main consumer had delivered). */
  async #history(unit: string, after: EpochMs, upTo: number): Promise<ReceivedSample[]> {
    const kept = this.#ring?.since(unit, Number.isFinite(after) ? this.#o.wallOf(after) - HISTORY_SLACK_MS : -Infinity, upTo) ?? null;
    if (kept !== null) {
      this.#stats.histories_kept++;
      return kept.flatMap((m) => decodeIntakeBatch(m.data).samples);
    }
    this.#stats.histories_read++;
    const start = Number.isFinite(after)
      ? { deliver_policy: DeliverPolicy.StartTime, opt_start_time: new Date(this.#o.wallOf(after) - HISTORY_SLACK_MS).toISOString() }
      : { deliver_policy: DeliverPolicy.All };
    if (Number.isFinite(after)) {
      // The stream's bounds dropped what the state needs: said, as `RecentSamples` says it (the asset goes on). Only
      // when something was dropped: a state evaluated just before the stream's first message was stored is covered.
      const { first_ts, first_seq } = (await (await this.#historyJs.streams.get(TOPOLOGY.intake.stream)).info()).state;
      const first = Date.parse(first_ts);
      if (first_seq > 1 && first > this.#o.wallOf(after)) {
        this.#o.log("warn", "samples since the restored state are no longer kept; the asset resumes without them", {
          partition: unit,
          after: new Date(after).toISOString(),
          kept_from: new Date(first).toISOString(),
        });
      }
    }
    const consumer = await orderedConsumer(
      this.#o.nc,
      TOPOLOGY.intake.stream,
      { filter_subjects: subjects.intake(Number(unit)), ...start },
      { what: `creating partition ${unit}'s history consumer`, budgetMs: HISTORY_TIMEOUT_MS, log: this.#o.log },
    );
    const samples: ReceivedSample[] = [];
    try {
      if ((await consumer.info(true)).num_pending === 0) return samples;
      const messages = await consumer.consume(PULL);
      for await (const m of messages) {
        if (m.seq > upTo) break;
        samples.push(...decodeIntakeBatch(m.data).samples);
        if (m.info.pending === 0) break;
      }
      return samples;
    } finally {
      await consumer.delete().catch(() => {});
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#watchdog !== null) clearInterval(this.#watchdog);
    if (this.#bridgeTimer !== null) clearInterval(this.#bridgeTimer);
    if (this.#continuation !== null) clearImmediate(this.#continuation);
    await this.#messages?.close();
    await this.#loop?.catch(() => {});
  }
}
