import { Subject, type Observable, type Subscription } from "rxjs";
import { JetStreamApiCodes, JetStreamApiError, type JetStreamClient, type PubAck } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { ActorHost, StateEvent } from "../../actors/index.ts";
import { assetStateToJSON } from "../../actors/index.ts";
import { systemClock, type Clock } from "../../clock.ts";
import type { AssetState, Receipt } from "../../methodology/index.ts";
import { SAMPLE_TS_HEADER, sampleMessage } from "./messages.ts";
import { PipelinedPublisher, type SamplePublisher } from "./pipelined-publisher.ts";
import { BoundedPublisher } from "./publisher.ts";
import { SampleRecorder, type LogFn } from "./sample-recorder.ts";
import { SnapshotWriter } from "./snapshots.ts";
import { subjects, TOPOLOGY, type Topology } from "./topology.ts";

export type { LogFn } from "./sample-recorder.ts";

const utf8 = new TextEncoder();

/** A transition that JetStream acknowledged: from here on it counts as emitted. */
export interface AckedTransition {
  readonly receipt: Receipt;
  readonly seq: number;
  /** The server had it already (a re-publish of the same alert id). */
  readonly duplicate: boolean;
}

export interface EngineLinkOptions {
  /** Publishes awaiting an ack at once, samples and transitions each. Default 256. */
  readonly window?: number;
  /** What publishes the sample messages. Default a `PipelinedPublisher` on the link's connection. */
  readonly samplePublisher?: SamplePublisher;
  /** Samples waiting for a publish slot beyond which new samples are dropped (and counted). Default 10,000. */
  readonly maxQueuedSamples?: number;
  /** Sample batches: subjects `peg.samples.<partition>` (default 1), period (default 250 ms) and size (default 1,000). */
  readonly sampleBatches?: { readonly partitions?: number; readonly flushMs?: number; readonly maxSamples?: number };
  /** Snapshot flush period. Default 1 s. */
  readonly snapshotEveryMs?: number;
  readonly log?: LogFn;
  /** Waits between retries of a transition publish (capped). Default 250 ms doubling to 5 s. */
  readonly retryBaseMs?: number;
  /**
   * Wall time for the overload report (when samples were last dropped). Default the system clock: not the engine's
   * clock, which a scenario replay or a simulated test runs faster.
   */
  readonly clock?: Clock;
}

/** A transition stored this long after its decision is logged ("transition stored late"). */
const SLOW_STORE_MS = 1_000;

/**
 * Carries the engine's decisions to JetStream. Per asset, in decision order:
 * - every evaluated sample is echoed on core `peg.state.<mint>` and recorded in `PEG_SAMPLES`, many to a message
 *   (`SampleRecorder`: when its queue is full or every try failed, during an outage or an overload, it is dropped,
 *   counted, logged as a warning and reported by `overload()` to `/readyz`);
 * - every transition is published to `peg.transition.<mint>` with `Nats-Msg-Id` = alert id and retried until
 *   JetStream acks it; only then is it emitted on `acked$`. Once `fence(mint, seq)` gave the asset's fencing token
 *   (the stream sequence of the last transition on its subject), every publish also expects that sequence as the
 *   subject's last (`Nats-Expected-Last-Subject-Sequence`) and each ack advances it: a publish decided from a state
 *   that is not the stream's latest is rejected by the server (see `#rejected`);
 * - the actor snapshot goes to KV `peg_actors` (coalesced), never ahead of an unacknowledged transition of its asset:
 *   a crash can lose a decision that was not acked, never record a state whose transition is missing.
 */
export class EngineLink {
  readonly #host: ActorHost;
  readonly #js: JetStreamClient;
  /** Transitions (each with its own expectation and retries until acknowledged). */
  readonly #publisher: BoundedPublisher;
  readonly #samples: SampleRecorder;
  /** Actor snapshots: KV puts are JetStream publishes, pipelined like the samples (kv.put is a request each). */
  readonly #snapshotPuts: PipelinedPublisher;
  readonly #snapshots: SnapshotWriter<AssetState>;
  readonly #nc: NatsConnection;
  readonly #acked = new Subject<AckedTransition>();
  readonly #chains = new Map<string, Promise<void>>();
  readonly #deferred = new Map<string, AssetState>();
  /**
   * Per asset, bumped when its lease is lost or its fencing token was rejected: steps queued before that publish and
   * write nothing.
   */
  readonly #epochs = new Map<string, number>();
  /**
   * Per asset, the fencing token: the stream sequence of the last transition on `peg.transition.<mint>` as this
   * engine knows it (0: none). Absent: transitions are published without an expectation (an asset never fenced).
   */
  readonly #expected = new Map<string, number>();
  /** Restores an asset's actor from the stream after its fencing token was rejected (`onConflict`). */
  #resync: ((mint: string) => Promise<void>) | null = null;
  readonly #topology: Topology;
  readonly #log: LogFn;
  readonly #maxQueued: number;
  readonly #retryBaseMs: number;
  #sub: Subscription | null = null;
  #closed = false;

  readonly acked$: Observable<AckedTransition> = this.#acked.asObservable();

  constructor(
    host: ActorHost,
    nc: NatsConnection,
    js: JetStreamClient,
    topology: Topology,
    options: EngineLinkOptions = {},
  ) {
    this.#host = host;
    this.#topology = topology;
    this.#nc = nc;
    this.#js = js;
    this.#publisher = new BoundedPublisher(js, options.window ?? 256);
    this.#snapshotPuts = new PipelinedPublisher(nc, { window: 256 });
    this.#snapshots = new SnapshotWriter<AssetState>(topology.actors, (state) => JSON.stringify(assetStateToJSON(state)), {
      put: (mint, encoded) => this.#snapshotPuts.publish(subjects.actorSnapshot(mint), utf8.encode(encoded)),
    });
    this.#log = options.log ?? (() => {});
    this.#maxQueued = options.maxQueuedSamples ?? 10_000;
    this.#retryBaseMs = options.retryBaseMs ?? 250;
    this.#samples = new SampleRecorder({
      publisher: options.samplePublisher ?? new PipelinedPublisher(nc, { window: options.window ?? 256 }),
      maxQueued: this.#maxQueued,
      partitions: options.sampleBatches?.partitions ?? 1,
      flushMs: options.sampleBatches?.flushMs ?? 250,
      maxBatch: options.sampleBatches?.maxSamples ?? 1_000,
      retryBaseMs: this.#retryBaseMs,
      clock: options.clock ?? systemClock,
      log: this.#log,
    });
    this.#snapshots.start(options.snapshotEveryMs ?? 1_000);
  }

  get stats() {
    return {
      /** Sample and transition publishes together. */
      publisher: sumStats(this.#publisher.stats, this.#samples.publisherStats),
      snapshots: this.#snapshots.stats,
      droppedSamples: this.#samples.stats.dropped,
      /** Sample publishes JetStream acknowledged (a retried duplicate included, once). */
      ackedSamples: this.#samples.stats.acked,
      queuedSamples: this.#samples.stats.queued,
      maxQueuedSamples: this.#maxQueued,
      pendingAssets: this.#chains.size,
    };
  }

  start(): void {
    if (this.#sub !== null) return;
    this.#sub = this.#host.events$.subscribe((e) => {
      if (e.kind === "state") this.#onState(e);
      else this.#onTransition(e.receipt);
    });
  }

  #chain(mint: string, step: () => Promise<void> | void): void {
    const prev = this.#chains.get(mint) ?? Promise.resolve();
    const next = prev.then(step).catch((err: unknown) => {
      this.#log("error", "engine link step failed", { mint, error: err instanceof Error ? err.message : String(err) });
    });
    this.#chains.set(mint, next);
    void next.then(() => {
      if (this.#chains.get(mint) === next) this.#chains.delete(mint);
    });
  }

  #onState(e: StateEvent): void {
    const message = sampleMessage(e);
    try {
      this.#nc.publish(subjects.state(e.mint), utf8.encode(JSON.stringify(message)));
    } catch {
      // core publish while disconnected: state pushes are live-only, nothing to keep
    }
    this.#samples.record(e.mint, message);
    const snapshot = e.engine;
    if (e.transition) this.#deferred.set(e.mint, snapshot);
    // Nothing of this asset waits for an ack: the snapshot is its latest state now (no promise per sample).
    else if (!this.#chains.has(e.mint)) this.#snapshots.update(e.mint, snapshot);
    else {
      const epoch = this.#epoch(e.mint);
      this.#chain(e.mint, () => {
        if (this.#epoch(e.mint) === epoch) this.#snapshots.update(e.mint, snapshot);
      });
    }
  }

  /**
   * Why the link is overloaded (it dropped a sample within the last 30 s), or null. Read by `/readyz`: a process that
   * cannot record what it evaluates is not ready.
   */
  overload(now?: number): string | null {
    return this.#samples.overload(now);
  }

  #epoch(mint: string): number {
    return this.#epochs.get(mint) ?? 0;
  }

  #onTransition(receipt: Receipt): void {
    const mint = receipt.mint;
    const decidedAt = performance.now();
    const payload = JSON.stringify(receipt);
    const snapshot = this.#deferred.get(mint);
    this.#deferred.delete(mint);
    const epoch = this.#epoch(mint);
    this.#chain(mint, async () => {
      // Lost (or rejected) since this was decided: the decision is dropped, never published.
      if (this.#epoch(mint) !== epoch) {
        this.#log("warn", "transition dropped: its asset was lost before it was published", { mint, alert_id: receipt.alert_id });
        return;
      }
      const ack = await this.#publishUntilAcked(receipt, payload, epoch, snapshot?.last?.ts);
      if (ack === null) return;
      // Stored a second or more after it was decided (a nats-server lost, an election): said, with how long, so an
      // operator (and bench:cluster) can tell where a late transition's time went.
      const tookMs = Math.round(performance.now() - decidedAt);
      if (tookMs >= SLOW_STORE_MS) this.#log("info", "transition stored late", { mint, alert_id: receipt.alert_id, seq: ack.seq, took_ms: tookMs });
      // The ack is the subject's last message now (or, for a duplicate, a message already there): the next token.
      const expected = this.#expected.get(mint);
      if (expected !== undefined && this.#epoch(mint) === epoch) this.#expected.set(mint, Math.max(expected, ack.seq));
      this.#acked.next({ receipt, seq: ack.seq, duplicate: ack.duplicate });
      if (snapshot !== undefined && this.#epoch(mint) === epoch) this.#snapshots.update(mint, snapshot);
    });
  }

  /** Resolves with the ack, or null when the fencing token was rejected (the decision is discarded). */
  async #publishUntilAcked(receipt: Receipt, payload: string, epoch: number, sampleTs: number | undefined): Promise<PubAck | null> {
    const mint = receipt.mint;
    let wait = this.#retryBaseMs;
    for (let attempt = 1; ; attempt++) {
      // The lease was lost (maybe while this waited to retry: `revoke` also drops the token, so a publish now would go
      // out unfenced): the new owner decides from the last acknowledged state; this decision was never emitted.
      if (attempt > 1 && this.#epoch(mint) !== epoch) throw new Error(`lease lost before ${receipt.alert_id} was acknowledged; not retried`);
      // Read per attempt, but only this asset's steps (one at a time) and `fence` on acquisition move it.
      const expected = this.#expected.get(mint);
      try {
        return await this.#publisher.publish(subjects.transition(mint), payload, receipt.alert_id, 5_000, {
          ...(expected === undefined ? {} : { lastSubjectSequence: expected }),
          ...(sampleTs === undefined ? {} : { headers: { [SAMPLE_TS_HEADER]: String(sampleTs) } }),
        });
      } catch (publishError) {
        let e = publishError;
        if (isWrongLastSequence(e)) {
          try {
            return await this.#rejected(receipt, epoch, expected ?? 0);
          } catch (readError) {
            // The subject could not be read: retried like any failed publish (the same answer comes back).
            e = readError;
          }
        }
        if (this.#closed && attempt > 3) throw e;
        // The lease was lost: the new owner decides from the last acknowledged state; this decision was never emitted.
        if (this.#epoch(mint) !== epoch) throw new Error(`lease lost before ${receipt.alert_id} was acknowledged; not retried`);
        this.#log("warn", "transition publish failed; retrying", {
          alert_id: receipt.alert_id,
          attempt,
          error: e instanceof Error ? e.message : String(e),
        });
        await new Promise((r) => setTimeout(r, wait));
        wait = Math.min(wait * 2, 5_000);
      }
    }
  }

  /**
   * The server rejected a transition: the last message on the asset's subject is not `expected`. Either an earlier
   * attempt of this very publish landed and its ack was lost (a JetStream cluster checks the expected sequence before
   * the `Nats-Msg-Id` duplicate, a single server after it), which is an ack; or another engine published for the
   * asset since this engine's token was read:
   * - the asset was lost meanwhile (`revoke`: a stale owner whose publish arrived late): dropped, never retried, no
   *   snapshot written;
   * - the asset is still ours (a new owner whose token was read before the previous owner's late publish landed):
   *   the stream is the system of record, so the decision is discarded, the actor is stopped, and it is restored from
   *   the subject's last transition (`onConflict`, the acquisition path), then carries on from that state.
   * Resolves with the ack, or null when the decision is discarded.
   */
  async #rejected(receipt: Receipt, epoch: number, expected: number): Promise<PubAck | null> {
    const mint = receipt.mint;
    const last = await this.#topology.jsm.streams.getMessage(TOPOLOGY.transitions.stream, { last_by_subj: subjects.transition(mint) }).catch((e: unknown) => {
      if (/no message found|not found/i.test(e instanceof Error ? e.message : String(e))) return null;
      throw e;
    });
    const fields = { mint, alert_id: receipt.alert_id, expected_last_seq: expected, stream_last_seq: last?.seq ?? 0 };
    if (last !== null && last.header?.get("Nats-Msg-Id") === receipt.alert_id) {
      this.#log("info", "transition already stored (an earlier attempt's ack was lost)", fields);
      return { stream: TOPOLOGY.transitions.stream, seq: last.seq, duplicate: true };
    }
    if (this.#epoch(mint) !== epoch) {
      this.#log("warn", "transition rejected by its fencing token: another engine published for this asset after its lease was lost; dropped", fields);
      return null;
    }
    this.#log("warn", "transition rejected by its fencing token: the asset's stream moved; restoring the actor from its last transition", fields);
    if (this.#host.runs(mint)) this.#host.release(mint);
    this.revoke(mint);
    void this.#restoreFromStream(mint, this.#epoch(mint));
    return null;
  }

  /** Runs the `onConflict` handler until it succeeds, the asset is lost again, or the link closes. */
  async #restoreFromStream(mint: string, epoch: number): Promise<void> {
    const resync = this.#resync;
    if (resync === null) {
      this.#log("warn", "asset stopped: no conflict handler to restore it from the stream", { mint });
      return;
    }
    for (let wait = this.#retryBaseMs; !this.#closed && this.#epoch(mint) === epoch; wait = Math.min(wait * 2, 5_000)) {
      try {
        await resync(mint);
        // The restored state, written at once: an older snapshot of the discarded state must not outlive it.
        const state = this.#host.runs(mint) ? this.#host.engineState(mint) : undefined;
        if (state !== undefined && this.#epoch(mint) === epoch) {
          this.#chain(mint, () => {
            if (this.#epoch(mint) === epoch) this.#snapshots.update(mint, state);
          });
        }
        return;
      } catch (e) {
        this.#log("warn", "cannot restore the asset from the stream yet; retrying", { mint, error: e instanceof Error ? e.message : String(e) });
        await new Promise((r) => setTimeout(r, wait));
      }
    }
  }

  /**
   * Sets an asset's fencing token: the stream sequence of the last message on `peg.transition.<mint>` (0: none), read
   * with the state its actor is restored from (`readRecovery`). Call it before the actor starts; from then on every
   * transition of the asset is published expecting it, and each ack advances it.
   */
  fence(mint: string, lastSeq: number): void {
    this.#expected.set(mint, lastSeq);
  }

  /** The asset's fencing token, or undefined when its transitions are published without one. */
  fencingToken(mint: string): number | undefined {
    return this.#expected.get(mint);
  }

  /**
   * What restores an asset whose fencing token was rejected while it is still this engine's: read its state with
   * `readRecovery(…, { preferTransition: true })`, call `fence` with the sequence read, then restore the actor.
   * Without a handler the asset stays stopped.
   */
  onConflict(handler: (mint: string) => Promise<void>): void {
    this.#resync = handler;
  }

  /**
   * Scale-out, graceful hand-back of one asset (its actor already stopped): waits until its decided transitions are
   * acknowledged, then writes its latest snapshot, so the next owner resumes exactly there.
   */
  async settle(mint: string): Promise<void> {
    await this.#chains.get(mint);
    await this.#snapshots.flushAsset(mint);
  }

  /**
   * Scale-out, lease lost (its actor already stopped): nothing more is written for this asset. A transition not yet
   * acknowledged is not retried and its snapshot is not written, so the new owner never sees a state ahead of the
   * acknowledged history; unwritten snapshots are discarded so they cannot overwrite the new owner's.
   */
  revoke(mint: string): void {
    this.#epochs.set(mint, this.#epoch(mint) + 1);
    this.#expected.delete(mint);
    this.#deferred.delete(mint);
    this.#snapshots.discard(mint);
  }

  /** Stops listening, waits for every asset's pending publishes, then flushes the snapshots. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#sub?.unsubscribe();
    this.#sub = null;
    while (this.#chains.size > 0) await Promise.all([...this.#chains.values()]);
    await this.#publisher.drain();
    // Every sample batch settles (acked, or dropped after its last try) before the acks stop being read.
    await this.#samples.close();
    await this.#snapshots.close();
    this.#snapshotPuts.close();
    this.#acked.complete();
  }

  /** The JetStream client, for callers that publish through the same connection. */
  get js(): JetStreamClient {
    return this.#js;
  }
}

function isWrongLastSequence(e: unknown): boolean {
  return e instanceof JetStreamApiError && e.code === JetStreamApiCodes.StreamWrongLastSequence;
}

function sumStats(a: { published: number; failed: number; inFlight: number }, b: { published: number; failed: number; inFlight: number }) {
  return { published: a.published + b.published, failed: a.failed + b.failed, inFlight: a.inFlight + b.inFlight };
}
