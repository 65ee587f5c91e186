import type { LogFn } from "../../streams/jetstream/index.ts";

/**
 * What a failed start undoes: each part pushes its own stop as it starts, and `rollback` runs them newest first,
 * each one even when an earlier one failed (a failing undo is ignored: the start's own error is the one reported).
 */
export class UndoStack {
  readonly #steps: (() => Promise<void>)[] = [];

  push(step: () => Promise<void> | void): void {
    this.#steps.push(async () => step());
  }

  async rollback(): Promise<void> {
    for (const u of this.#steps.reverse()) await u().catch(() => {});
  }
}

/** One named step of the shutdown sequence. */
export type ShutdownStep = readonly [name: string, run: () => Promise<void> | void];

/**
 * Runs the shutdown steps in order. Every step runs even when an earlier one failed; each failure is logged and the
 * first is thrown at the end.
 */
export async function runShutdown(log: LogFn, steps: readonly ShutdownStep[]): Promise<void> {
  let failure: unknown = null;
  for (const [name, run] of steps) {
    log("debug", "shutdown step", { step: name });
    try {
      await run();
    } catch (e) {
      log("error", `shutdown step failed: ${name}`, { error: e instanceof Error ? e.message : String(e) });
      failure ??= e;
    }
  }
  if (failure !== null) throw failure;
}

/**
 * Lets the HTTP listener answer the requests that came in during a long synchronous step of the start (creating or
 * restoring thousands of actors takes a second or more) before the next one.
 */
export const requestsAnswered = (): Promise<void> => new Promise<void>((resolve) => setImmediate(resolve));
