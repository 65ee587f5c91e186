/** Runs at most `n` of the tasks given to `run` at once, the others in the order they came. */
export function limiter(n: number): { run<T>(task: () => Promise<T>): Promise<T> } {
  let active = 0;
  const waiting: (() => void)[] = [];
  return {
    async run<T>(task: () => Promise<T>): Promise<T> {
      // A finished task hands its slot to the next waiting one, so no newcomer slips in between.
      if (active >= n) await new Promise<void>((r) => waiting.push(r));
      else active++;
      try {
        return await task();
      } finally {
        const next = waiting.shift();
        if (next === undefined) active--;
        else next();
      }
    },
  };
}

/**
 * Turns of the event loop, one after another: each `next()` resolves in a later turn than the previous one's (a
 * `setImmediate` after it), so synchronous steps that each wait for their turn let timers and I/O run between them.
 */
export function turns(): { next(): Promise<void> } {
  let last: Promise<void> = Promise.resolve();
  return {
    next(): Promise<void> {
      last = last.then(() => new Promise<void>((r) => setImmediate(r)));
      return last;
    },
  };
}
