/**
 * Looking inside the band machines: the machine definition (XState's own JSON and a Mermaid rendering generated from
 * it), and one live actor's view (published state, committed band, candidate, deadline, gate, last sample and its
 * recent events). Pure functions over the machine and the engine state; the host keeps the event ring.
 */
import {
  BANDS,
  PEG_STATES,
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

// The ring stores each event in SLOT_WORDS 32-bit words of one typed array, allocated on the first push (a ring that
// never records holds no storage). Every field is exact; no decimal goes through a float, and `at` is copied bit for bit.
//   [0], [1]  `at`: the bits of its float64
//   [2]       meta: type (bits 0-1), result (2), skip reason + 1 (3-4), state + 1 (5-7), band (8-10),
//             candidate + 1 (11-13), transition (14), has discount (15), discount negative (16), kept aside (17),
//             discount exponent + EXP_BIAS (18-31)
//   [3..6]    the discount's significant digits, left-aligned in four 9-digit groups (36 digits; 34 is the methodology's
//             precision). A decimal.js value is {s, e, d}: sign, base-10 exponent of the leading digit, and base-1e7
//             words whose first holds ((e mod 7) + 1) digits, with no trailing zero word. So sign, exponent and digits
//             give back s, e and d exactly.
// An event that does not fit (a discount with more than 36 significant digits, an exponent beyond +-8191, a
// non-finite value, words not in decimal.js's canonical form, a decimal from another decimal.js context than the
// ring's first one, or a field outside the known values) is kept as is in a side map instead: never approximated.
const SLOT_WORDS = 7;
const GROUPS = 4;
const GROUP = 1e9;
const EXP_BIAS = 8192;
const EXP_MAX = 8191;
const TYPES = ["SAMPLE", "DWELL_DUE", "RESUME"] as const satisfies readonly RecordedEvent["type"][];
const RESULTS = ["accepted", "skipped"] as const satisfies readonly RecordedEvent["result"][];
const SKIP_REASONS = [null, "no_value", "implausible", "missing_cr"] as const satisfies readonly (SkipReason | null)[];
const STATES = [null, ...PEG_STATES] as const;
const CANDIDATES = [null, ...BANDS] as const;
const TRANSITION = 1 << 14;
const HAS_DISCOUNT = 1 << 15;
const NEGATIVE = 1 << 16;
const ASIDE = 1 << 17;
const POW10 = [1, 10, 100, 1000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000, 1_000_000_000];

type DecimalCtor = new (value: number) => Decimal;
interface MutableDecimal {
  s: number;
  e: number;
  d: number[];
}

// Scratch shared by every ring (JavaScript is single-threaded; nothing here survives a call).
const atF64 = new Float64Array(1);
const atU32 = new Uint32Array(atF64.buffer);

/** Digits in the leading base-1e7 word of a decimal.js value with exponent e. */
const leadDigits = (e: number): number => ((((e | 0) % 7) + 7) % 7) + 1; // |e| <= EXP_BIAS: int32 arithmetic

/**
 * Writes the digits of the canonical words `d` (exponent `e`) into words[o..o+3]: the digit stream (leading word, then
 * 7 digits per word) cut into 9-digit groups, the last padded with zeros. False when `d` is not canonical or has more
 * than 36 digits before its trailing zeros. Integers below 10^15 only: exact in float64, and so is
 * Math.floor(a / 10^k) (the quotient's rounding error is below the 10^-k it would need to cross an integer).
 */
function packDigits(d: readonly number[], e: number, words: Uint32Array, o: number): boolean {
  const n = d.length;
  if (n === 0) return false;
  const lead = leadDigits(e);
  const first = d[0]!;
  if (n === 1 && first === 0 && 1 / first > 0) {
    for (let g = 0; g < GROUPS; g++) words[o + g] = 0; // zero (all groups zero: no nonzero value packs so)
    return true;
  }
  if (!Number.isInteger(first) || first < POW10[lead - 1]! || first >= POW10[lead]!) return false;
  let acc = 0; // pending digits, fewer than 9 before each word is added
  let accDigits = 0;
  let g = 0;
  for (let i = 0; i < n; i++) {
    const w = d[i]!;
    if (i > 0 && (!Number.isInteger(w) || w < 0 || w >= 1e7 || (w === 0 && (i === n - 1 || 1 / w < 0)))) return false;
    const wd = i === 0 ? lead : 7;
    acc = acc * POW10[wd]! + w;
    accDigits += wd;
    while (accDigits >= 9) {
      const scale = POW10[accDigits - 9]!;
      const group = Math.floor(acc / scale);
      const rest = acc - group * scale;
      if (g === GROUPS) {
        if (group !== 0) return false;
      } else words[o + g++] = group;
      acc = rest;
      accDigits -= 9;
    }
  }
  if (accDigits > 0) {
    if (g === GROUPS) {
      if (acc !== 0) return false;
    } else words[o + g++] = acc * POW10[9 - accDigits]!;
  }
  while (g < GROUPS) words[o + g++] = 0;
  return true;
}

/** The canonical words of the digits packed at words[o..o+3] for exponent `e` (the inverse of packDigits). */
function unpackDigits(words: Uint32Array, o: number, e: number): number[] {
  const d: number[] = [];
  let need = leadDigits(e);
  let acc = 0;
  let accDigits = 0;
  for (let g = 0; g < GROUPS; g++) {
    acc = acc * GROUP + words[o + g]!;
    accDigits += 9;
    while (accDigits >= need) {
      const scale = POW10[accDigits - need]!;
      const word = Math.floor(acc / scale);
      d.push(word);
      acc -= word * scale;
      accDigits -= need;
      need = 7;
    }
  }
  if (accDigits > 0) d.push(acc * POW10[need - accDigits]!);
  let n = d.length;
  while (n > 1 && d[n - 1] === 0) n--;
  d.length = n;
  return d;
}

/** A fixed-capacity ring of the most recent events (oldest overwritten). */
export class EventRing {
  #words: Uint32Array | null = null;
  #next = 0;
  #size = 0;
  /** The decimal.js constructor of the first discount stored inline (a discount from another context is kept aside). */
  #ctor: DecimalCtor | null = null;
  /** Events that do not fit a slot, by slot index (rare; null until needed). */
  #aside: Map<number, RecordedEvent> | null = null;

  constructor(readonly capacity: number = EVENT_HISTORY) {
    if (!Number.isInteger(capacity) || capacity < 0) throw new RangeError(`invalid event ring capacity ${capacity}`);
  }

  push(e: RecordedEvent): void {
    if (this.capacity === 0) return;
    const slot = this.#next;
    const words = (this.#words ??= new Uint32Array(this.capacity * SLOT_WORDS));
    this.#aside?.delete(slot);
    if (!this.#encode(words, slot * SLOT_WORDS, e)) {
      words[slot * SLOT_WORDS + 2] = ASIDE;
      (this.#aside ??= new Map()).set(slot, e);
    }
    this.#next = (slot + 1) % this.capacity;
    if (this.#size < this.capacity) this.#size++;
  }

  /** Oldest first. */
  toArray(): RecordedEvent[] {
    const out: RecordedEvent[] = [];
    const words = this.#words;
    if (words === null) return out;
    const start = (this.#next - this.#size + this.capacity) % this.capacity;
    for (let i = 0; i < this.#size; i++) out.push(this.#decode(words, (start + i) % this.capacity));
    return out;
  }

  /** Writes `e` into the slot at `o`; false (slot untouched but meaningless) when it does not fit exactly. */
  #encode(words: Uint32Array, o: number, e: RecordedEvent): boolean {
    const type = TYPES.indexOf(e.type);
    const result = RESULTS.indexOf(e.result);
    const skip = SKIP_REASONS.indexOf(e.skipReason);
    const state = STATES.indexOf(e.state);
    const band = BANDS.indexOf(e.band);
    const candidate = CANDIDATES.indexOf(e.candidate);
    if (type < 0 || result < 0 || skip < 0 || state < 0 || band < 0 || candidate < 0) return false;
    if (typeof e.at !== "number" || typeof e.transition !== "boolean") return false;
    let meta = type | (result << 2) | (skip << 3) | (state << 5) | (band << 8) | (candidate << 11) | (e.transition ? TRANSITION : 0);
    const discount = e.discount;
    if (discount !== null) {
      if (typeof discount !== "object") return false;
      const { s, e: exp, d } = discount as unknown as { s: unknown; e: unknown; d: unknown };
      if ((s !== 1 && s !== -1) || typeof exp !== "number" || !Number.isInteger(exp) || exp < -EXP_BIAS || exp > EXP_MAX) return false;
      if (!Array.isArray(d) || !packDigits(d as number[], exp, words, o + 3)) return false;
      const ctor = discount.constructor as DecimalCtor;
      if (this.#ctor === null) this.#ctor = ctor;
      else if (ctor !== this.#ctor) return false;
      meta |= HAS_DISCOUNT | (s === -1 ? NEGATIVE : 0) | ((exp + EXP_BIAS) << 18);
    }
    atF64[0] = e.at;
    words[o] = atU32[0]!;
    words[o + 1] = atU32[1]!;
    words[o + 2] = meta;
    return true;
  }

  #decode(words: Uint32Array, slot: number): RecordedEvent {
    const o = slot * SLOT_WORDS;
    const meta = words[o + 2]!;
    if ((meta & ASIDE) !== 0) return this.#aside!.get(slot)!;
    atU32[0] = words[o]!;
    atU32[1] = words[o + 1]!;
    let discount: Decimal | null = null;
    if ((meta & HAS_DISCOUNT) !== 0) {
      const exp = (meta >>> 18) - EXP_BIAS;
      const d = unpackDigits(words, o + 3, exp);
      const x = new this.#ctor!(0);
      const m = x as unknown as MutableDecimal;
      m.s = (meta & NEGATIVE) !== 0 ? -1 : 1;
      m.e = exp;
      m.d = d;
      discount = x;
    }
    return {
      type: TYPES[meta & 3]!,
      at: atF64[0]!,
      result: RESULTS[(meta >>> 2) & 1]!,
      skipReason: SKIP_REASONS[(meta >>> 3) & 3]!,
      state: STATES[(meta >>> 5) & 7]!,
      band: BANDS[(meta >>> 8) & 7]!,
      candidate: CANDIDATES[(meta >>> 11) & 7]!,
      discount,
      transition: (meta & TRANSITION) !== 0,
    };
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
