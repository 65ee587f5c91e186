/**
 * Runs the sample projector on a thread of its own (`worker_threads`) when the store is PostgreSQL: projecting
 * samples (decoding them, building rows, Kysely and pg) was a seventh of the engine thread's time at 10,000 assets,
 * while half a core of the machine stayed idle (docs/benchmarks.md, "Where the pipeline's time goes"). The thread has
 * its own NATS connection and PostgreSQL pool and consumes the same durables (`SAMPLE_DURABLES`), so what it
 * projects, and the at-least-once guarantee, are those of the in-thread projector. PGlite lives in the engine's
 * thread: with it the projector stays there (`sampleProjector` in `service.ts`).
 *
 * The engine thread sees the projector's counts (`stats`, mirrored after every batch) and sends it the latest
 * circulating supplies (batched every `SUPPLY_FLUSH_MS`), which it stamps on the snapshots it writes.
 */
import { Worker } from "node:worker_threads";
import type { LogFn } from "../streams/jetstream/engine-link.ts";
import type { BatchConsumer } from "../streams/jetstream/index.ts";
import type { ProjectorStats } from "../streams/projector/projector.ts";

export interface ThreadData {
  readonly servers: readonly string[];
  readonly databaseUrl: string;
  /** HISTORY_RAW_DAYS / HISTORY_1M_DAYS: the thread refuses rows past raw retention as the service's store does. */
  readonly history: { readonly rawDays: number; readonly rollupDays: number };
}

export type ToThread =
  | { readonly type: "start"; readonly data: ThreadData }
  | { readonly type: "supplies"; readonly supplies: readonly (readonly [string, string | null])[] }
  | { readonly type: "stop" };

export type FromThread =
  | { readonly type: "started" }
  | { readonly type: "failed"; readonly error: string }
  | { readonly type: "stats"; readonly stats: ProjectorStats }
  | { readonly type: "stopped"; readonly stats: ProjectorStats }
  | { readonly type: "log"; readonly level: "warn" | "error"; readonly msg: string; readonly fields?: Record<string, unknown> };

/** How often changed supplies are sent to the thread. */
const SUPPLY_FLUSH_MS = 250;
/** How long `stop()` waits for the thread to finish its batch and close, before terminating it. */
const STOP_TIMEOUT_MS = 15_000;

export interface SampleProjectorThread extends BatchConsumer {
  /** Tells the thread a mint's latest circulating supply (wire decimal, or null when unknown). */
  supply(mint: string, wire: string | null): void;
}

/** A spawned thread, loading its modules, not started yet. */
export interface SpawnedProjectorThread {
  /**
   * Starts the projector and resolves once its consumer runs; rejects (the thread terminated) when it cannot connect
   * or create the consumer. `stats` is updated in place, like the in-thread projector's. Once only.
   */
  start(opts: { readonly data: ThreadData; readonly stats: ProjectorStats; readonly log: LogFn }): Promise<SampleProjectorThread>;
  /** Ends the thread at once (a start that failed before `start`, or its rollback). Idempotent. */
  terminate(): Promise<void>;
}

/** Spawns the thread: its modules (tsx, Kysely, pg, the NATS client) load while the caller opens what it needs. */
export function spawnSampleProjectorThread(): SpawnedProjectorThread {
  const worker = new Worker(new URL("./sample-projector-worker.mjs", import.meta.url));
  // Until `start`, an error only ends the thread; `start` reports it.
  let early: Error | null = null;
  const onEarly = (e: Error) => (early ??= e);
  worker.on("error", onEarly);
  return {
    start: (opts) => {
      worker.off("error", onEarly);
      if (early !== null) return Promise.reject(new Error(`the sample projector's thread did not start: ${early.message}`));
      worker.postMessage({ type: "start", data: opts.data } satisfies ToThread);
      return attach(worker, opts);
    },
    terminate: async () => {
      await worker.terminate();
    },
  };
}

/** Spawns and starts the thread (`spawnSampleProjectorThread` then `start`). */
export function startSampleProjectorThread(opts: { readonly data: ThreadData; readonly stats: ProjectorStats; readonly log: LogFn }): Promise<SampleProjectorThread> {
  return spawnSampleProjectorThread().start(opts);
}

async function attach(worker: Worker, opts: { readonly stats: ProjectorStats; readonly log: LogFn }): Promise<SampleProjectorThread> {
  const counts = { batches: 0, messages: 0, failures: 0 };
  const mirror = (s: ProjectorStats) => {
    counts.messages = s.projected + s.duplicates + s.rejected + (s.stale ?? 0);
    Object.assign(opts.stats, s);
  };
  let stopped: Promise<void> | null = null;
  let onStopped: (() => void) | null = null;
  worker.on("message", (m: FromThread) => {
    if (m.type === "stats") {
      counts.batches++;
      mirror(m.stats);
    } else if (m.type === "log") opts.log(m.level, m.msg, m.fields);
    else if (m.type === "stopped") {
      mirror(m.stats);
      onStopped?.();
    }
  });
  await new Promise<void>((resolve, reject) => {
    const fail = (why: string) => {
      void worker.terminate();
      reject(new Error(`the sample projector's thread did not start: ${why}`));
    };
    worker.once("error", (e) => fail(e.message));
    worker.once("exit", (code) => fail(`it exited (code ${code})`));
    worker.on("message", function started(m: FromThread) {
      if (m.type === "started") {
        worker.off("message", started);
        worker.removeAllListeners("error").removeAllListeners("exit");
        resolve();
      } else if (m.type === "failed") fail(m.error);
    });
  });
  worker.on("error", (e) => {
    counts.failures++;
    opts.log("error", "the sample projector's thread failed", { error: e.message });
  });

  const pending = new Map<string, string | null>();
  let flushTimer: NodeJS.Timeout | null = null;
  const flush = () => {
    flushTimer = null;
    if (pending.size === 0 || stopped !== null) return;
    worker.postMessage({ type: "supplies", supplies: [...pending] } satisfies ToThread);
    pending.clear();
  };

  return {
    get stats() {
      return counts;
    },
    supply(mint, wire) {
      pending.set(mint, wire);
      flushTimer ??= setTimeout(flush, SUPPLY_FLUSH_MS);
    },
    stop() {
      stopped ??= (async () => {
        if (flushTimer !== null) clearTimeout(flushTimer);
        const done = new Promise<void>((resolve) => (onStopped = resolve));
        const exited = new Promise<void>((resolve) => worker.once("exit", () => resolve()));
        worker.postMessage({ type: "stop" } satisfies ToThread);
        const timeout = new Promise<"timeout">((resolve) => setTimeout(() => resolve("timeout"), STOP_TIMEOUT_MS).unref());
        if ((await Promise.race([done, exited, timeout])) === "timeout") opts.log("warn", "the sample projector's thread did not stop in time; terminated");
        await worker.terminate();
      })();
      return stopped;
    },
  };
}
