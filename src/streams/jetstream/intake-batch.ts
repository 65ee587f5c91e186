/**
 * The payload of `peg.intake.<partition>` and `peg.intake.tick` (stream PEG_INTAKE, issue 26 item 2): the samples the
 * cluster's one intake received, as gzip of one JSON object. `samples` are wire samples (`sampleToWire`), `at` the
 * engine instant each was received at (the instant an engine evaluates it at), and `wm` the intake's watermark: every
 * sample stamped at or before `wm` is in this message or an earlier one of the stream, so an engine may fire the dwell
 * timers due up to `wm` once it has evaluated them. A tick (`peg.intake.tick`) carries only the watermark.
 */
import { promisify } from "node:util";
import { gunzipSync, gzip } from "node:zlib";
import { decimalToWire, parseDecimal, sampleFromWire, sampleToWire, type EpochMs, type Sample, type SampleWire } from "../../methodology/index.ts";
import type { SupplyLeg } from "../sources/legs.ts";
import type { ReceivedSample } from "./recent-samples.ts";

const gzipAsync = promisify(gzip);

export const INTAKE_BATCH_VERSION = 1;

/** The header that repeats a message's watermark, so an engine reads it without decoding a partition it does not run. */
export const INTAKE_WATERMARK_HEADER = "Peg-Watermark";

interface IntakeBatchWire {
  readonly v: 1;
  readonly wm: number;
  readonly at: number[];
  readonly samples: SampleWire[];
}

/** One decoded message: its samples in the order the intake received them, and its watermark. */
export interface IntakeBatch {
  readonly wm: EpochMs;
  readonly samples: readonly ReceivedSample[];
}

/** A message that does not decode (not gzip, not JSON, or not this shape). */
export class IntakeBatchError extends Error {}

export function encodeIntakeBatch(samples: readonly ReceivedSample[], wm: EpochMs): Promise<Uint8Array> {
  const wire: IntakeBatchWire = { v: INTAKE_BATCH_VERSION, wm, at: samples.map((s) => s.at), samples: samples.map((s) => sampleToWire(s.sample)) };
  return gzipAsync(JSON.stringify(wire));
}

/** Decodes one message strictly (every sample as `sampleFromWire` parses it). */
export function decodeIntakeBatch(data: Uint8Array): IntakeBatch {
  let wire: Partial<IntakeBatchWire>;
  try {
    wire = JSON.parse(gunzipSync(data).toString("utf8")) as Partial<IntakeBatchWire>;
  } catch (e) {
    throw new IntakeBatchError(`not an intake batch: ${e instanceof Error ? e.message : String(e)}`);
  }
  const { v, wm, at, samples } = wire;
  if (v !== INTAKE_BATCH_VERSION || typeof wm !== "number" || !Array.isArray(at) || !Array.isArray(samples) || at.length !== samples.length) {
    throw new IntakeBatchError("not an intake batch of version 1");
  }
  const out: ReceivedSample[] = [];
  for (let i = 0; i < samples.length; i++) {
    const instant = at[i];
    if (typeof instant !== "number") throw new IntakeBatchError(`at[${i}] is not a number`);
    const sample: Sample = sampleFromWire(samples[i]);
    out.push({ sample, at: instant });
  }
  return { wm, samples: out };
}

/** `peg.intake.supply`: the circulating supplies the intake observed (a size signal for the cards, not evaluated). */
export function encodeIntakeSupplies(legs: readonly SupplyLeg[]): Promise<Uint8Array> {
  return gzipAsync(JSON.stringify({ v: INTAKE_BATCH_VERSION, supply: legs.map((l) => [l.mint, decimalToWire(l.supply), l.observed_at]) }));
}

export function decodeIntakeSupplies(data: Uint8Array): SupplyLeg[] {
  let wire: { v?: unknown; supply?: unknown };
  try {
    wire = JSON.parse(gunzipSync(data).toString("utf8")) as typeof wire;
  } catch (e) {
    throw new IntakeBatchError(`not an intake supply message: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (wire.v !== INTAKE_BATCH_VERSION || !Array.isArray(wire.supply)) throw new IntakeBatchError("not an intake supply message of version 1");
  return wire.supply.map((entry: unknown) => {
    const [mint, supply, observedAt] = Array.isArray(entry) ? (entry as unknown[]) : [];
    const d = parseDecimal(supply);
    if (typeof mint !== "string" || d === null || typeof observedAt !== "number") throw new IntakeBatchError("a supply entry is not [mint, decimal, ms]");
    return { kind: "supply", mint, supply: d, observed_at: observedAt };
  });
}
