/**
 * The payload of `peg.samples.<partition>` (stream PEG_SAMPLES, issue 25): many evaluated samples in one message, as
 * gzip of one JSON object whose members are columns (one array per `SampleMessage` member, the i-th entry of each
 * being the i-th sample). A sample's members repeat little within a message but a lot down a column (states, bands,
 * instants, the leading digits of prices), so deflate stores a sample in about a tenth of its `v: 1` JSON message:
 * docs/benchmarks.md "Storage" has the measured bytes. Any language reads it with gzip and a JSON parser
 * (docs/nats.md has the format); `decodeSampleBatch` gives back the `SampleMessage`s exactly, member for member.
 *
 * Lossless conventions that save bytes:
 * - instants are milliseconds after the batch's `t0`, when the wire text is what `timestampToWire` writes for that
 *   instant (always, for what the engine publishes); any other text is kept as it is;
 * - `discount_raw` is null when it equals `discount`; the top-level `market_usd` / `intrinsic_usd` null when they equal
 *   the sample's; `sample.asset` null when it equals `asset`;
 * - an oracle entry is `[price, conf, publish_time]`.
 */
import { promisify } from "node:util";
import { gunzipSync, gzip } from "node:zlib";
import { parseTimestamp, timestampToWire, type SampleWire } from "../../methodology/index.ts";
import type { SampleMessage } from "./messages.ts";

const gzipAsync = promisify(gzip);

/** Payload version of a batch (a single `SampleMessage` is `v: 1`). */
export const SAMPLE_BATCH_VERSION = 2;

/** A wire instant as an offset from `t0` (ms), or the text itself when the offset would not give it back exactly. */
type Instant = number | string;
type OracleEntry = readonly [price: string, conf: string, publishTime: Instant];

/** The JSON inside the gzip. */
export interface SampleBatchWire {
  readonly v: 2;
  /** Epoch ms every instant column counts from. */
  readonly t0: number;
  readonly asset: string[];
  readonly mint: string[];
  readonly ts: Instant[];
  readonly trigger: SampleMessage["trigger"][];
  readonly state: SampleMessage["state"][];
  readonly band: SampleMessage["band"][];
  readonly gate: SampleMessage["gate"][];
  readonly state_reason: (string | null)[];
  readonly discount: string[];
  readonly discount_raw: (string | null)[];
  readonly confidence: SampleMessage["confidence"][];
  readonly market_usd: (string | null)[];
  readonly intrinsic_usd: (string | null)[];
  readonly committed_since: (Instant | null)[];
  readonly published_since: (Instant | null)[];
  readonly sample: {
    readonly ts: Instant[];
    readonly asset: (string | null)[];
    readonly intrinsic_usd: string[];
    readonly market_usd: string[];
    readonly intrinsic_sol: (string | null)[];
    readonly market_sol: (string | null)[];
    readonly cr: (string | null)[];
    readonly oracle: Record<string, OracleEntry>[];
    readonly intrinsic_stale: boolean[];
  };
}

/** A batch that does not decode: not gzip, not JSON, or columns of different lengths or shapes. */
export class SampleBatchError extends Error {}

function instant(text: string, t0: number): Instant {
  const ms = parseTimestamp(text);
  return ms !== null && timestampToWire(ms) === text ? ms - t0 : text;
}

function wireInstant(v: Instant, t0: number): string {
  return typeof v === "number" ? timestampToWire(t0 + v) : v;
}

/** The columns of `messages` (at least one). */
export function sampleBatchWire(messages: readonly SampleMessage[]): SampleBatchWire {
  const t0 = parseTimestamp(messages[0]?.ts) ?? 0;
  const b: SampleBatchWire = {
    v: 2,
    t0,
    asset: [],
    mint: [],
    ts: [],
    trigger: [],
    state: [],
    band: [],
    gate: [],
    state_reason: [],
    discount: [],
    discount_raw: [],
    confidence: [],
    market_usd: [],
    intrinsic_usd: [],
    committed_since: [],
    published_since: [],
    sample: { ts: [], asset: [], intrinsic_usd: [], market_usd: [], intrinsic_sol: [], market_sol: [], cr: [], oracle: [], intrinsic_stale: [] },
  };
  for (const m of messages) {
    const s = m.sample;
    b.asset.push(m.asset);
    b.mint.push(m.mint);
    b.ts.push(instant(m.ts, t0));
    b.trigger.push(m.trigger);
    b.state.push(m.state);
    b.band.push(m.band);
    b.gate.push(m.gate);
    b.state_reason.push(m.state_reason);
    b.discount.push(m.discount);
    b.discount_raw.push(m.discount_raw === m.discount ? null : m.discount_raw);
    b.confidence.push(m.confidence);
    b.market_usd.push(m.market_usd === s.market_usd ? null : m.market_usd);
    b.intrinsic_usd.push(m.intrinsic_usd === s.intrinsic_usd ? null : m.intrinsic_usd);
    b.committed_since.push(m.committed_since === null ? null : instant(m.committed_since, t0));
    b.published_since.push(m.published_since === null ? null : instant(m.published_since, t0));
    b.sample.ts.push(instant(s.ts, t0));
    b.sample.asset.push(s.asset === m.asset ? null : s.asset);
    b.sample.intrinsic_usd.push(s.intrinsic_usd);
    b.sample.market_usd.push(s.market_usd);
    b.sample.intrinsic_sol.push(s.intrinsic_sol ?? null);
    b.sample.market_sol.push(s.market_sol ?? null);
    b.sample.cr.push(s.cr ?? null);
    const oracle: Record<string, OracleEntry> = {};
    for (const [name, e] of Object.entries(s.oracle ?? {})) oracle[name] = [e.price, e.conf, instant(e.publish_time, t0)];
    b.sample.oracle.push(oracle);
    b.sample.intrinsic_stale.push(s.intrinsic_stale ?? false);
  }
  return b;
}

/** Encodes a batch (gzip on libuv's thread pool, off the caller's thread). */
export async function encodeSampleBatch(messages: readonly SampleMessage[]): Promise<Uint8Array> {
  return gzipAsync(JSON.stringify(sampleBatchWire(messages)));
}

/** True when `data` starts as gzip does (a batch), not as a JSON `SampleMessage` (`v: 1`, one per message). */
export function isSampleBatch(data: Uint8Array): boolean {
  return data.length >= 2 && data[0] === 0x1f && data[1] === 0x8b;
}

const TOP = ["asset", "mint", "ts", "trigger", "state", "band", "gate", "state_reason", "discount", "discount_raw", "confidence", "market_usd", "intrinsic_usd", "committed_since", "published_since"] as const;
const SAMPLE = ["ts", "asset", "intrinsic_usd", "market_usd", "intrinsic_sol", "market_sol", "cr", "oracle", "intrinsic_stale"] as const;

function columnsOf(b: unknown): SampleBatchWire {
  const o = b as Partial<SampleBatchWire> | null;
  if (typeof o !== "object" || o === null || o.v !== SAMPLE_BATCH_VERSION || !Number.isSafeInteger(o.t0)) throw new SampleBatchError("not a v2 sample batch");
  const n = Array.isArray(o.mint) ? o.mint.length : -1;
  const sample = o.sample as Record<string, unknown> | undefined;
  const same = (c: unknown) => Array.isArray(c) && c.length === n;
  if (n < 0 || !TOP.every((k) => same(o[k])) || typeof sample !== "object" || sample === null || !SAMPLE.every((k) => same(sample[k]))) {
    throw new SampleBatchError("a sample batch whose columns are missing or of different lengths");
  }
  return o as SampleBatchWire;
}

/** The messages of a batch, in order, exactly as they were encoded. Throws `SampleBatchError`. */
export function decodeSampleBatch(data: Uint8Array): SampleMessage[] {
  let b: SampleBatchWire;
  try {
    b = columnsOf(JSON.parse(gunzipSync(data).toString("utf8")));
  } catch (e) {
    throw e instanceof SampleBatchError ? e : new SampleBatchError(`not a sample batch: ${e instanceof Error ? e.message : String(e)}`);
  }
  const { t0, sample: s } = b;
  const out: SampleMessage[] = [];
  for (let i = 0; i < b.mint.length; i++) {
    const asset = b.asset[i]!;
    const oracle: Record<string, { price: string; conf: string; publish_time: string }> = {};
    const entries = s.oracle[i];
    if (typeof entries !== "object" || entries === null) throw new SampleBatchError(`sample ${i}: oracle is not an object`);
    for (const [name, e] of Object.entries(entries)) {
      if (!Array.isArray(e) || e.length !== 3) throw new SampleBatchError(`sample ${i}: oracle ${name} is not [price, conf, publish_time]`);
      oracle[name] = { price: e[0], conf: e[1], publish_time: wireInstant(e[2], t0) };
    }
    const wire: SampleWire = {
      ts: wireInstant(s.ts[i]!, t0),
      asset: s.asset[i] ?? asset,
      intrinsic_usd: s.intrinsic_usd[i]!,
      market_usd: s.market_usd[i]!,
      intrinsic_sol: s.intrinsic_sol[i]!,
      market_sol: s.market_sol[i]!,
      cr: s.cr[i]!,
      oracle,
      intrinsic_stale: s.intrinsic_stale[i]!,
    };
    const discount = b.discount[i]!;
    const committed = b.committed_since[i]!;
    const published = b.published_since[i]!;
    out.push({
      v: 1,
      asset,
      mint: b.mint[i]!,
      ts: wireInstant(b.ts[i]!, t0),
      trigger: b.trigger[i]!,
      state: b.state[i]!,
      band: b.band[i]!,
      gate: b.gate[i]!,
      state_reason: b.state_reason[i]!,
      discount,
      discount_raw: b.discount_raw[i] ?? discount,
      confidence: b.confidence[i]!,
      market_usd: b.market_usd[i] ?? wire.market_usd,
      intrinsic_usd: b.intrinsic_usd[i] ?? wire.intrinsic_usd,
      committed_since: committed === null ? null : wireInstant(committed, t0),
      published_since: published === null ? null : wireInstant(published, t0),
      sample: wire,
    });
  }
  return out;
}
