import { Subject, type Observable } from "rxjs";
import { createActor, type Actor, type InspectionEvent, type Observer } from "xstate";
import type { Clock } from "../clock.ts";
import {
  METHODOLOGY_VERSION,
  deadlineOf,
  timestampToWire,
  type AssetState,
  type Band,
  type Confidence,
  type Decimal,
  type EpochMs,
  type GateName,
  type MethodologyAsset,
  type PegState,
  type Receipt,
  type Sample,
  type SkipReason,
  type StepOptions,
  type Trigger,
} from "../methodology/index.ts";
import { bandMachine, type BandEmitted } from "./band-machine.ts";
import { EVENT_HISTORY, EventRing, machineView, type MachineView } from "./inspect.ts";
import { assetStateFromJSON, assetStateToJSON, SnapshotFormatError, type AssetStateJSON } from "./persist.ts";
import { SharedThresholds } from "./shared-thresholds.ts";
import { resume, Slot } from "./slot.ts";

/** What the host needs of a catalog asset (a CatalogAsset satisfies it). */
export interface HostAsset {
  readonly symbol: string;
  readonly mint: string;
  /** The catalog entry exactly as shipped; hashed into receipts. */
  readonly entry: unknown;
  readonly methodology: MethodologyAsset;
}

/** Every published recompute of one asset (a sample or a dwell-timer evaluation). */
export interface StateEvent {
  readonly kind: "state";
  readonly asset: string;
  readonly mint: string;
  /** The evaluation instant. */
  readonly now: EpochMs;
  readonly trigger: Trigger;
  readonly state: PegState;
  readonly previous_state: PegState | null;
  readonly band: Band;
  readonly gate: GateName | null;
  readonly state_reason: "premium_sanity" | null;
  /** d_smooth. */
  readonly discount: Decimal;
  readonly discount_raw: Decimal;
  readonly confidence: Confidence;
  readonly sample: Sample;
  /** True when this recompute changed the published state (a transition event follows). */
  readonly transition: boolean;
  /** The asset's engine state after this event's step. */
  readonly engine: AssetState;
}

/** A published-state change with its receipt. Emitted right after the state event of the same decision. */
export interface TransitionEvent {
  readonly kind: "transition";
  readonly receipt: Receipt;
}

export type HostEvent = StateEvent | TransitionEvent;

export type IngestResult =
  | { readonly status: "accepted" }
  | { readonly status: "skipped"; readonly reason: SkipReason }
  | { readonly status: "unknown_asset" }
  /** The asset's actor is released (another engine runs it). */
  | { readonly status: "released" };

/** All actors' engine states, keyed by mint: what the host persists and restores. */
export interface HostSnapshot {
  readonly version: 1;
  readonly methodology_version: string;
  readonly taken_at: string;
  readonly assets: Readonly<Record<string, AssetStateJSON>>;
}

export interface ActorHostOptions {
  readonly assets: readonly HostAsset[];
  readonly clock: Clock;
  /** Hashed into every receipt ("" when unknown). */
  readonly gitSha: string;
  readonly step?: StepOptions;
  /** Events kept per actor for inspection (default 50; 0 keeps none). */
  readonly eventHistory?: number;
  /** XState inspection (e.g. @statelyai/inspect's WebSocket inspector): every actor reports to it. */
  readonly inspect?: Observer<InspectionEvent> | ((event: InspectionEvent) => void);
}

/**
 * One band-machine actor per asset, all on the injected clock. `ingest` routes a sample to its asset's actor; the
 * `events$` stream carries every published recompute and every transition with its receipt, in decision order per
 * asset (emission is synchronous inside `ingest` or the dwell timer). `snapshot()`/`restore()` move every actor's
 * state through JSON without losing a pending dwell: deadlines are data and are re-armed on restore.
 */
export class ActorHost {
  readonly #clock: Clock;
  readonly #gitSha: string;
  readonly #step: StepOptions;
  readonly #eventHistory: number;
  readonly #inspect: ActorHostOptions["inspect"];
  readonly #bySymbol = new Map<string, Slot<HostAsset>>();
  readonly #byMint = new Map<string, Slot<HostAsset>>();
  readonly #events = new Subject<HostEvent>();
  /** Shared by every slot (one function per host, not one closure per actor). */
  readonly #deliverTo = (slot: Slot<HostAsset>, e: BandEmitted): void => this.#deliver(slot, e);
  /** Asked before a dwell timer evaluates (`guardTimers`); null: every timer evaluates. */
  #mayDecide: ((mint: string) => boolean) | null = null;
  #stopped = false;

  /** Every published recompute and every transition, in order per asset. Hot; completes on `stop()`. */
  readonly events$: Observable<HostEvent> = this.#events.asObservable();

  constructor(options: ActorHostOptions) {
    this.#clock = options.clock;
    this.#gitSha = options.gitSha;
    this.#step = options.step ?? { intrinsicLivenessGate: false };
    this.#eventHistory = options.eventHistory ?? EVENT_HISTORY;
    this.#inspect = options.inspect;
    const thresholds = new SharedThresholds();
    for (const asset of options.assets) {
      if (this.#bySymbol.has(asset.symbol)) throw new Error(`duplicate asset symbol ${asset.symbol}`);
      if (this.#byMint.has(asset.mint)) throw new Error(`duplicate asset mint ${asset.mint}`);
      const methodology = thresholds.methodologyOf(asset.methodology);
      const actor = this.#spawn(asset, methodology, undefined);
      const slot = new Slot(asset, methodology, actor, new EventRing(this.#eventHistory), this.#deliverTo);
      this.#bySymbol.set(asset.symbol, slot);
      this.#byMint.set(asset.mint, slot);
      this.#wire(slot);
      slot.actor.start();
    }
  }

  get size(): number {
    return this.#bySymbol.size;
  }

  /**
   * Routes a sample to its asset's actor (by exact symbol) and evaluates it at `now`: the clock's now for live
   * feeds; a scenario feed passes the sample's own instant, so a served replay decides exactly as the offline one.
   */
  ingest(sample: Sample, now: EpochMs = this.#clock.now()): IngestResult {
    if (this.#stopped) throw new Error("the actor host is stopped");
    const slot = this.#bySymbol.get(sample.asset);
    if (slot === undefined) return { status: "unknown_asset" };
    if (slot.released) return { status: "released" };
    slot.lastSkip = null;
    slot.actor.send({ type: "SAMPLE", sample, now });
    return slot.lastSkip === null ? { status: "accepted" } : { status: "skipped", reason: slot.lastSkip };
  }

  /** The engine state of one asset, by symbol or mint. */
  engineState(key: string): AssetState | undefined {
    const slot = this.#bySymbol.get(key) ?? this.#byMint.get(key);
    return slot?.actor.getSnapshot().context.engine;
  }

  /** The published machine state value of one asset ("cold" before its first accepted sample). */
  machineState(key: string): string | undefined {
    const slot = this.#bySymbol.get(key) ?? this.#byMint.get(key);
    return slot === undefined ? undefined : String(slot.actor.getSnapshot().value);
  }

  /** The live view of one actor (by symbol or mint): state, band, candidate, deadline, last sample, recent events. */
  inspect(key: string): MachineView | undefined {
    const slot = this.#bySymbol.get(key) ?? this.#byMint.get(key);
    if (slot === undefined || slot.released) return undefined;
    const snapshot = slot.actor.getSnapshot();
    return machineView(slot.asset, String(snapshot.value), snapshot.context.engine, slot.events.toArray());
  }

  /** The dwell deadline an asset's actor has armed, or null. */
  deadline(key: string): EpochMs | null {
    const state = this.engineState(key);
    return state === undefined ? null : deadlineOf(state);
  }

  snapshot(): HostSnapshot {
    const assets: Record<string, AssetStateJSON> = {};
    for (const [mint, slot] of this.#byMint) assets[mint] = assetStateToJSON(slot.actor.getSnapshot().context.engine);
    return { version: 1, methodology_version: METHODOLOGY_VERSION, taken_at: timestampToWire(this.#clock.now()), assets };
  }

  /**
   * Replaces the state of every asset present in the snapshot (others keep theirs). Each actor is recreated from its
   * engine state and resumed at the clock's now: a deadline that passed while the process was down is evaluated at
   * its own instant (so the receipt freezes the deadline, not the restore time), then the next one is armed.
   * Unknown mints are ignored; a malformed entry throws before anything is replaced.
   */
  restore(snapshot: unknown): void {
    if (typeof snapshot !== "object" || snapshot === null) throw new SnapshotFormatError("snapshot", "must be an object");
    const s = snapshot as Record<string, unknown>;
    if (s["version"] !== 1) throw new SnapshotFormatError("version", "must be 1");
    if (s["methodology_version"] !== METHODOLOGY_VERSION) {
      throw new SnapshotFormatError("methodology_version", `must be ${METHODOLOGY_VERSION}`);
    }
    const assets = s["assets"];
    if (typeof assets !== "object" || assets === null) throw new SnapshotFormatError("assets", "must be an object");
    const parsed: [Slot<HostAsset>, AssetState][] = [];
    for (const [mint, value] of Object.entries(assets)) {
      const slot = this.#byMint.get(mint);
      if (slot === undefined) continue;
      try {
        parsed.push([slot, assetStateFromJSON(value)]);
      } catch (e) {
        if (e instanceof SnapshotFormatError) throw new SnapshotFormatError(`assets.${mint}.${e.field}`, e.message);
        throw e;
      }
    }
    for (const [slot, state] of parsed) this.restoreAsset(slot.asset.mint, state);
  }

  /**
   * Replaces one asset's engine state and resumes its actor (see `restore`) at `now` (default the clock's now); a
   * released asset runs again. A scale-out catch-up starts the actor with `activateAsset(key, state)` instead, feeds
   * it the samples it missed and resumes it once (`resumeAsset`).
   */
  restoreAsset(key: string, state: AssetState, now: EpochMs = this.#clock.now()): void {
    resume(this.#start(key, state), state, now);
  }

  /**
   * Resumes a running actor at `now` from its own state, as `restoreAsset(key, engineState(key), now)` does, without
   * recreating it: a deadline that passed is evaluated at its own instant, then the next one is armed. The last step
   * of a catch-up (partition-restore.ts), once per acquired asset: a failover's thousands of actors are created once.
   */
  resumeAsset(key: string, now: EpochMs = this.#clock.now()): void {
    const slot = this.#bySymbol.get(key) ?? this.#byMint.get(key);
    if (slot === undefined) throw new Error(`unknown asset ${key}`);
    if (slot.released) throw new Error(`asset ${key} is released: restore it instead`);
    resume(slot, slot.actor.getSnapshot().context.engine, now);
  }

  /**
   * Starts a released asset's actor at `state` (absent: cold), not yet resumed: no overdue deadline evaluated, no
   * timer armed. A catch-up feeds it the samples it missed (each evaluates an overdue deadline first, at its own
   * instant), then `resumeAsset` arms it: the decisions are those of `restoreAsset` at the state's instant, the same
   * samples and `resumeAsset`, without a first resume per asset (a failover acquires thousands).
   */
  activateAsset(key: string, state?: AssetState): void {
    this.#start(key, state);
  }

  #start(key: string, state: AssetState | undefined): Slot<HostAsset> {
    const slot = this.#bySymbol.get(key) ?? this.#byMint.get(key);
    if (slot === undefined) throw new Error(`unknown asset ${key}`);
    slot.actor.stop();
    slot.actor = this.#spawn(slot.asset, slot.methodology, state);
    slot.released = false;
    this.#wire(slot);
    slot.actor.start();
    return slot;
  }

  /**
   * Stops one asset's actor (its dwell timer is cancelled) until it is restored or activated: another engine runs
   * it (scale-out). Samples for it are answered `released`; it is absent from inspection.
   */
  release(key: string): void {
    const slot = this.#bySymbol.get(key) ?? this.#byMint.get(key);
    if (slot === undefined) throw new Error(`unknown asset ${key}`);
    slot.released = true;
    slot.actor.stop();
  }

  /** Whether the asset's actor runs here (not released). */
  runs(key: string): boolean {
    const slot = this.#bySymbol.get(key) ?? this.#byMint.get(key);
    return slot !== undefined && !slot.released;
  }

  /**
   * From now on, an actor's dwell timer asks `mayDecide(mint)` when it is due, before it evaluates: false and it does
   * nothing. A scale-out engine passes its lease's check (`fenceIfDue`): a timer that runs late, past the lease's
   * fencing deadline (a busy event loop), fences the asset instead of deciding for it, as a sample would. Applies to
   * actors started after the call (a partition's actors start when their lease is acquired).
   */
  guardTimers(mayDecide: (mint: string) => boolean): void {
    this.#mayDecide = mayDecide;
  }

  /** Stops every actor (cancelling their timers) and completes `events$`. Idempotent. */
  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    for (const slot of this.#bySymbol.values()) slot.actor.stop();
    this.#events.complete();
  }

  #spawn(asset: HostAsset, methodology: MethodologyAsset, engine: AssetState | undefined): Actor<typeof bandMachine> {
    const input = {
      asset: methodology,
      catalogEntry: asset.entry,
      gitSha: this.#gitSha,
      options: this.#step,
      ...(engine === undefined ? {} : { engine }),
    };
    const clock = this.#mayDecide === null ? this.#clock : new GuardedClock(this.#clock, asset.mint, this.#mayDecide);
    // Options only when set: XState treats a present-but-undefined option differently from an absent one.
    return createActor(bandMachine, this.#inspect === undefined ? { input, clock } : { input, clock, inspect: this.#inspect });
  }

  /** Delivers what the actor puts in its outbox, in order, synchronously (inside `ingest` or the timer callback). */
  #wire(slot: Slot<HostAsset>): void {
    slot.actor.subscribe(slot);
  }

  #deliver(slot: Slot<HostAsset>, e: BandEmitted): void {
    const { asset } = slot;
    {
      switch (e.type) {
        case "skipped": {
          slot.lastSkip = e.reason;
          const engine = slot.actor.getSnapshot().context.engine;
          slot.events.push({
            type: "SAMPLE",
            at: e.now,
            result: "skipped",
            skipReason: e.reason,
            state: engine.published,
            band: engine.committed,
            candidate: engine.candidate,
            discount: engine.ewma,
            transition: false,
          });
          return;
        }
        case "decision": {
          const { inputs, computed } = e.decision;
          slot.events.push({
            type: inputs.trigger === "dwell_timer" ? "DWELL_DUE" : "SAMPLE",
            at: inputs.now,
            result: "accepted",
            skipReason: null,
            state: computed.final_state,
            band: e.engine.committed,
            candidate: e.engine.candidate,
            discount: computed.discount_smooth,
            transition: e.decision.transition,
          });
          this.#events.next({
            kind: "state",
            asset: asset.symbol,
            mint: asset.mint,
            now: inputs.now,
            trigger: inputs.trigger,
            state: computed.final_state,
            previous_state: inputs.previous_state,
            band: computed.band,
            gate: computed.gate,
            state_reason: e.decision.state_reason,
            discount: computed.discount_smooth,
            discount_raw: computed.discount_raw,
            confidence: computed.confidence,
            sample: e.decision.sample,
            transition: e.decision.transition,
            engine: e.engine,
          });
          return;
        }
        case "transition":
          this.#events.next({ kind: "transition", receipt: e.receipt });
          return;
      }
    }
  }
}

/** One actor's clock under `guardTimers`: the host's, each timer asking whether its asset may still decide. */
class GuardedClock implements Clock {
  constructor(
    readonly clock: Clock,
    readonly mint: string,
    readonly mayDecide: (mint: string) => boolean,
  ) {}

  now(): number {
    return this.clock.now();
  }

  setTimeout(fn: () => void, ms: number): unknown {
    return this.clock.setTimeout(() => {
      if (this.mayDecide(this.mint)) fn();
    }, ms);
  }

  clearTimeout(id: unknown): void {
    this.clock.clearTimeout(id);
  }
}
