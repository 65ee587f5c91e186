/**
 * The lease keeper: an engine's lease renewals and heartbeat on a thread of their own (`worker_threads`, with its own
 * NATS connection; `lease-keeper-worker.ts` is the other side). On the engine's thread they lapsed whenever its event
 * loop stalled past the fence (then 1.5 s): a survivor restoring a dead engine's partitions stalled 0.7-1.4 s on this
 * machine, past the fence under load, and then lost its own partitions too, which moved again (a 16 s take-over in
 * bench:cluster; in CI, a 107 s one, with gap samples evaluated twice). A stall is not a death: the engine decides
 * again as soon as its loop runs, with its samples waiting in their consumer.
 *
 * Fencing is unchanged. The thread renews only while the engine's event loop has run within `maxStallMs` (a beat the
 * engine writes in shared memory every tick), so an engine wedged for good loses its leases. Each successful
 * renewal's send instant is written to shared memory too, where the engine reads it (`sentAt`): it decides for a lease
 * only until that instant plus the fencing period, on its own clock, whether or not it has processed a message since.
 * A lease taken by another engine is told by message (`taken`), with the term of the hold it ends. The keeper holds
 * the partitions' leases (`LeaseManager`) and the intake's (`IntakeLeader`), by key.
 */
import { Worker } from "node:worker_threads";
import { systemClock, type Clock } from "../../clock.ts";
import type { LogFn } from "./engine-link.ts";
import type { HeldLease } from "./lease-renewal.ts";

/** How the lease manager sets the keeper up (`start`). */
export interface KeeperSetup {
  readonly self: string;
  /** Every lease key it may be told to hold (with `alsoKeys`, the slots of the shared memory, by index). */
  readonly keys: readonly string[];
  readonly ttlMs: number;
  readonly everyMs: number;
  readonly tickMs: number;
  readonly fenceAfterMs: number;
  readonly log: LogFn;
}

/** What a `LeaseManager` needs of a keeper: the keeper renews what it is told to hold, until told otherwise. */
export interface LeaseKeeper {
  /** Starts renewing (and sending the heartbeat) once connected; resolves then. */
  start(setup: KeeperSetup): Promise<void>;
  /** Renews `key` from now on, from `held` (its revision and send instant); `taken` runs if another engine writes it. */
  hold(key: string, held: HeldLease, taken: () => void): void;
  /** The send instant of the key's last successful write known to the keeper (0 when none). */
  sentAt(key: string): number;
  /** Stops renewing `key` and resolves, once no renewal of it is in flight, with its lease as last written (null: not held any more). */
  letGo(key: string): Promise<HeldLease | null>;
  /** Stops renewing `key` at once (fenced or taken). */
  drop(key: string): void;
  /** Stops: the heartbeat is deleted (a graceful stop) and the thread ends. */
  stop(): Promise<void>;
  /** Ends the thread without touching the store (a crash, in tests). */
  abandon(): void;
}

export interface KeeperThreadOptions {
  /** The NATS servers the thread connects to (the engine's). */
  readonly servers: readonly string[];
  /** Keys held besides the lease manager's (`KeeperSetup.keys`): the intake's. */
  readonly alsoKeys?: readonly string[];
  /** The keeper renews only while the engine's event loop ran within this long. Default `LEASE_MAX_STALL_MS`. */
  readonly maxStallMs?: number;
  /** The wall clock of the engine's beat (the thread reads the system clock: a simulated one cannot cross threads). */
  readonly clock?: Clock;
}

/**
 * How long an engine's event loop may stall and keep its leases: longer than the stalls of a take-over under load
 * (0.7-2.6 s measured), short enough that a wedged engine's partitions move within seconds.
 */
export const LEASE_MAX_STALL_MS = 5_000;
/** How long `stop()` waits for the thread to delete the heartbeat, before terminating it. */
const STOP_TIMEOUT_MS = 5_000;

export type ToKeeper =
  | { readonly type: "start"; readonly data: KeeperData }
  | { readonly type: "hold"; readonly key: string; readonly revision: number; readonly sentAt: number; readonly term: number }
  | { readonly type: "let-go"; readonly key: string; readonly id: number }
  | { readonly type: "drop"; readonly key: string }
  | { readonly type: "stop" };

export type FromKeeper =
  | { readonly type: "started" }
  | { readonly type: "failed"; readonly error: string }
  | { readonly type: "taken"; readonly key: string; readonly term: number }
  | { readonly type: "let-go"; readonly id: number; readonly lease: HeldLease | null }
  | { readonly type: "log"; readonly level: "debug" | "info" | "warn" | "error"; readonly msg: string; readonly fields?: Record<string, unknown> }
  | { readonly type: "stopped" };

/** What the thread is started with. */
export interface KeeperData extends Omit<KeeperSetup, "log"> {
  readonly servers: readonly string[];
  readonly maxStallMs: number;
  /** Slot 0: the engine loop's last beat; slot i + 1: key i's last renewal sent (epoch ms). */
  readonly shared: SharedArrayBuffer;
}

/** A lease keeper on its own thread (see the top of this file). */
export class LeaseKeeperThread implements LeaseKeeper {
  readonly #o: KeeperThreadOptions;
  #worker: Worker | null = null;
  #slots: BigInt64Array | null = null;
  #index = new Map<string, number>();
  #beat: ReturnType<typeof setInterval> | null = null;
  #letGoes = new Map<number, (lease: HeldLease | null) => void>();
  /** Per key, the hold a `taken` message may end: its term, and what to run. */
  #holds = new Map<string, { readonly term: number; readonly taken: () => void }>();
  #terms = 0;
  #nextId = 0;
  #stopping: Promise<void> | null = null;

  constructor(options: KeeperThreadOptions) {
    this.#o = options;
  }

  async start(setup: KeeperSetup): Promise<void> {
    const keys = [...setup.keys, ...(this.#o.alsoKeys ?? [])];
    const shared = new SharedArrayBuffer(8 * (keys.length + 1));
    const slots = new BigInt64Array(shared);
    this.#slots = slots;
    this.#index = new Map(keys.map((k, i) => [k, i + 1]));
    const clock = this.#o.clock ?? systemClock;
    const beat = () => Atomics.store(slots, 0, BigInt(Math.floor(clock.now())));
    beat();
    // The engine loop's beat: the thread renews only while this runs. Written in the loop's check phase, after its
    // timers: when the loop wakes from a stall past the thread's limit, the fences due run before the thread can see
    // the loop alive again and renew, so a wedged engine always fences its leases.
    this.#beat = setInterval(() => setImmediate(beat), setup.tickMs);
    this.#beat.unref();
    const worker = new Worker(new URL("./lease-keeper-worker.mjs", import.meta.url));
    this.#worker = worker;
    const data: KeeperData = {
      self: setup.self,
      keys,
      ttlMs: setup.ttlMs,
      everyMs: setup.everyMs,
      tickMs: setup.tickMs,
      fenceAfterMs: setup.fenceAfterMs,
      servers: this.#o.servers,
      maxStallMs: this.#o.maxStallMs ?? LEASE_MAX_STALL_MS,
      shared,
    };
    worker.postMessage({ type: "start", data } satisfies ToKeeper);
    await new Promise<void>((resolve, reject) => {
      const fail = (why: string) => {
        this.abandon();
        reject(new Error(`the lease keeper's thread did not start: ${why}`));
      };
      worker.once("error", (e) => fail(e.message));
      worker.once("exit", (code) => fail(`it exited (code ${code})`));
      worker.on("message", (m: FromKeeper) => {
        if (m.type === "started") {
          worker.removeAllListeners("error").removeAllListeners("exit");
          // After the start, a thread that ends unasked would leave every lease to lapse, again and again: the engine
          // fails instead (its leases lapse once, and its supervisor starts it again).
          worker.on("error", (e) => setup.log("error", "the lease keeper's thread failed", { error: e.message }));
          worker.once("exit", (code) => {
            if (this.#worker !== worker || this.#stopping !== null) return;
            throw new Error(`the lease keeper's thread ended (code ${code}): this engine can no longer renew its leases`);
          });
          resolve();
        } else if (m.type === "failed") fail(m.error);
        else if (m.type === "taken") {
          const hold = this.#holds.get(m.key);
          if (hold?.term === m.term) {
            this.#holds.delete(m.key);
            hold.taken();
          }
        } else if (m.type === "let-go") {
          this.#letGoes.get(m.id)?.(m.lease);
          this.#letGoes.delete(m.id);
        } else if (m.type === "log") setup.log(m.level, m.msg, m.fields);
      });
    });
  }

  #post(m: ToKeeper): void {
    this.#worker?.postMessage(m);
  }

  hold(key: string, held: HeldLease, taken: () => void): void {
    if (this.#slots === null) throw new Error("the lease keeper is not started");
    const term = ++this.#terms;
    this.#holds.set(key, { term, taken });
    Atomics.store(this.#slots, this.#slot(key), BigInt(Math.floor(held.sentAt)));
    this.#post({ type: "hold", key, revision: held.revision, sentAt: held.sentAt, term });
  }

  sentAt(key: string): number {
    return this.#slots === null ? 0 : Number(Atomics.load(this.#slots, this.#slot(key)));
  }

  letGo(key: string): Promise<HeldLease | null> {
    this.#holds.delete(key);
    if (this.#worker === null || this.#stopping !== null) return Promise.resolve(null);
    const id = ++this.#nextId;
    const answered = new Promise<HeldLease | null>((resolve) => this.#letGoes.set(id, resolve));
    this.#post({ type: "let-go", key, id });
    return answered;
  }

  drop(key: string): void {
    this.#holds.delete(key);
    this.#post({ type: "drop", key });
  }

  #slot(key: string): number {
    const i = this.#index.get(key);
    if (i === undefined) throw new Error(`the lease keeper does not hold ${key}`);
    return i;
  }

  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      const worker = this.#worker;
      if (worker === null) return;
      const done = new Promise<void>((resolve) => worker.on("message", (m: FromKeeper) => m.type === "stopped" && resolve()));
      const exited = new Promise<void>((resolve) => worker.once("exit", () => resolve()));
      this.#post({ type: "stop" });
      const timeout = new Promise<void>((resolve) => setTimeout(resolve, STOP_TIMEOUT_MS).unref());
      await Promise.race([done, exited, timeout]);
      this.abandon();
    })();
    return this.#stopping;
  }

  abandon(): void {
    if (this.#beat !== null) clearInterval(this.#beat);
    this.#beat = null;
    for (const resolve of this.#letGoes.values()) resolve(null);
    this.#letGoes.clear();
    const worker = this.#worker;
    this.#worker = null;
    void worker?.terminate();
  }
}
