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
 * Synchronous steps run in later turns of the event loop, in the order given, as many per turn as fit in `budgetMs`
 * (at least one): timers and I/O run between turns. `run(step)` resolves with the step's result once it ran.
 */
export function budgetedSteps(budgetMs: number): { run<T>(step: () => T): Promise<T> } {
  const queue: (() => void)[] = [];
  let scheduled = false;
  const turn = (): void => {
    const started = performance.now();
    do queue.shift()!();
    while (queue.length > 0 && performance.now() - started < budgetMs);
    scheduled = queue.length > 0;
    if (scheduled) setImmediate(turn);
  };
  return {
    run<T>(step: () => T): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        queue.push(() => {
          try {
            resolve(step());
          } catch (e) {
            reject(e);
          }
        });
        if (!scheduled) {
          scheduled = true;
          setImmediate(turn);
        }
      });
    },
  };
}
