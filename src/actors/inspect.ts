/**
 * Looking inside the band machines: the machine definition (XState's own JSON and a Mermaid rendering generated from
 * it), and one live actor's view (published state, committed band, candidate, deadline, gate, last sample and its
 * recent events). Pure functions over the machine and the engine state; the host keeps the event ring.
 */
import {
  decimalToWire,
  deadlineOf,
  sampleToWire,
  timestampToWire,
  type AssetState,
  type Band,
  type Decimal,
  type EpochMs,
  type GateName,
  type PegState,
  type SampleWire,
  type SkipReason,
} from "../methodology/index.ts";
import { bandMachine } from "./band-machine.ts";

/** Events recorded per actor by default (the inspection route shows the last 50). */
export const EVENT_HISTORY = 50;

/** One event an actor processed, as recorded by the host (compact: decimals converted on inspection only). */
export interface RecordedEvent {
  readonly type: "SAMPLE" | "DWELL_DUE" | "RESUME";
  readonly at: EpochMs;
  readonly result: "accepted" | "skipped";
  readonly skipReason: SkipReason | null;
  readonly state: PegState | null;
  readonly band: Band;
  readonly candidate: Band | null;
  readonly discount: Decimal | null;
  readonly transition: boolean;
}

/** A fixed-capacity ring of the most recent events (oldest overwritten). */
export class EventRing {
  readonly #items: (RecordedEvent | undefined)[];
  #next = 0;
  #size = 0;

  constructor(readonly capacity: number = EVENT_HISTORY) {
    this.#items = new Array<RecordedEvent | undefined>(capacity);
  }

  push(e: RecordedEvent): void {
    if (this.capacity === 0) return;
    this.#items[this.#next] = e;
    this.#next = (this.#next + 1) % this.capacity;
    if (this.#size < this.capacity) this.#size++;
  }

  /** Oldest first. */
  toArray(): RecordedEvent[] {
    const out: RecordedEvent[] = [];
    const start = (this.#next - this.#size + this.capacity) % Math.max(1, this.capacity);
    for (let i = 0; i < this.#size; i++) out.push(this.#items[(start + i) % this.capacity]!);
    return out;
  }
}

/** An event as the inspection shows it. */
export interface MachineEventView {
  readonly type: RecordedEvent["type"];
  readonly at: string;
  readonly result: RecordedEvent["result"];
  readonly skip_reason?: SkipReason;
  readonly state: PegState | null;
  readonly band: Band;
  readonly candidate: Band | null;
  readonly discount: string | null;
  readonly transition: boolean;
}

/** One live actor (GET /v1/assets/{symbol}/machine, NATS `peg.machine.<mint>`). */
export interface MachineView {
  readonly asset: string;
  readonly mint: string;
  /** The machine's state value: `cold` before the first accepted sample, else the published state. */
  readonly state: string;
  readonly published_state: PegState | null;
  readonly committed_band: Band;
  readonly committed_since: string | null;
  readonly candidate: Band | null;
  readonly candidate_since: string | null;
  /** When the current published state began. */
  readonly since: string | null;
  /** When the pending dwell commits, if a candidate is dwelling. */
  readonly deadline: string | null;
  readonly gate: GateName | null;
  /** d_smooth after the last accepted sample. */
  readonly discount: string | null;
  readonly evaluated_at: string | null;
  readonly last_sample: SampleWire | null;
  /** Oldest first, at most EVENT_HISTORY. */
  readonly events: readonly MachineEventView[];
}

const wireOrNull = (t: EpochMs | null): string | null => (t === null ? null : timestampToWire(t));

export function machineView(asset: { symbol: string; mint: string }, machineState: string, engine: AssetState, events: readonly RecordedEvent[]): MachineView {
  return {
    asset: asset.symbol,
    mint: asset.mint,
    state: machineState,
    published_state: engine.published,
    committed_band: engine.committed,
    committed_since: wireOrNull(engine.committedSince),
    candidate: engine.candidate,
    candidate_since: wireOrNull(engine.candidateSince),
    since: wireOrNull(engine.publishedSince),
    deadline: wireOrNull(deadlineOf(engine)),
    gate: engine.gate,
    discount: engine.ewma === null ? null : decimalToWire(engine.ewma),
    evaluated_at: wireOrNull(engine.evaluatedAt),
    last_sample: engine.last === null ? null : sampleToWire(engine.last),
    events: events.map((e) => ({
      type: e.type,
      at: timestampToWire(e.at),
      result: e.result,
      ...(e.skipReason === null ? {} : { skip_reason: e.skipReason }),
      state: e.state,
      band: e.band,
      candidate: e.candidate,
      discount: e.discount === null ? null : decimalToWire(e.discount),
      transition: e.transition,
    })),
  };
}

interface TransitionJSON {
  readonly target?: readonly string[];
  readonly guard?: { readonly type: string; readonly params?: Readonly<Record<string, unknown>> } | null;
  readonly eventType?: string;
}

interface StateNodeJSON {
  readonly key: string;
  readonly on?: Readonly<Record<string, readonly TransitionJSON[]>>;
  readonly states?: Readonly<Record<string, StateNodeJSON>>;
  readonly initial?: { readonly target?: readonly string[] } | null;
  readonly always?: readonly TransitionJSON[];
  readonly after?: unknown;
}

/** The band machine's definition exactly as XState serialises it (`machine.toJSON()`). */
export function bandMachineDefinition(): Record<string, unknown> {
  return JSON.parse(JSON.stringify(bandMachine.toJSON())) as Record<string, unknown>;
}

const targetName = (t: string): string => t.replace(/^#[^.]+\./, "");

function guardText(g: TransitionJSON["guard"]): string {
  if (g === null || g === undefined) return "";
  const params = g.params === undefined ? "" : ` ${Object.values(g.params).map(String).join(",")}`;
  return ` [${g.type}${params}]`;
}

/**
 * A Mermaid `stateDiagram-v2` generated from the definition: the initial state, every targeted transition with its
 * event and guard, and a note with the events the root handles for every state (targetless: they evaluate and stay).
 */
export function mermaidOf(definition: Record<string, unknown>): string {
  const root = definition as unknown as StateNodeJSON;
  const lines = ["stateDiagram-v2"];
  const initial = root.initial?.target?.[0];
  if (initial !== undefined) lines.push(`  [*] --> ${targetName(initial)}`);
  for (const [name, node] of Object.entries(root.states ?? {})) {
    for (const [event, transitions] of Object.entries(node.on ?? {})) {
      for (const t of transitions) {
        for (const target of t.target ?? []) lines.push(`  ${name} --> ${targetName(target)}: ${event}${guardText(t.guard)}`);
      }
    }
  }
  const rootEvents = Object.keys(root.on ?? {});
  if (rootEvents.length > 0) {
    const states = Object.keys(root.states ?? {});
    const anchor = states[states.length - 1];
    if (anchor !== undefined) {
      lines.push(`  note right of ${anchor}`);
      lines.push(`    every state: ${rootEvents.join(", ")} evaluate the methodology and stay;`);
      lines.push("    a dwelling candidate arms the dwell timer (DWELL_DUE at its deadline);");
      lines.push("    a decision that moves the published state raises PUBLISHED");
      lines.push("  end note");
    }
  }
  return lines.join("\n") + "\n";
}
