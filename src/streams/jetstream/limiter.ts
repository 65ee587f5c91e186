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
