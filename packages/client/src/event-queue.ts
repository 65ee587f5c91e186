/**
 * One consumer's queue behind `for await (const ev of stream)`: what arrived and has not been taken yet, in order.
 * The stream bounds it (it pauses the connection when a queue is too long); the queue only counts.
 */
interface Waiter<T> {
  readonly resolve: (r: IteratorResult<T, undefined>) => void;
  readonly reject: (e: unknown) => void;
}

export class EventQueue<T> {
  #items: T[] = [];
  #head = 0;
  /** Calls of next() waiting for an item, oldest first (a consumer may call next() again before one settles). */
  readonly #waiting: Waiter<T>[] = [];
  #ended = false;
  #error: unknown = undefined;

  /** Items waiting to be taken. */
  get size(): number {
    return this.#items.length - this.#head;
  }

  get ended(): boolean {
    return this.#ended;
  }

  push(item: T): void {
    if (this.#ended) return;
    const w = this.#waiting.shift();
    if (w !== undefined) {
      w.resolve({ done: false, value: item });
      return;
    }
    this.#items.push(item);
  }

  /** No more items: the consumer takes what is queued, then is done (or gets `error`, if given). Idempotent. */
  end(error?: unknown): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#error = error;
    // Waiting calls exist only when nothing is queued.
    for (const w of this.#waiting.splice(0)) this.#settleEnd(w);
  }

  /** Drops whatever is queued (the consumer left). */
  clear(): void {
    this.#items = [];
    this.#head = 0;
  }

  next(): Promise<IteratorResult<T, undefined>> {
    if (this.size > 0) {
      const value = this.#items[this.#head]!;
      this.#items[this.#head] = undefined as T;
      this.#head++;
      if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
        this.#items = this.#items.slice(this.#head);
        this.#head = 0;
      }
      return Promise.resolve({ done: false, value });
    }
    if (this.#ended) {
      return new Promise((resolve, reject) => this.#settleEnd({ resolve, reject }));
    }
    return new Promise((resolve, reject) => void this.#waiting.push({ resolve, reject }));
  }

  #settleEnd(w: Waiter<T>): void {
    if (this.#error !== undefined) {
      const e = this.#error;
      this.#error = undefined; // thrown once; later calls are plain ends
      w.reject(e);
    } else {
      w.resolve({ done: true, value: undefined });
    }
  }
}
