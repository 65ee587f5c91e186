/**
 * The PEG_INTAKE messages an engine received lately, every partition's, as they came (still gzip: a partition this
 * engine does not run is never decoded). When it takes a partition over, the partition's history since the restored
 * states is usually here, read without a round trip to NATS (a failover takes dozens of partitions at once, and as
 * many history consumers at once timed out on a loaded cluster); older than what is kept, it is read from the stream.
 */
export interface KeptMessage {
  readonly seq: number;
  /** The stream's time of the message (epoch ms). */
  readonly time: number;
  readonly data: Uint8Array;
}

export interface IntakeRingOptions {
  /** Keep what the stream stamped within this long before the newest message. */
  readonly windowMs: number;
  /** And at most this many bytes over every partition (the oldest go first). */
  readonly maxBytes: number;
}

export class IntakeRing {
  readonly #o: IntakeRingOptions;
  readonly #byUnit = new Map<string, KeptMessage[]>();
  /** Every message, in arrival order, for eviction. */
  #order: { readonly unit: string; readonly m: KeptMessage }[] = [];
  #head = 0;
  #bytes = 0;
  /** Messages stamped before this were not seen or were evicted: the ring is complete from here on. */
  #completeFrom: number;

  /** `since`: the stream time from which every message is received (the consumer's start). */
  constructor(options: IntakeRingOptions, since: number) {
    this.#o = options;
    this.#completeFrom = since;
  }

  get bytes(): number {
    return this.#bytes;
  }

  add(unit: string, m: KeptMessage): void {
    let list = this.#byUnit.get(unit);
    if (list === undefined) this.#byUnit.set(unit, (list = []));
    list.push(m);
    this.#order.push({ unit, m });
    this.#bytes += m.data.length;
    const oldest = m.time - this.#o.windowMs;
    while (this.#head < this.#order.length && (this.#order[this.#head]!.m.time < oldest || this.#bytes > this.#o.maxBytes)) {
      const gone = this.#order[this.#head++]!;
      this.#bytes -= gone.m.data.length;
      this.#byUnit.get(gone.unit)!.shift();
      this.#completeFrom = Math.max(this.#completeFrom, gone.m.time + 1);
    }
    if (this.#head > 1024 && this.#head * 2 > this.#order.length) {
      this.#order = this.#order.slice(this.#head);
      this.#head = 0;
    }
  }

  /**
   * A unit's kept messages stamped at or after `from` with a sequence up to `upTo`, in stream order; null when the
   * ring does not reach back to `from` (read the stream instead).
   */
  since(unit: string, from: number, upTo: number): readonly KeptMessage[] | null {
    if (from < this.#completeFrom) return null;
    return (this.#byUnit.get(unit) ?? []).filter((m) => m.time >= from && m.seq <= upTo);
  }
}
