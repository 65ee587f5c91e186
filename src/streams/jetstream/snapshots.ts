import type { KV } from "@nats-io/kv";

/**
 * Writes actor snapshots to the `peg_actors` bucket, coalesced: each asset keeps only its latest state (latest
 * wins) and dirty entries are flushed every `everyMs`, and once more at shutdown. A failed put stays dirty and is
 * retried on the next flush, unless a newer state replaced it. States are kept as given (immutable values) and
 * encoded only when written: an asset sampled every 100 ms is serialised once per flush, not ten times.
 */
export class SnapshotWriter<T = string> {
  readonly #kv: KV;
  readonly #encode: (value: T) => string;
  readonly #dirty = new Map<string, T>();
  #timer: ReturnType<typeof setInterval> | null = null;
  #flushing: Promise<void> | null = null;
  #written = 0;
  #failures = 0;

  constructor(kv: KV, encode: (value: T) => string = String) {
    this.#kv = kv;
    this.#encode = encode;
  }

  get stats(): { written: number; failures: number; dirty: number } {
    return { written: this.#written, failures: this.#failures, dirty: this.#dirty.size };
  }

  /** Records the latest state of an asset (by mint). It must not change afterwards: it is encoded at the flush. */
  update(mint: string, value: T): void {
    this.#dirty.set(mint, value);
  }

  /** Forgets an asset's unwritten state (its lease was lost: the new owner's snapshot must not be overwritten). */
  discard(mint: string): void {
    this.#dirty.delete(mint);
  }

  start(everyMs = 1_000): void {
    if (this.#timer !== null) return;
    this.#timer = setInterval(() => void this.flush().catch(() => {}), everyMs);
    this.#timer.unref?.();
  }

  /** Writes every dirty entry now. Concurrent calls share one flush. */
  flush(): Promise<void> {
    if (this.#flushing !== null) return this.#flushing.then(() => this.flush());
    const batch = [...this.#dirty];
    if (batch.length === 0) return Promise.resolve();
    this.#dirty.clear();
    this.#flushing = (async () => {
      const results = await Promise.allSettled(batch.map(([mint, value]) => this.#kv.put(mint, this.#encode(value))));
      results.forEach((r, i) => {
        const [mint, value] = batch[i]!;
        if (r.status === "fulfilled") this.#written++;
        else {
          this.#failures++;
          if (!this.#dirty.has(mint)) this.#dirty.set(mint, value);
        }
      });
      if (results.some((r) => r.status === "rejected")) throw new Error("some actor snapshots could not be written");
    })().finally(() => {
      this.#flushing = null;
    });
    return this.#flushing;
  }

  /** Stops the timer and flushes what is left. */
  async close(): Promise<void> {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    await this.flush();
  }
}
