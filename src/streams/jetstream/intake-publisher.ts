import { randomBytes } from "node:crypto";
import { systemClock, type Clock } from "../../clock.ts";
import type { EpochMs } from "../../methodology/index.ts";
import type { SupplyLeg } from "../sources/legs.ts";
import { encodeIntakeBatch, encodeIntakeSupplies, INTAKE_WATERMARK_HEADER } from "./intake-batch.ts";
import { partitionOf } from "./lease-partitions.ts";
import type { SamplePublisher } from "./pipelined-publisher.ts";
import type { ReceivedSample } from "./recent-samples.ts";
import type { LogFn } from "./sample-recorder.ts";
import { subjects } from "./topology.ts";

/** Samples in one message at most: a full batch goes out at once, with the previous watermark (under max_payload). */
const MAX_BATCH = 2_000;
/** Warnings about dropped samples: at most one per this period. */
const DROP_WARN_EVERY_MS = 10_000;

export interface IntakePublisherOptions {
  readonly publisher: SamplePublisher;
  /** `LEASE_PARTITIONS`: a sample goes to `peg.intake.<partitionOf(mint, partitions)>`. */
  readonly partitions: number;
  /** The partition of a sample's asset (by symbol); undefined: not in the catalog, not published. */
  readonly mintOf: (symbol: string) => string | undefined;
  /** Samples waiting for their publish's ack beyond which new ones are dropped (counted, logged). */
  readonly maxQueued: number;
  readonly log: LogFn;
  /** Wall time of the drop warnings. */
  readonly clock?: Clock;
}

/**
 * The intake's side of PEG_INTAKE (intake-batch.ts): samples are gathered per partition and `seal(wm)` publishes every
 * open batch as one group, in order, the last of the group carrying `wm` and the others the previous group's
 * watermark, so that whatever prefix of the stream an engine has read, every sample stamped at or before the
 * watermark it read is in that prefix. A group with no sample is a tick on `peg.intake.tick` (when the watermark
 * moved). Each message has a `Nats-Msg-Id` of this publisher and its number, so a retried publish is stored once.
 */
export class IntakePublisher {
  readonly #o: IntakePublisherOptions;
  readonly #id = randomBytes(8).toString("hex");
  readonly #open = new Map<number, ReceivedSample[]>();
  #supplies: SupplyLeg[] = [];
  readonly #inFlight = new Set<Promise<void>>();
  #order: Promise<unknown> = Promise.resolve();
  #n = 0;
  #wm: EpochMs = -Infinity;
  #queued = 0;
  #published = 0;
  #dropped = 0;
  #lastDropWarnAt = -Infinity;
  #closed = false;

  constructor(options: IntakePublisherOptions) {
    if (!Number.isSafeInteger(options.partitions) || options.partitions < 1) throw new RangeError("partitions must be a positive integer");
    this.#o = options;
  }

  get stats() {
    return { queued: this.#queued, published: this.#published, dropped: this.#dropped, messages: this.#n };
  }

  /** Why the intake should produce less now (its publishes are behind), or null. */
  pressure(): string | null {
    return this.#queued >= this.#o.maxQueued / 2 ? `the intake's publishes to PEG_INTAKE are behind (${this.#queued} samples waiting)` : null;
  }

  /** Adds a received sample to its partition's open batch (dropped, counted, when too many wait). */
  add(s: ReceivedSample): void {
    const mint = this.#o.mintOf(s.sample.asset);
    if (mint === undefined) return;
    if (this.#closed || this.#queued >= this.#o.maxQueued) return this.#drop(this.#closed ? "the intake is closed" : "the intake publish queue is full");
    this.#queued++;
    const p = partitionOf(mint, this.#o.partitions);
    const batch = this.#open.get(p);
    if (batch === undefined) this.#open.set(p, [s]);
    else if (batch.push(s) >= MAX_BATCH) {
      this.#open.delete(p);
      this.#send(subjects.intake(p), batch, Math.max(this.#wm, 0));
    }
  }

  /** Adds a circulating-supply reading (published with the next group, on `peg.intake.supply`). */
  addSupply(leg: SupplyLeg): void {
    if (!this.#closed) this.#supplies.push(leg);
  }

  /** Publishes every open batch as one group whose last message carries `wm` (a tick when none is open). */
  seal(wm: EpochMs): void {
    if (this.#closed) return;
    if (this.#supplies.length > 0) {
      const legs = this.#supplies;
      this.#supplies = [];
      this.#post(subjects.intakeSupply, encodeIntakeSupplies(legs), undefined, 0);
    }
    const previous = this.#wm;
    const next = Math.max(previous, wm);
    const groups = [...this.#open.entries()];
    this.#open.clear();
    if (groups.length === 0) {
      if (next > previous) this.#send(subjects.intakeTick, [], next);
    } else {
      groups.forEach(([p, batch], i) => this.#send(subjects.intake(p), batch, i === groups.length - 1 ? next : Math.max(previous, 0)));
    }
    this.#wm = next;
  }

  #send(subject: string, batch: ReceivedSample[], wm: EpochMs): void {
    this.#post(subject, encodeIntakeBatch(batch, wm), { [INTAKE_WATERMARK_HEADER]: String(wm) }, batch.length);
  }

  /** Publishes one encoded message after those before it (`n` samples in it), retried once with the same id. */
  #post(subject: string, encoded: Promise<Uint8Array>, extra: Record<string, string> | undefined, n: number): void {
    const msgId = `${this.#id}.${++this.#n}`;
    // Encoded on the thread pool, handed to the publisher in the order sealed: stream order is seal order.
    const sent = this.#order.then(() => encoded).then((payload) => ({ payload, ack: this.#o.publisher.publish(subject, payload, msgId, extra) }));
    this.#order = sent.catch(() => {});
    const done = sent
      .then(async ({ payload, ack }) => {
        try {
          await ack;
        } catch {
          // Once again, same id: stored once. A retry may land after later messages (engines evaluate it late).
          if (this.#closed) throw new Error("closed");
          await this.#o.publisher.publish(subject, payload, msgId, extra);
        }
        this.#published += n;
      })
      .catch(() => this.#drop("a publish to PEG_INTAKE failed twice", n))
      .finally(() => {
        this.#queued -= n;
        this.#inFlight.delete(done);
      });
    this.#inFlight.add(done);
  }

  #drop(why: string, n = 1): void {
    if (n === 0) return; // a tick or a supply message: the next one says the same
    this.#dropped += n;
    const now = (this.#o.clock ?? systemClock).now();
    if (now - this.#lastDropWarnAt < DROP_WARN_EVERY_MS) return;
    this.#lastDropWarnAt = now;
    this.#o.log("warn", "intake samples dropped before PEG_INTAKE", { why, dropped_total: this.#dropped, queued: this.#queued });
  }

  /** Stops: what is open is discarded (a fenced intake must publish nothing more); waits for the publishes in flight. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#open.clear();
    while (this.#inFlight.size > 0) await Promise.all([...this.#inFlight]);
    this.#o.publisher.close();
  }
}
