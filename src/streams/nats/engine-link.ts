import { Subject, type Observable, type Subscription } from "rxjs";
import type { JetStreamClient, PubAck } from "@nats-io/jetstream";
import type { ActorHost, StateEvent } from "../../actors/index.ts";
import { assetStateToJSON } from "../../actors/index.ts";
import type { Receipt } from "../../methodology/index.ts";
import { sampleMessage, sampleMsgId } from "./messages.ts";
import { BoundedPublisher } from "./publisher.ts";
import { SnapshotWriter } from "./snapshots.ts";
import { subjects, type Topology } from "./topology.ts";

export type LogFn = (level: "debug" | "info" | "warn" | "error", msg: string, fields?: Record<string, unknown>) => void;

/** A transition that JetStream acknowledged: from here on it counts as emitted. */
export interface AckedTransition {
  readonly receipt: Receipt;
  readonly seq: number;
  /** The server had it already (a re-publish of the same alert id). */
  readonly duplicate: boolean;
}

export interface EngineLinkOptions {
  /** Publishes awaiting an ack at once. Default 256. */
  readonly window?: number;
  /** Samples waiting for a publish slot beyond which new samples are dropped (and counted). Default 10,000. */
  readonly maxQueuedSamples?: number;
  /** Snapshot flush period. Default 1 s. */
  readonly snapshotEveryMs?: number;
  readonly log?: LogFn;
  /** Waits between retries of a transition publish (capped). Default 250 ms doubling to 5 s. */
  readonly retryBaseMs?: number;
}

/**
 * Carries the engine's decisions to JetStream. Per asset, in decision order:
 * - every evaluated sample is published to `peg.sample.<mint>` (best effort: dropped and counted when the queue is
 *   full during an outage) and echoed on core `peg.state.<mint>`;
 * - every transition is published to `peg.transition.<mint>` with `Nats-Msg-Id` = alert id and retried until
 *   JetStream acks it; only then is it emitted on `acked$`;
 * - the actor snapshot goes to KV `peg_actors` (coalesced), never ahead of an unacknowledged transition of its asset:
 *   a crash can lose a decision that was not acked, never record a state whose transition is missing.
 */
export class EngineLink {
  readonly #host: ActorHost;
  readonly #js: JetStreamClient;
  readonly #publisher: BoundedPublisher;
  readonly #snapshots: SnapshotWriter;
  readonly #nc: { publish(subject: string, data: string): void };
  readonly #acked = new Subject<AckedTransition>();
  readonly #chains = new Map<string, Promise<void>>();
  readonly #deferred = new Map<string, string>();
  /** Per asset, bumped when its lease is lost: steps queued before that write nothing (scale-out fencing). */
  readonly #epochs = new Map<string, number>();
  readonly #log: LogFn;
  readonly #maxQueued: number;
  readonly #retryBaseMs: number;
  #queuedSamples = 0;
  #droppedSamples = 0;
  #sub: Subscription | null = null;
  #closed = false;

  readonly acked$: Observable<AckedTransition> = this.#acked.asObservable();

  constructor(
    host: ActorHost,
    nc: { publish(subject: string, data: string): void },
    js: JetStreamClient,
    topology: Topology,
    options: EngineLinkOptions = {},
  ) {
    this.#host = host;
    this.#nc = nc;
    this.#js = js;
    this.#publisher = new BoundedPublisher(js, options.window ?? 256);
    this.#snapshots = new SnapshotWriter(topology.actors);
    this.#log = options.log ?? (() => {});
    this.#maxQueued = options.maxQueuedSamples ?? 10_000;
    this.#retryBaseMs = options.retryBaseMs ?? 250;
    this.#snapshots.start(options.snapshotEveryMs ?? 1_000);
  }

  get stats() {
    return {
      publisher: this.#publisher.stats,
      snapshots: this.#snapshots.stats,
      droppedSamples: this.#droppedSamples,
      queuedSamples: this.#queuedSamples,
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
    const payload = JSON.stringify(sampleMessage(e));
    try {
      this.#nc.publish(subjects.state(e.mint), payload);
    } catch {
      // core publish while disconnected: state pushes are live-only, nothing to keep
    }
    if (this.#queuedSamples >= this.#maxQueued) this.#droppedSamples++;
    else {
      this.#queuedSamples++;
      this.#publisher
        .publish(subjects.sample(e.mint), payload, sampleMsgId(e))
        .catch(() => this.#droppedSamples++)
        .finally(() => this.#queuedSamples--);
    }
    const snapshot = JSON.stringify(assetStateToJSON(e.engine));
    if (e.transition) this.#deferred.set(e.mint, snapshot);
    else {
      const epoch = this.#epoch(e.mint);
      this.#chain(e.mint, () => {
        if (this.#epoch(e.mint) === epoch) this.#snapshots.update(e.mint, snapshot);
      });
    }
  }

  #epoch(mint: string): number {
    return this.#epochs.get(mint) ?? 0;
  }

  #onTransition(receipt: Receipt): void {
    const payload = JSON.stringify(receipt);
    const snapshot = this.#deferred.get(receipt.mint);
    this.#deferred.delete(receipt.mint);
    const epoch = this.#epoch(receipt.mint);
    this.#chain(receipt.mint, async () => {
      const ack = await this.#publishUntilAcked(receipt, payload, epoch);
      this.#acked.next({ receipt, seq: ack.seq, duplicate: ack.duplicate });
      if (snapshot !== undefined && this.#epoch(receipt.mint) === epoch) this.#snapshots.update(receipt.mint, snapshot);
    });
  }

  async #publishUntilAcked(receipt: Receipt, payload: string, epoch: number): Promise<PubAck> {
    let wait = this.#retryBaseMs;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#publisher.publish(subjects.transition(receipt.mint), payload, receipt.alert_id);
      } catch (e) {
        if (this.#closed && attempt > 3) throw e;
        // The lease was lost: the new owner decides from the last acknowledged state; this decision was never emitted.
        if (this.#epoch(receipt.mint) !== epoch) throw new Error(`lease lost before ${receipt.alert_id} was acknowledged; not retried`);
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
   * Scale-out, graceful hand-back of one asset (its actor already stopped): waits until its decided transitions are
   * acknowledged, then writes its latest snapshot, so the next owner resumes exactly there.
   */
  async settle(mint: string): Promise<void> {
    await this.#chains.get(mint);
    await this.#snapshots.flush();
  }

  /**
   * Scale-out, lease lost (its actor already stopped): nothing more is written for this asset. A transition not yet
   * acknowledged is not retried and its snapshot is not written, so the new owner never sees a state ahead of the
   * acknowledged history; unwritten snapshots are discarded so they cannot overwrite the new owner's.
   */
  revoke(mint: string): void {
    this.#epochs.set(mint, this.#epoch(mint) + 1);
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
    await this.#snapshots.close();
    this.#acked.complete();
  }

  /** The JetStream client, for callers that publish through the same connection. */
  get js(): JetStreamClient {
    return this.#js;
  }
}
