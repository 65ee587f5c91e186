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

/**
 * Every `for await` consumer's queue: an event goes to each, a consumer that leaves drops its own. `onTake` runs after
 * each `next()` and each leave, so the owner can resume once the queues have been worked down.
 */
export class Consumers<T> {
  readonly #queues = new Set<EventQueue<T>>();
  readonly #onTake: () => void;

  constructor(onTake: () => void) {
    this.#onTake = onTake;
  }

  /** A new consumer; one that comes after `end` gets its end (and `error`) at once. */
  iterator(ended: boolean, error?: unknown): AsyncIterator<T, undefined> {
    const queue = new EventQueue<T>();
    if (ended) queue.end(error);
    else this.#queues.add(queue);
    return {
      next: () => {
        const r = queue.next();
        this.#onTake();
        return r;
      },
      return: () => {
        this.#queues.delete(queue);
        queue.clear();
        queue.end();
        this.#onTake();
        return Promise.resolve({ done: true, value: undefined });
      },
    };
  }

  /** Gives `item` to every consumer; returns the longest queue's length after it. */
  push(item: T): number {
    let most = 0;
    for (const q of this.#queues) {
      q.push(item);
      if (q.size > most) most = q.size;
    }
    return most;
  }

  /** Whether no queue holds more than `n`. */
  atMost(n: number): boolean {
    for (const q of this.#queues) if (q.size > n) return false;
    return true;
  }

  /** Every consumer ends after what it has queued (then gets `error`, if given). */
  end(error?: unknown): void {
    for (const q of this.#queues) q.end(error);
    this.#queues.clear();
  }
}
