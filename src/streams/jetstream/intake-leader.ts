import type { JetStreamManager } from "@nats-io/jetstream";
import type { Observable, Subscription } from "rxjs";
import type { Clock } from "../../clock.ts";
import type { EpochMs, Sample } from "../../methodology/index.ts";
import type { SupplyLeg } from "../sources/legs.ts";
import { decodeIntakeBatch } from "./intake-batch.ts";
import type { IntakePublisher } from "./intake-publisher.ts";
import type { LeaseKeeper } from "./lease-keeper.ts";
import { LEASE_MARGIN_MS, LEASE_RENEW_EVERY_MS, LEASE_TTL_MS, LeaseConflictError, type LeaseStore } from "./lease-store.ts";
import type { LogFn } from "./sample-recorder.ts";
import { TOPOLOGY } from "./topology.ts";

/** The lease key of the cluster's intake in PEG_LEASES. */
export const INTAKE_LEASE_KEY = "intake";

/** What the intake polls, opened when this engine becomes the intake. */
export interface IntakeSource {
  /**
   * Opens the feed for samples after `after` (the watermark the stream's last message carries; -Infinity for an empty
   * stream): the samples with the instant each is received at, and the watermark (no later sample is stamped before it).
   */
  open(after: EpochMs): {
    readonly samples: Observable<{ readonly sample: Sample; readonly at: EpochMs }>;
    watermark(): EpochMs;
    /** The circulating supplies the feed observes, published to every engine. */
    readonly supply?: Observable<SupplyLeg>;
  };
}

export interface IntakeLeaderOptions {
  readonly store: LeaseStore;
  readonly self: string;
  readonly jsm: JetStreamManager;
  readonly source: IntakeSource;
  /** A publisher for one term (a new one per leadership: a fenced term's publisher is closed). */
  readonly publisher: () => IntakePublisher;
  /** Wall clock (the lease). */
  readonly clock: Clock;
  readonly log: LogFn;
  /** Seal period: a received sample waits at most this long before it is published. Default 50 ms. */
  readonly sealEveryMs?: number;
  readonly ttlMs?: number;
  readonly renewEveryMs?: number;
  readonly fenceAfterMs?: number;
  /**
   * Renews the intake lease off this thread (the partitions' `LeaseKeeperThread`, started, with `INTAKE_LEASE_KEY`
   * among its keys), so a stall of this thread's event loop does not move the intake. Default: renewed here.
   */
  readonly keeper?: LeaseKeeper | null;
}

interface Term {
  readonly publisher: IntakePublisher;
  readonly subscription: Subscription;
  readonly watermark: () => EpochMs;
  sealer: unknown;
  /** The fencing deadline: `fenceAfterMs` after the sending of the last successful write. */
  deadline: number;
  revision: number;
  /** The fencing deadline's timer: `fenceAfterMs` after the sending of the last successful write. */
  fence: unknown;
}

/**
 * Runs the cluster's intake on at most one engine at a time (issue 26 item 2): the engine holding the `intake` lease
 * in PEG_LEASES polls the feed and publishes what it receives to PEG_INTAKE; every other engine only reads its own
 * partitions from there. The lease is the partitions' protocol for one key (compare-and-set on the revision, a TTL,
 * self-fencing `fenceAfterMs` after the sending of the last successful renewal, before anyone may take it over); a new
 * intake continues after the watermark of the stream's last message, so a scenario resumes where the previous intake
 * stopped (samples published twice meanwhile are evaluated once: engines drop a sample not newer than its asset's
 * state).
 */
export class IntakeLeader {
  readonly #o: IntakeLeaderOptions;
  readonly #ttl: number;
  readonly #every: number;
  readonly #fenceAfter: number;
  #term: Term | null = null;
  #timer: unknown = null;
  #stopped = false;
  #terms = 0;

  constructor(options: IntakeLeaderOptions) {
    this.#o = options;
    this.#ttl = options.ttlMs ?? LEASE_TTL_MS;
    this.#every = options.renewEveryMs ?? LEASE_RENEW_EVERY_MS;
    this.#fenceAfter = options.fenceAfterMs ?? this.#ttl - LEASE_MARGIN_MS;
    if (!(this.#every < this.#fenceAfter && this.#fenceAfter < this.#ttl)) throw new RangeError("lease timing must satisfy renewEveryMs < fenceAfterMs < ttlMs");
  }

  /** True while this engine is the intake. */
  get leading(): boolean {
    return this.#term !== null;
  }

  get stats() {
    return { leading: this.leading, terms: this.#terms, ...(this.#term?.publisher.stats ?? {}) };
  }

  /** Why the intake should produce less (its publishes are behind), or null. */
  pressure(): string | null {
    return this.#term?.publisher.pressure() ?? null;
  }

  /** Campaigns (or renews) now and then every `renewEveryMs`, one round at a time. */
  start(): void {
    const loop = (): void => {
      if (this.#stopped) return;
      this.#timer = this.#o.clock.setTimeout(() => void this.#round().finally(loop), this.#every);
    };
    void this.#round().finally(loop);
  }

  async #round(): Promise<void> {
    try {
      // The keeper's thread renews a term on its own.
      if (this.#term !== null) {
        if (this.#o.keeper == null) await this.#renew(this.#term);
      } else await this.#campaign();
    } catch (e) {
      this.#o.log("warn", "intake lease round failed", { error: e instanceof Error ? e.message : String(e) });
    }
  }

  /** (Re)arms the self-fencing deadline from the sending of the write that just succeeded. */
  #armFence(t: Term, sentAt: number): void {
    t.deadline = sentAt + this.#fenceAfter;
    this.#armTimer(t);
  }

  /** The fence's timer, at the term's deadline; when it runs, a deadline the keeper's thread moved meanwhile re-arms it. */
  #armTimer(t: Term): void {
    const { clock } = this.#o;
    clock.clearTimeout(t.fence);
    t.fence = clock.setTimeout(
      () => {
        if (this.#term !== t) return;
        if (clock.now() < this.#deadline(t)) return this.#armTimer(t);
        void this.#end("fenced: the intake lease was not renewed in time");
      },
      Math.max(0, this.#deadline(t) - clock.now()),
    );
  }

  /** The term's fencing deadline: from its last write this thread knows of, or the keeper's thread wrote since. */
  #deadline(t: Term): number {
    const keeper = this.#o.keeper;
    return keeper == null ? t.deadline : Math.max(t.deadline, keeper.sentAt(INTAKE_LEASE_KEY) + this.#fenceAfter);
  }

  async #campaign(): Promise<void> {
    const { store, self, clock } = this.#o;
    const current = await store.get(INTAKE_LEASE_KEY);
    if (current !== null && current.value.owner !== self && current.value.expires_at > clock.now()) return;
    const sentAt = clock.now();
    const value = { owner: self, expires_at: sentAt + this.#ttl };
    let revision: number;
    try {
      revision = current === null ? await store.create(INTAKE_LEASE_KEY, value) : await store.update(INTAKE_LEASE_KEY, value, current.revision);
    } catch (e) {
      if (e instanceof LeaseConflictError) return;
      throw e;
    }
    const after = await this.#lastWatermark();
    if (this.#stopped || clock.now() - sentAt >= this.#fenceAfter) return;
    const { samples, watermark, supply } = this.#o.source.open(after);
    const publisher = this.#o.publisher();
    const subscription = samples.subscribe({
      next: (s) => publisher.add(s),
      error: (e: unknown) => this.#o.log("error", "the intake's feed failed", { error: e instanceof Error ? e.message : String(e) }),
    });
    if (supply !== undefined) {
      subscription.add(
        supply.subscribe({
          next: (leg) => publisher.addSupply(leg),
          error: (e: unknown) => this.#o.log("warn", "supply source failed; cards keep the last stored supply", { error: e instanceof Error ? e.message : String(e) }),
        }),
      );
    }
    const t: Term = { publisher, subscription, watermark, sealer: null, revision, fence: null, deadline: sentAt + this.#fenceAfter };
    const every = this.#o.sealEveryMs ?? 50;
    const seal = (): void => {
      if (this.#term !== t) return;
      // Past the fencing deadline, whether or not the fence's timer has run yet (a busy event loop runs it late).
      if (clock.now() >= this.#deadline(t)) return void this.#end("fenced: the intake lease was not renewed in time");
      publisher.seal(watermark());
      t.sealer = clock.setTimeout(seal, every);
    };
    this.#term = t;
    this.#o.keeper?.hold(INTAKE_LEASE_KEY, { revision, sentAt }, () => void (this.#term === t && this.#end("the intake lease was taken")));
    this.#armFence(t, sentAt);
    t.sealer = clock.setTimeout(seal, every);
    this.#terms++;
    this.#o.log("info", "this engine is the intake", { engine: self, after: Number.isFinite(after) ? new Date(after).toISOString() : null });
  }

  /** The watermark of the stream's last message: everything before it was published by an earlier intake. */
  async #lastWatermark(): Promise<EpochMs> {
    const info = await this.#o.jsm.streams.info(TOPOLOGY.intake.stream);
    if (info.state.last_seq === 0 || info.state.messages === 0) return -Infinity;
    const m = await this.#o.jsm.streams.getMessage(TOPOLOGY.intake.stream, { seq: info.state.last_seq });
    return m === null ? -Infinity : decodeIntakeBatch(m.data).wm;
  }

  async #renew(t: Term): Promise<void> {
    const sentAt = this.#o.clock.now();
    try {
      t.revision = await this.#o.store.update(INTAKE_LEASE_KEY, { owner: this.#o.self, expires_at: sentAt + this.#ttl }, t.revision);
      if (this.#term === t) this.#armFence(t, sentAt);
    } catch (e) {
      if (e instanceof LeaseConflictError) await this.#end("the intake lease was taken");
      else throw e;
    }
  }

  /** Ends this engine's term: the feed is unsubscribed, what is open discarded, nothing more published. */
  async #end(why: string): Promise<void> {
    const t = this.#term;
    if (t === null) return;
    this.#term = null;
    this.#endTerm(t);
    this.#o.log("warn", "this engine is no longer the intake", { why });
    await t.publisher.close();
  }

  #endTerm(t: Term): void {
    this.#o.keeper?.drop(INTAKE_LEASE_KEY);
    t.subscription.unsubscribe();
    this.#o.clock.clearTimeout(t.sealer);
    this.#o.clock.clearTimeout(t.fence);
  }

  /** Hands the intake back: publishes what was received, then deletes the lease so another engine takes it at once. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#o.clock.clearTimeout(this.#timer);
    const t = this.#term;
    if (t === null) return;
    this.#term = null;
    // The keeper's thread stops renewing, and answers with the revision it wrote last (null: it is not ours any more).
    const last = this.#o.keeper == null ? t : await this.#o.keeper.letGo(INTAKE_LEASE_KEY);
    this.#endTerm(t);
    t.publisher.seal(t.watermark());
    await t.publisher.close();
    if (last !== null) await this.#o.store.remove(INTAKE_LEASE_KEY, last.revision).catch(() => {});
  }
}
