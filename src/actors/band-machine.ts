import { assign, enqueueActions, setup } from "xstate";
import {
  buildReceipt,
  deadlineOf,
  INITIAL_STATE,
  PEG_STATES,
  step,
  type AssetState,
  type Decision,
  type EpochMs,
  type MethodologyAsset,
  type PegState,
  type Receipt,
  type Sample,
  type SkipReason,
  type StepOptions,
  type StepResult,
} from "../methodology/index.ts";

/** What a band machine is started with. */
export interface BandInput {
  readonly asset: MethodologyAsset;
  /** The catalog entry exactly as shipped: hashed into every receipt. */
  readonly catalogEntry: unknown;
  readonly gitSha: string;
  readonly options: StepOptions;
  /** Restored engine state (from a snapshot); absent for a cold start. */
  readonly engine?: AssetState;
}

export interface BandContext {
  readonly asset: MethodologyAsset;
  readonly catalogEntry: unknown;
  readonly gitSha: string;
  readonly options: StepOptions;
  /** The methodology state: committed band, candidate, since, EWMA, last sample, published state. */
  readonly engine: AssetState;
  /** The instant the armed dwell timer is due, or null when none is armed. */
  readonly armedDeadline: EpochMs | null;
  /**
   * What the last evaluation emitted, in decision order: the actor's one ordered queue of side effects. Each evaluation
   * puts a new array here; the host takes its items out (leaving it empty) as it delivers them from the actor's
   * snapshot stream, so a delivered decision is not kept alive until the next event.
   */
  readonly outbox: BandEmitted[];
  /** Set by an evaluation when the published state moved (or on resume): the state to route the machine to. */
  readonly route: PegState | null;
  /** Set by an evaluation when the dwell timer must be re-armed. */
  readonly rearm: boolean;
}

/** Events a band machine accepts. Every event carries the host clock's `now` (epoch ms). */
export type BandEvent =
  | { readonly type: "SAMPLE"; readonly sample: Sample; readonly now: EpochMs }
  /** Raised by the machine's own dwell timer at the deadline. */
  | { readonly type: "DWELL_DUE"; readonly now: EpochMs }
  /** Sent by the host after restoring a snapshot: evaluates an overdue deadline at its own instant, re-arms the timer. */
  | { readonly type: "RESUME"; readonly now: EpochMs }
  /** Raised by the machine when a decision changes the published state: moves to that state. */
  | { readonly type: "PUBLISHED"; readonly state: PegState };

/** What a band machine queues in its outbox, in decision order. */
export type BandEmitted =
  | { readonly type: "decision"; readonly decision: Decision; readonly engine: AssetState }
  | { readonly type: "transition"; readonly receipt: Receipt }
  | { readonly type: "skipped"; readonly reason: SkipReason; readonly now: EpochMs };

const DWELL_TIMER_ID = "dwell";

/** From one published state (or cold) to every other: the guard names the state the decision published. */
function targets(from: PegState | null) {
  return {
    PUBLISHED: PEG_STATES.filter((s) => s !== from).map((s) => ({
      guard: { type: "publishes" as const, params: { state: s } },
      target: `#band.${s}`,
    })),
  };
}

/**
 * The band machine (methodology sections 2-6): one actor per asset whose states are the published states. The
 * committed band, candidate, since, EWMA and gate live in context; every decision is made by the methodology's pure
 * `step`, so the machine holds no arithmetic of its own. The dwell timer is a named delay computed from the
 * candidate's `since`, re-armed whenever the deadline moves and after a restore, so a pending commit is never lost.
 */
export const bandMachine = setup({
  types: {
    context: {} as BandContext,
    events: {} as BandEvent,
    input: {} as BandInput,
  },
  guards: {
    /** The methodology's latest decision publishes this state. */
    publishes: ({ event }, params: { state: PegState }) => event.type === "PUBLISHED" && event.state === params.state,
    /** The last evaluation moved the published state or the dwell deadline. */
    mustFollow: ({ context }) => context.route !== null || context.rearm,
  },
  delays: {
    /** Until the tracked candidate matures: since + 30 s (escalating) or + 120 s (relaxing), from the event's now. */
    dwell: ({ context, event }) => {
      const deadline = deadlineOf(context.engine);
      return deadline === null || !("now" in event) ? 0 : Math.max(0, deadline - event.now);
    },
  },
  actions: {
    /** Runs the methodology on a sample (after any overdue deadline) and queues its decisions and receipts. */
    evaluateSample: assign(({ context, event }) => {
      if (event.type !== "SAMPLE") return {};
      const result = step(context.asset, context.engine, { kind: "sample", sample: event.sample, now: event.now }, context.options);
      return settle(context, result, false);
    }),
    /** Evaluates a due dwell deadline (the timer fired, or a restore found it overdue) and queues the outcome. */
    evaluateDeadline: assign(({ context, event }) => {
      if (event.type !== "DWELL_DUE" && event.type !== "RESUME") return {};
      const result = step(context.asset, context.engine, { kind: "dwell_timer", now: event.now }, context.options);
      return settle(context, result, event.type === "RESUME");
    }),
    /** Routes to the published state and re-arms the dwell timer, then clears the request. */
    follow: enqueueActions(({ context, enqueue }) => {
      if (context.route !== null) enqueue.raise({ type: "PUBLISHED", state: context.route });
      if (context.rearm) {
        const deadline = deadlineOf(context.engine);
        enqueue.cancel(DWELL_TIMER_ID);
        if (deadline !== null) enqueue.raise({ type: "DWELL_DUE", now: deadline }, { id: DWELL_TIMER_ID, delay: "dwell" });
      }
      enqueue.assign({ route: null, rearm: false });
    }),
  },
}).createMachine({
  id: "band",
  context: ({ input }) => ({
    asset: input.asset,
    catalogEntry: input.catalogEntry,
    gitSha: input.gitSha,
    options: input.options,
    engine: input.engine ?? INITIAL_STATE,
    armedDeadline: null,
    outbox: [],
    route: null,
    rearm: false,
  }),
  initial: "cold",
  // Most samples change neither the published state nor the deadline: `follow` runs only when one moved.
  always: { guard: "mustFollow", actions: "follow" },
  on: {
    SAMPLE: { actions: "evaluateSample" },
    DWELL_DUE: { actions: "evaluateDeadline" },
    RESUME: { actions: "evaluateDeadline" },
  },
  states: {
    /** No accepted sample yet: the committed band is PEGGED and nothing is published. */
    cold: { on: targets(null) },
    PEGGED: { on: targets("PEGGED") },
    DRIFT: { on: targets("DRIFT") },
    DEPEG: { on: targets("DEPEG") },
    CRITICAL: { on: targets("CRITICAL") },
    BLACK_SWAN: { on: targets("BLACK_SWAN") },
    UNKNOWN: { on: targets("UNKNOWN") },
  },
});

/** The context update of one evaluation: new engine state, its queued outcomes, and what `follow` must do. */
function settle(context: BandContext, result: StepResult, resume: boolean): Partial<BandContext> {
  const emitted: BandEmitted[] = [];
  for (const outcome of result.outcomes) {
    if (outcome.kind === "skipped") {
      emitted.push({ type: "skipped", reason: outcome.reason, now: outcome.now });
      continue;
    }
    emitted.push({ type: "decision", decision: outcome.decision, engine: outcome.state });
    if (outcome.decision.transition) {
      const receipt = buildReceipt(
        { asset: context.asset, catalogEntry: context.catalogEntry, gitSha: context.gitSha },
        outcome.decision,
      );
      emitted.push({ type: "transition", receipt });
    }
  }
  const deadline = deadlineOf(result.state);
  const published = result.state.published;
  const moved = published !== null && (resume || published !== context.engine.published);
  const rearm = resume || deadline !== context.armedDeadline;
  return {
    engine: result.state,
    outbox: emitted,
    route: moved ? published : null,
    rearm,
    armedDeadline: deadline,
  };
}
