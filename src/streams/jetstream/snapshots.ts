import type { KV } from "@nats-io/kv";

/**
 * Writes actor snapshots to the `peg_actors` bucket, coalesced: each asset keeps only its latest state (latest
 * wins) and dirty entries are flushed every `everyMs`, and once more at shutdown. A failed put stays dirty and is
 * retried on the next flush, unless a newer state replaced it. States are kept as given (immutable values) and
 * encoded only when written: an asset sampled every 100 ms is serialised once per flush, not ten times.
 *
 * A flush writes at most `maxPerFlush` assets (the longest-dirty first: an entry keeps its place in the map when a newer
 * state replaces it), `concurrency` puts at a time. With 10,000 assets sampled every second, writing all of them every
 * second would double the JetStream publishes and starve the samples' acks; instead each asset's snapshot is at most
 * `assets / maxPerFlush` flushes old (10 s at 10,000 assets with the defaults, 1 s up to 1,000 assets). A snapshot's
 * age only decides how much a restart re-evaluates; the acknowledged transitions are never behind.
 */
export interface SnapshotWriterOptions {
  /** Assets written per periodic flush. Default 1,000. */
  readonly maxPerFlush?: number;
  /** Puts in flight at once. Default 64. */
  readonly concurrency?: number;
  /** Writes one encoded snapshot (default `kv.put`); rejects when it was not stored. */
  readonly put?: (mint: string, encoded: string) => Promise<unknown>;
}

export class SnapshotWriter<T = string> {
  readonly #put: (mint: string, encoded: string) => Promise<unknown>;
  readonly #encode: (value: T) => string;
  readonly #dirty = new Map<string, T>();
  /** Per asset, its put in flight (settled either way). */
  readonly #inflight = new Map<string, Promise<void>>();
  #timer: ReturnType<typeof setInterval> | null = null;
  #flushing: Promise<void> | null = null;
  #written = 0;
  #failures = 0;

  readonly #maxPerFlush: number;
  readonly #concurrency: number;

  constructor(kv: KV, encode: (value: T) => string = String, limits: SnapshotWriterOptions = {}) {
    this.#put = limits.put ?? ((mint, encoded) => kv.put(mint, encoded));
    this.#encode = encode;
    this.#maxPerFlush = limits.maxPerFlush ?? 1_000;
    this.#concurrency = limits.concurrency ?? 64;
    if (!(Number.isInteger(this.#maxPerFlush) && this.#maxPerFlush > 0 && Number.isInteger(this.#concurrency) && this.#concurrency > 0)) {
      throw new RangeError("maxPerFlush and concurrency must be positive integers");
    }
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

  /**
   * Writes up to `maxPerFlush` dirty entries (all of them with `all`, as at shutdown or a hand-over). A call during a
   * flush waits for it, then flushes again: what that flush failed to write is dirty again and tried once more (a
   * shutdown right after a put lost with its connection used to fail on the periodic flush's error).
   */
  flush(all = false): Promise<void> {
    if (this.#flushing !== null) {
      return this.#flushing.then(
        () => this.flush(all),
        () => this.flush(all),
      );
    }
    const batch: [string, T][] = [];
    for (const entry of this.#dirty) {
      if (!all && batch.length >= this.#maxPerFlush) break;
      batch.push(entry);
    }
    if (batch.length === 0) return Promise.resolve();
    for (const [mint] of batch) this.#dirty.delete(mint);
    this.#flushing = (async () => {
      let failed = 0;
      let next = 0;
      const worker = async () => {
        while (next < batch.length) {
          const [mint, value] = batch[next++]!;
          try {
            await this.#write(mint, value);
          } catch {
            failed++;
            if (!this.#dirty.has(mint)) this.#dirty.set(mint, value);
          }
        }
      };
      await Promise.all(Array.from({ length: Math.min(this.#concurrency, batch.length) }, worker));
      if (failed > 0) throw new Error("some actor snapshots could not be written");
    })().finally(() => {
      this.#flushing = null;
    });
    return this.#flushing;
  }

  /** One put, known as the asset's write in flight until it settles. */
  async #write(mint: string, value: T): Promise<void> {
    const put = this.#put(mint, this.#encode(value));
    const settled = put.then(
      () => {},
      () => {},
    );
    this.#inflight.set(mint, settled);
    try {
      await put;
      this.#written++;
    } catch (e) {
      this.#failures++;
      throw e;
    } finally {
      if (this.#inflight.get(mint) === settled) this.#inflight.delete(mint);
    }
  }

  /**
   * Writes one asset's latest state now (a hand-over: the next owner reads it), after any write of it in flight (an
   * older state landing later would overwrite it). Only this asset's writes are waited for: waiting until no flush ran
   * never ended under sustained load (at 10,000 assets one flush follows another), and the hand-over hung.
   */
  async flushAsset(mint: string): Promise<void> {
    for (let w = this.#inflight.get(mint); w !== undefined; w = this.#inflight.get(mint)) await w;
    const value = this.#dirty.get(mint);
    if (value === undefined) return;
    this.#dirty.delete(mint);
    try {
      await this.#write(mint, value);
    } catch (e) {
      if (!this.#dirty.has(mint)) this.#dirty.set(mint, value);
      throw e;
    }
  }

  /** Stops the timer and flushes everything left. */
  async close(): Promise<void> {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    await this.flush(true);
  }
}
