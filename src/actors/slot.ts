import type { Actor } from "xstate";
import type { AssetState, EpochMs, MethodologyAsset, SkipReason } from "../methodology/index.ts";
import type { bandMachine, BandEmitted } from "./band-machine.ts";
import type { EventRing } from "./inspect.ts";

type BandSnapshot = ReturnType<Actor<typeof bandMachine>["getSnapshot"]>;

/**
 * One asset's actor and what the host keeps about it. The slot is itself the observer of its actor's snapshots (no
 * per-actor closure): it takes each outbox's items, in order, and hands them to the host's `deliver`.
 */
export class Slot<A> {
  lastSkip: SkipReason | null = null;
  /** Stopped by `release` (another engine runs the asset) until `restoreAsset`/`activateAsset`. */
  released = false;

  constructor(
    readonly asset: A,
    /** `asset.methodology`, its thresholds object shared with every asset whose thresholds are equal. */
    readonly methodology: MethodologyAsset,
    public actor: Actor<typeof bandMachine>,
    /** The most recent events, for inspection. */
    readonly events: EventRing,
    readonly deliver: (slot: Slot<A>, e: BandEmitted) => void,
  ) {}

  next(snapshot: BandSnapshot): void {
    const outbox = snapshot.context.outbox;
    if (outbox.length === 0) return;
    // Taking the items out (rather than remembering the array) delivers each exactly once however many snapshots
    // carry this outbox, and lets the last decision, its inputs and its receipt go once delivered.
    for (const e of outbox.splice(0)) this.deliver(this, e);
  }
}

/** Records the resume in the slot's events and sends it: an overdue deadline evaluated, the next one armed. */
export function resume<A>(slot: Slot<A>, state: AssetState, now: EpochMs): void {
  slot.events.push({
    type: "RESUME",
    at: now,
    result: "accepted",
    skipReason: null,
    state: state.published,
    band: state.committed,
    candidate: state.candidate,
    discount: state.ewma,
    transition: false,
  });
  slot.actor.send({ type: "RESUME", now });
}
