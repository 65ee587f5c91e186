import {
  decimalToWire,
  sampleToWire,
  timestampToWire,
  type Band,
  type Confidence,
  type GateName,
  type PegState,
  type SampleWire,
} from "../../methodology/index.ts";
import type { StateEvent } from "../../actors/index.ts";

/** Payload of `peg.sample.<mint>` (stream PEG_SAMPLES): one accepted, evaluated sample. */
export interface SampleMessage {
  readonly v: 1;
  readonly asset: string;
  readonly mint: string;
  /** The evaluation instant (RFC 3339). */
  readonly ts: string;
  readonly trigger: "sample" | "dwell_timer";
  readonly state: PegState;
  readonly band: Band;
  readonly gate: GateName | null;
  readonly state_reason: string | null;
  /** d_smooth. */
  readonly discount: string;
  readonly discount_raw: string;
  readonly confidence: Confidence;
  readonly market_usd: string;
  readonly intrinsic_usd: string;
  /** When the current committed band and published state began (RFC 3339), if known. */
  readonly committed_since: string | null;
  readonly published_since: string | null;
  readonly sample: SampleWire;
}

export function sampleMessage(e: StateEvent): SampleMessage {
  return {
    v: 1,
    asset: e.asset,
    mint: e.mint,
    ts: timestampToWire(e.now),
    trigger: e.trigger,
    state: e.state,
    band: e.band,
    gate: e.gate,
    state_reason: e.state_reason,
    discount: decimalToWire(e.discount),
    discount_raw: decimalToWire(e.discount_raw),
    confidence: e.confidence,
    market_usd: decimalToWire(e.sample.market_usd),
    intrinsic_usd: decimalToWire(e.sample.intrinsic_usd),
    committed_since: e.engine.committedSince === null ? null : timestampToWire(e.engine.committedSince),
    published_since: e.engine.publishedSince === null ? null : timestampToWire(e.engine.publishedSince),
    sample: sampleToWire(e.sample),
  };
}

/**
 * Header of a transition message (not part of the receipt): the timestamp (epoch ms) of the last sample the asset's
 * state reflects after the decision. The receipt's `now` is the evaluation instant, which for a live feed is later
 * than the sample's own stamp; a take-over resumes after this one (partition.ts), not after `now`.
 */
export const SAMPLE_TS_HEADER = "Peg-Sample-Ts";

/** `Nats-Msg-Id` of a sample message: one evaluation per asset, instant and trigger. */
export function sampleMsgId(e: StateEvent): string {
  return `${e.mint}|${e.now}|${e.trigger}`;
}
