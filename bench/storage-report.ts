/** The storage benchmark's projections and its section of docs/benchmarks.md (`storage.bench.ts`). */
import { loadAverage, machineDescription, today, writeSection } from "./report.ts";

/** What `storage.bench.ts` measured. Bytes include TOAST and indexes. */
export interface StorageMeasure {
  readonly assets: number;
  readonly tickMs: number;
  readonly seconds: number;
  /** Samples per second written to PEG_SAMPLES during intake. */
  readonly offeredPerS: number;
  /** `samples`: what PostgreSQL stored (recent + packed), the divisor of the bytes (a message may carry many). */
  readonly jetstream: { readonly messages: number; readonly bytes: number; readonly samples: number };
  /** Packed minutes (`sample_minutes`). */
  readonly packed: { readonly samples: number; readonly rows: number; readonly bytes: number; readonly days: number; readonly perColumn: Readonly<Record<string, number>> };
  /** Unpacked recent minutes (`sample_rows`). */
  readonly hot: { readonly rows: number; readonly bytes: number };
  readonly rollups: { readonly rows: number; readonly bytes: number };
  /** The retention pass at the end (packing what closed), and one a week and a day later (dropping every raw day). */
  readonly pass: { readonly ms: number; readonly minutes: number; readonly samples: number };
  readonly expiry: { readonly ms: number; readonly rawDays: number; readonly bytesFreed: number };
  /** A closed day of rollups packed (`rollup_days`): a synthetic full day of `assets` x 1,440 minutes (storage.bench.ts). */
  readonly rollupDay: {
    readonly assets: number;
    readonly minutes: number;
    readonly rows: number;
    readonly bytes: number;
    readonly packMs: number;
    readonly days: number;
    /** The run's own minutes, packed by the expiry pass (partial days). */
    readonly partialMinutes: number;
  };
}

/** Default windows (days): raw 7 and rollups 90, each plus the day a day partition may outlive its window. */
const RAW_DAYS = 7 + 1;
const ROLLUP_DAYS = 90 + 1;
const TARGETS = { jetstream: 150, raw: 60, rollup: 100 } as const;
/** PEG_SAMPLES's default byte bound (SAMPLES_STREAM_MAX_GB): it holds 24 h or this, whichever is less. */
const SAMPLES_STREAM_BYTES = 10 * 2 ** 30;
const GB = 1e9;
const round = (x: number, digits = 1) => Number(x.toFixed(digits));

export function projectStorage(m: StorageMeasure) {
  const perDay = m.offeredPerS * 86_400;
  const js = m.jetstream.bytes / m.jetstream.samples;
  const raw = m.packed.bytes / m.packed.samples;
  // Rollups are kept as packed days (rollup_days) for all but the open day: the packed figure is what a day costs.
  const rollupOpen = m.rollups.bytes / m.rollups.rows;
  const rollup = m.rollupDay.minutes > 0 ? m.rollupDay.bytes / m.rollupDay.minutes : rollupOpen;
  const hotPerRow = m.hot.rows > 0 ? m.hot.bytes / m.hot.rows : 0;
  const rollupRowsPerDay = m.assets * 1440;
  // The unpacked minutes: at most three (the open one, the one in its grace, one awaiting the next pass).
  const hotGb = (hotPerRow * m.offeredPerS * 180) / GB;
  return {
    bench: "storage",
    assets: m.assets,
    tick_ms: m.tickMs,
    seconds: m.seconds,
    samples: m.jetstream.samples,
    samples_per_s: round(m.offeredPerS, 0),
    jetstream_bytes_per_sample: round(js),
    pg_raw_bytes_per_sample: round(raw),
    pg_raw_recent_bytes_per_sample: round(hotPerRow),
    pg_rollup_bytes_per_row: round(rollup),
    pg_rollup_open_day_bytes_per_row: round(rollupOpen),
    projected_gb_per_day: round((raw * perDay + rollup * rollupRowsPerDay) / GB),
    jetstream_gb_held: round(Math.min(js * perDay, SAMPLES_STREAM_BYTES) / GB),
    jetstream_hours_held: round(Math.min(24, SAMPLES_STREAM_BYTES / (js * m.offeredPerS * 3600))),
    samples_per_packed_row: round(m.packed.samples / m.packed.rows),
    projected_steady_state_gb: round(
      (Math.min(js * perDay, SAMPLES_STREAM_BYTES) + raw * perDay * RAW_DAYS + rollup * rollupRowsPerDay * (ROLLUP_DAYS - 1) + rollupOpen * rollupRowsPerDay) / GB + hotGb,
    ),
    retention_pass_ms: Math.round(m.pass.ms),
    expiry_pass_ms: Math.round(m.expiry.ms),
    targets_met: { jetstream: js <= TARGETS.jetstream, pg_raw: raw <= TARGETS.raw, pg_rollup: rollup <= TARGETS.rollup },
  };
}

export type StorageSummary = ReturnType<typeof projectStorage>;

const fmt = (n: number) => n.toLocaleString("en-US");
const yes = (ok: boolean) => (ok ? "**met**" : "not met");

export function writeStorageSection(m: StorageMeasure, s: StorageSummary, load: { loadBefore: string; loadAfter?: string }): void {
  const section = `<!-- storage:start -->
## Storage: bytes per sample in each store (issue 25)

Command: \`npm run bench:storage\` (\`node --import tsx bench/storage.bench.ts\`; \`BENCH_ASSETS\` default 10,000, \`BENCH_SECONDS\`
default 600, \`BENCH_TICK_MS\` default 1,000).
Machine: ${machineDescription()}; nats-server 2.9 and PostgreSQL 15 (fsync off, as in the tests) started by the
benchmark on the same machine. Measured ${today()} (load average ${load.loadBefore} at the start, ${load.loadAfter ?? loadAverage()} at the end).
Load: the real service (ROLE=all, FEED=sim) with ${fmt(m.assets)} assets at one sample each every ${fmt(m.tickMs)} ms for ${fmt(m.seconds)} s:
${fmt(m.jetstream.samples)} samples stored (${fmt(s.samples_per_s)}/s), its retention pass every minute.${
    m.assets < 10_000 || m.seconds < 600 ? `\n**A small run** (${fmt(m.assets)} assets, ${fmt(m.seconds)} s), not the benchmark's 10,000 assets for 10 minutes.` : ""
  }

| store | measured | target | previous (2026-11-26, issue 25, 10,000 assets) |
|---|---:|---:|---|
| JetStream \`PEG_SAMPLES\`, bytes per sample | ${s.jetstream_bytes_per_sample} | <= 150: ${yes(s.targets_met.jetstream)} | 988.9 |
| PostgreSQL raw history (packed minutes, TOAST and indexes), bytes per sample | ${s.pg_raw_bytes_per_sample} | <= 60: ${yes(s.targets_met.pg_raw)} | 90.2 at 25 samples per asset-minute, 78.9 at 60 (numeric arrays, migration 0009); 325 before |
| PostgreSQL recent minutes not yet packed (\`sample_rows\`, at most ~3 minutes), bytes per sample | ${s.pg_raw_recent_bytes_per_sample} | - | - |
| PostgreSQL 1-minute rollups of closed days (\`rollup_days\`, a full day packed), bytes per asset-minute | ${s.pg_rollup_bytes_per_row} | <= 100: ${yes(s.targets_met.pg_rollup)} | 170.6 (one row a minute, 2026-11-26) |
| PostgreSQL 1-minute rollups of the open day (\`rollup_minutes\`, one row a minute), bytes per row | ${s.pg_rollup_open_day_bytes_per_row} | - | - |

Measured from: \`PEG_SAMPLES\` ${fmt(m.jetstream.messages)} messages in ${fmt(m.jetstream.bytes)} bytes (divided by the ${fmt(m.jetstream.samples)} samples PostgreSQL stored); ${fmt(m.packed.samples)} samples packed in
${fmt(m.packed.rows)} rows (${s.samples_per_packed_row} per asset-minute) and ${fmt(m.packed.bytes)} bytes over ${m.packed.days} day partition(s); ${fmt(m.hot.rows)} recent rows in ${fmt(m.hot.bytes)} bytes; ${fmt(m.rollups.rows)}
rollup rows in ${fmt(m.rollups.bytes)} bytes (after \`VACUUM FULL\`: the open minutes' dead row versions, which autovacuum reuses,
are not part of the steady state); a closed day of ${fmt(m.rollupDay.assets)} assets x 1,440 minutes written with this run's shape (34-digit
sums, minima and maxima with random digits) packed in ${fmt(Math.round(m.rollupDay.packMs))} ms into ${fmt(m.rollupDay.rows)} rows, ${fmt(m.rollupDay.minutes)} minutes in
${fmt(m.rollupDay.bytes)} bytes (the run's own ${fmt(m.rollupDay.partialMinutes)} minutes, a few per asset-day, packed too: a partial day is mostly row header). Packed bytes per sample by part of the block, and the row, index and TOAST overhead: ${Object.entries(m.packed.perColumn)
    .map(([c, b]) => `${c} ${b.toFixed(1)}`)
    .join(", ")}.

Projected at this rate with the default retention (raw samples 7 days, rollups 90 days, each kept up to a day
longer because whole day partitions are dropped; \`PEG_SAMPLES\` 24 h or 10 GiB):

| figure | value |
|---|---:|
| PostgreSQL written per day (raw + rollups) | ${s.projected_gb_per_day} GB |
| JetStream held (24 h or the 10 GiB bound, whichever is less: here ${s.jetstream_hours_held} h) | ${s.jetstream_gb_held} GB |
| steady state, all three stores | ${s.projected_steady_state_gb} GB |
| retention pass at the end (packed ${fmt(m.pass.minutes)} closed minutes, ${fmt(m.pass.samples)} samples) | ${fmt(s.retention_pass_ms)} ms |
| retention pass a week and a day later (dropped ${m.expiry.rawDays} raw day partition(s), ${fmt(m.expiry.bytesFreed)} bytes) | ${fmt(s.expiry_pass_ms)} ms |

\`\`\`json
${JSON.stringify(s)}
\`\`\`
<!-- storage:end -->`;
  writeSection("storage", section);
}
