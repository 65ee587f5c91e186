/**
 * The "throughput" section of docs/benchmarks.md, from one run of `throughput.bench.ts`. Its "Load sweep" table keeps
 * the rows of earlier runs at other loads (one row per assets / tick / duration; a rerun replaces its row), so runs
 * with several `BENCH_TICK_MS` values together show the highest rate the service sustains.
 */
import { existsSync, readFileSync } from "node:fs";
import type { Analysis } from "./throughput-analysis.ts";
import { DOC_PATH, machineDescription, writeSection } from "./report.ts";

const DEFAULTS = { BENCH_ASSETS: 10_000, BENCH_SECONDS: 300, BENCH_TICK_MS: 1000 } as const;
const SWEEP_HEADING = "### Load sweep";

const fmt = (x: number) => (Number.isFinite(x) ? Math.round(x).toLocaleString("en-US") : "-");
const ms = (x: number) => (!Number.isFinite(x) ? "-" : x < 10 ? `${x.toFixed(1)} ms` : `${fmt(x)} ms`);
const pctOf = (x: number) => (Number.isFinite(x) ? `${Math.round(x * 100)} %` : "-");
const yes = (b: boolean) => (b ? "yes" : "**no**");

/** The sweep rows already in the document, minus the one this run replaces (same assets, tick and duration). */
function earlierSweepRows(key: string): string[] {
  if (!existsSync(DOC_PATH)) return [];
  const doc = readFileSync(DOC_PATH, "utf8");
  const from = doc.indexOf("<!-- throughput:start -->");
  const to = doc.indexOf("<!-- throughput:end -->");
  if (from < 0 || to < from) return [];
  const section = doc.slice(from, to);
  const h = section.indexOf(SWEEP_HEADING);
  if (h < 0) return [];
  return section
    .slice(h)
    .split("\n")
    .filter((l) => /^\| \d{4}-\d\d-\d\d /.test(l))
    .filter((l) => sweepKey(l) !== key);
}
const sweepKey = (row: string) => row.split("|").slice(2, 5).map((c) => c.trim()).join("/");

export function writeThroughputSection(a: Analysis, env: { loadBefore: string; loadAfter: string; versions: { nats: string; pg: string } }): void {
  const { config: c, counts: n, checks, rates, lag, windows, drain, memory, readyz, queue, service } = a;
  const overrides = [
    c.assets !== DEFAULTS.BENCH_ASSETS ? `BENCH_ASSETS=${c.assets}` : "",
    c.seconds !== DEFAULTS.BENCH_SECONDS ? `BENCH_SECONDS=${c.seconds}` : "",
    c.tickMs !== DEFAULTS.BENCH_TICK_MS ? `BENCH_TICK_MS=${c.tickMs}` : "",
    c.windowS !== 30 ? `BENCH_WINDOW_SECONDS=${c.windowS}` : "",
  ].filter((s) => s !== "");
  const issueLoad = c.assets === DEFAULTS.BENCH_ASSETS && c.tickMs === DEFAULTS.BENCH_TICK_MS;
  const now = new Date();
  const when = `${now.toISOString().slice(0, 10)} ${now.toISOString().slice(11, 16)} UTC`;

  const verdict = a.keptUp
    ? `**Kept up**: nothing dropped, \`/readyz\` 200 throughout, the pipeline drained, and the last window's projection lag p99 (${ms(windows[windows.length - 1]?.lag.p99 ?? NaN)}) within ${ms(c.maxLagMs)}.`
    : `**Did not keep up**: ${[
        checks.nothingDropped ? "" : `${fmt(n.dropped)} samples dropped (${pctOf(n.dropped / Math.max(1, n.published))} of the published recomputes)`,
        !readyz.everReady ? "`/readyz` never answered 200" : "",
        readyz.non200DuringIntake === 0 ? "" : `\`/readyz\` not 200 on ${fmt(readyz.non200DuringIntake)} of ${fmt(readyz.pollsDuringIntake)} polls during intake (after its first 200)`,
        checks.drained ? "" : `the pipeline did not drain within ${fmt(c.drainS)} s of the cut-off`,
        (windows[windows.length - 1]?.lag.p99 ?? NaN) <= c.maxLagMs ? "" : `projection lag p99 ${ms(windows[windows.length - 1]?.lag.p99 ?? NaN)} in the last window (limit ${ms(c.maxLagMs)})`,
      ]
        .filter((s) => s !== "")
        .join("; ")}.`;
  const closes = checks.jetStreamIsPublishedMinusDropped && checks.rowsAreJetStream && checks.rollupsAreRows && checks.acceptedIsPublishedSamples;

  const prevNote = issueLoad ? "" : "*";
  const summaryRows = [
    `| offered, samples/s (intake counter; nominal ${fmt(rates.nominal)}) | ${fmt(rates.offered)} | 8,479 (2026-11-26 02:06); 4,312 (2026-11-25 22:12, before backpressure)${prevNote} |`,
    `| **end to end, samples/s committed in PostgreSQL during intake** | **${fmt(rates.committedDuringIntake)}** | 8,479 (2026-11-26 02:06); 15 (2026-11-25 22:12; 1,385-2,106 on 2026-11-24)${prevNote} |`,
    `| end to end until drained (every row / time to the last commit) | ${fmt(rates.committedUntilDrained)} in ${rates.untilDrainedS.toFixed(1)} s | - |`,
    `| in-process pipeline bench (\`npm run bench:pipeline\`, BENCH_ASSETS=10000) | not measured here | 4,497 (2026-11-25) |`,
    `| samples dropped (\`peg_oracle_samples_dropped_total\`) | ${fmt(n.dropped)} (${pctOf(n.dropped / Math.max(1, n.published))}) | 0 (2026-11-26 02:06); 1,296,638 (100 %; 2026-11-25)${prevNote} |`,
    `| projection lag p50 / p99 / max (sample ts -> raw row committed) | ${ms(lag.p50)} / ${ms(lag.p99)} / ${ms(lag.max)} | 34 ms / 215 ms / 1,794 ms (2026-11-26 02:06); 283,739 ms / 369,709 ms / 369,739 ms (2026-11-25)${prevNote} |`,
    `| \`/readyz\` non-200 polls during intake, after its first 200 | ${fmt(readyz.non200DuringIntake)} of ${fmt(readyz.pollsDuringIntake)} | 186 of 300 (2026-11-26 02:06: throttled); 0 of 0, never 200 before the cut-off (2026-11-25)${prevNote} |`,
    `| sample publish queue p50 / max (cap ${fmt(queue.cap)}) | ${fmt(queue.p50)} / ${fmt(queue.max)} (at the cap on ${pctOf(queue.atCapShare)} of polls) | 0 / 17,080, cap 20,000 (2026-11-26 02:06); 10,000 / 10,000, cap 10,000, at the cap on 96 % of polls (2026-11-25)${prevNote} |`,
    `| service RSS ${fmt(memory.spanS)}-${fmt(2 * memory.spanS)} s / last ${fmt(memory.spanS)} s of intake, peak | ${memory.rssFirstMiB.toFixed(0)} / ${memory.rssLastMiB.toFixed(0)} MiB, peak ${memory.rssPeakMiB.toFixed(0)} MiB (${memory.flat === null ? "flatness not judged: under 4 min of intake" : memory.flat ? "flat" : "**growing**"}) | 1,252 / 1,280 MiB, peak 1,404 MiB, flat (2026-11-26 02:06); 725 / 1,162 MiB, peak 1,332 MiB, growing (2026-11-25)${prevNote} |`,
  ];

  const countRows = [
    `| offered: samples the simulated market fed the engine until the cut-off | ${fmt(n.offered)} | \`peg_oracle_samples_total\`, every result but \`released\` (${fmt(n.releasedAfterCut)} answered \`released\` after the cut-off) |`,
    `| ticks the simulated market skipped until the cut-off (backpressure) | ${fmt(n.ticksSkipped)} of ${fmt(n.ticksDue)} | \`peg_oracle_feed_ticks_skipped_total\`: a tick is skipped when the pipeline is more than a tick behind or a second tick comes due while one is still being evaluated |`,
    `| evaluated by the actors (accepted + skipped) | ${fmt(n.evaluated)} | same counter: ${fmt(n.accepted)} accepted + ${fmt(n.skipped)} skipped (skipped samples change no state and are not published, by design); ${fmt(n.unknownAsset)} unknown_asset |`,
    `| published recomputes (accepted samples + dwell-timer evaluations) | ${fmt(n.published)} | the engine's events, counted in the service process: ${fmt(n.published - n.dwellEvaluations)} samples + ${fmt(n.dwellEvaluations)} dwell-timer evaluations |`,
    `| dropped by the engine link (queue full or publish failed) | ${fmt(n.dropped)} | \`peg_oracle_samples_dropped_total\` (the link's own count at stop: ${fmt(n.droppedByLink)}); the link's publisher (samples and transitions): ${fmt(n.publishAcked)} acked, ${fmt(n.publishFailed)} failed (no ack within 5 s) |`,
    `| durable in JetStream | ${fmt(n.jetStream)} | samples in \`PEG_SAMPLES\`, ${fmt(n.jetStreamMessages)} messages (last_seq ${fmt(n.jetStreamLastSeq)}; a fresh stream) |`,
    `| raw rows in PostgreSQL | ${fmt(n.rows)} | \`samples\`: ${fmt(n.sampleRows)} sample rows (seq 1) + ${fmt(n.dwellRows)} dwell-timer rows (seq 0), ${fmt(n.mintsWithRows)} mints |`,
    `| sum of the 1-minute rollups' counts | ${fmt(n.rollupSum)} | \`sum(rollups_1m.samples)\` over ${fmt(n.rollupMinutes)} (mint, minute) rows |`,
    `| (also written to JetStream: actor snapshots) | ${fmt(n.snapshotPuts)} | KV \`peg_actors\` puts over the run (${fmt(n.snapshotPuts / ((a.drain.seconds + a.summary.intakeS) || 1))}/s; each asset's latest state, flushed every second), ${fmt(n.snapshotPutFailures)} failed |`,
  ];
  const checkLines = [
    `- published samples = accepted samples: ${yes(checks.acceptedIsPublishedSamples)}`,
    `- in JetStream = published - dropped: ${yes(checks.jetStreamIsPublishedMinusDropped)} (${fmt(n.jetStream)} ${checks.jetStreamIsPublishedMinusDropped ? "=" : "vs"} ${fmt(n.published)} - ${fmt(n.dropped)}${
      checks.jetStreamIsPublishedMinusDropped
        ? ""
        : n.storedDespiteDropped > 0
          ? `: JetStream holds ${fmt(n.storedDespiteDropped)} more; publishes the link counted as dropped because no ack came within 5 s were stored all the same, so \`peg_oracle_samples_dropped_total\` over-counts what is missing`
          : `: ${fmt(-n.storedDespiteDropped)} missing from JetStream without being counted as dropped`
    })`,
    `- raw rows = in JetStream: ${yes(checks.rowsAreJetStream)}${checks.rowsAreJetStream ? "" : ` (off by ${fmt(n.rows - n.jetStream)}; ${fmt(n.projectorPendingAtEnd)} still pending on the projector)`}`,
    `- rollup counts = raw rows: ${yes(checks.rollupsAreRows)}`,
    `- nothing dropped: ${yes(checks.nothingDropped)}`,
  ];

  const windowRows = windows.map(
    (w) =>
      `| ${fmt(w.fromS)}-${fmt(w.toS)} s | ${fmt(w.offeredPerS)} | ${fmt(w.jetStreamPerS)} | **${fmt(w.committedPerS)}** | ${fmt(w.dropped)} | ${ms(w.lag.p50)} | ${ms(w.lag.p99)} | ${fmt(w.queueMax)} | ${fmt(w.backlogAtEnd)} | ${w.readyNon200} / ${w.readyPolls} | ${pctOf(w.serviceCpu)} | ${pctOf(w.machineCpu)} | ${(w.rssAtEnd / 2 ** 20).toFixed(0)} MiB |`,
  );
  windowRows.push(
    `| drain (after the cut-off) | 0 | ${fmt(drain.jetStreamAppended / Math.max(drain.seconds, 0.001))} | ${fmt(drain.committed / Math.max(drain.seconds, 0.001))} | 0 | | | ${fmt(drain.queueAtCut)} at the cut | ${fmt(drain.backlogAtCut)} at the cut | | | | |`,
  );

  const reasonLines =
    readyz.reasons.length === 0
      ? "Every poll answered 200."
      : readyz.reasons.map((r) => `- ${fmt(r.count)} polls, first at +${r.firstS.toFixed(0)} s: \`${r.example.slice(0, 300)}\``).join("\n");
  const logLines = [...service.errors, ...service.warnings].map((l) => `- ${l.level} x${fmt(l.count)}: "${l.msg}"${Object.keys(l.last).length > 3 ? ` (last: \`${JSON.stringify(Object.fromEntries(Object.entries(l.last).filter(([k]) => k !== "ts" && k !== "level" && k !== "msg"))).slice(0, 240)}\`)` : ""}`);

  const key = `${fmt(c.assets)}/${fmt(c.tickMs)}/${fmt(c.seconds)}`;
  const sweepRow = `| ${when.slice(0, 10)} | ${fmt(c.assets)} | ${fmt(c.tickMs)} | ${fmt(c.seconds)} | ${fmt(rates.nominal)} | ${fmt(rates.offered)} | ${fmt(rates.committedDuringIntake)} | ${fmt(n.dropped)} | ${ms(lag.p99)} | ${readyz.non200DuringIntake} / ${readyz.pollsDuringIntake} | ${a.keptUp ? "yes" : "no"} |`;
  const sweep = [...earlierSweepRows(key), sweepRow].sort((x, y) => {
    const [ax, tx] = x.split("|").slice(2, 4).map((s) => Number(s.replace(/[^\d]/g, "")));
    const [ay, ty] = y.split("|").slice(2, 4).map((s) => Number(s.replace(/[^\d]/g, "")));
    return ax! - ay! || ty! - tx!;
  });

  const section = `<!-- throughput:start -->
## Throughput: the real service end to end (issue 15)

Command: \`${[...overrides, "npm run bench:throughput"].join(" ")}\` (\`node --import tsx bench/throughput.bench.ts\`; \`BENCH_ASSETS\` default 10,000,
\`BENCH_SECONDS\` default 300, \`BENCH_TICK_MS\` default 1,000 (the simulated market's \`SIM_TICK_MS\`: the offered load), \`BENCH_WINDOW_SECONDS\`,
\`BENCH_DRAIN_SECONDS\`, \`BENCH_MAX_LAG_MS\` to change; \`BENCH_RAW_FILE\` keeps every poll as JSON).
Machine: ${machineDescription()}; nats-server ${env.versions.nats.replace(/^nats-server:\s*/, "")} and ${env.versions.pg.replace(/^postgres \(PostgreSQL\) /, "PostgreSQL ")} started by the
benchmark on the same machine (PostgreSQL with fsync off, as in the tests, and \`track_commit_timestamp\` on). Measured ${when} (load
average ${env.loadBefore} at the start, ${env.loadAfter} at the end).
Load: ${fmt(c.assets)} active assets at one sample each every ${fmt(c.tickMs)} ms (${fmt(rates.nominal)} samples/s nominal), ${fmt(c.seconds)} s of intake${
    a.summary.intakeS > c.seconds + 2 ? ` (closed after ${a.summary.intakeS.toFixed(1)} s: the service handled the closing signal that late, its event loop busy; rates use the actual ${a.summary.intakeS.toFixed(1)} s)` : ""
  }${issueLoad && c.seconds === DEFAULTS.BENCH_SECONDS ? " (the load of issue 15)" : `; **not the load of issue 15** (10,000 assets, 1,000 ms, 300 s)`}.

The service is the real one in its own process (\`bench/throughput-child.ts\`: \`startService\` as \`peg-oracle serve\` runs
it, ROLE=all, FEED=sim, \`--max-semi-space-size=64\` as \`npm start\`) on a synthetic catalog (\`bench/synthetic.ts\`), with
its own nats-server and PostgreSQL database. Intake runs for the set time from the moment the service serves; then
intake is closed at a tick boundary (every actor released; the link, projectors and API keep running) and the
pipeline drains. Offered, evaluated and dropped come from the service's \`/metrics\` (polled every second), JetStream
from \`PEG_SAMPLES\` and its projector durable, rows and rollups from PostgreSQL once drained. Projection lag is
exact per row: each raw row's commit instant (\`pg_xact_commit_timestamp(xmin)\`) minus its sample's timestamp (the
tick instant, so the engine's own time on the tick is included); "committed/s" counts rows by commit instant. RSS is
the service's VmRSS every 10 s, heap its \`/metrics\`; \`/readyz\` is polled every second.

${verdict}

| figure | this run | previous (issue 15) |
|---|---:|---|
${summaryRows.join("\n")}
${issueLoad ? "" : "\n\\* The previous figures are for 10,000 assets at one sample per second, not this load.\n"}
Counts (after the drain; the offered load is what came before the cut-off). ${closes ? "The books close: every published recompute is either counted as dropped or in JetStream, every message in JetStream is a raw row, and every raw row is counted in its rollup." : "**The books do not close**; see the checks."}

| stage | count | measured as |
|---|---:|---|
${countRows.join("\n")}

${checkLines.join("\n")}

Per ${fmt(c.windowS)} s window of intake (offered, JetStream and dropped from the 1 s polls, so +-1 s at the edges; committed and
lag exact, lag by the sample's window; backlog: messages pending or unacknowledged on the projector's durable):

| window | offered/s | to JetStream/s | committed/s | dropped | lag p50 | lag p99 | publish queue max | projector backlog | /readyz non-200 | service CPU | machine CPU (${machineDescription().match(/(\d+) cores/)?.[1] ?? "?"} cores) | RSS |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
${windowRows.join("\n")}

Drain: ${checks.drained ? `at rest ${drain.seconds.toFixed(1)} s after the cut-off` : `**not at rest ${fmt(c.drainS)} s after the cut-off** (${fmt(n.projectorPendingAtEnd)} messages still pending)`}. Newest committed sample polled every second during intake (now - newest
\`samples.ts\`, which includes up to one tick of age): p50 ${ms(a.freshness.p50)}, p99 ${ms(a.freshness.p99)}, max ${ms(a.freshness.max)}.
Event-loop lag p99 (the service's \`/metrics\`), highest during intake: ${ms(queue.loopLagP99MaxMs)}.

Memory: RSS ${memory.rssFirstMiB.toFixed(0)} MiB (mean of ${fmt(memory.spanS)}-${fmt(2 * memory.spanS)} s, after the warm-up) -> ${memory.rssLastMiB.toFixed(0)} MiB (last ${fmt(memory.spanS)} s), peak ${memory.rssPeakMiB.toFixed(0)} MiB,
slope ${Number.isFinite(memory.rssSlopeMiBPerHour) ? `${memory.rssSlopeMiBPerHour >= 0 ? "+" : ""}${fmt(memory.rssSlopeMiBPerHour)} MiB/hour (r² ${memory.rssR2.toFixed(2)})` : "-"} after the first span; heap used ${memory.heapFirstMiB.toFixed(0)} -> ${memory.heapLastMiB.toFixed(0)} MiB
(slope ${fmt(memory.heapSlopeMiBPerHour)} MiB/hour). ${memory.flat === null ? "Not judged: under 4 minutes of intake" : memory.flat ? "Flat" : "**Not flat**"} (flat: the last span's mean at most max(32 MiB, 10 %) above the second span's, the first span being the warm-up in which the young generation (up to three 64 MiB semi-spaces), the queues and the first ticks' allocations fill; judged from 4 minutes of intake).

\`/readyz\`: ${fmt(readyz.non200)} of ${fmt(readyz.polls)} polls not 200 (intake and drain; ${fmt(readyz.non200BeforeFirstReady)} of them before its first 200, while starting)${readyz.firstNon200S === null ? "" : `, the first at +${readyz.firstNon200S.toFixed(0)} s, longest stretch ${readyz.longestNon200S.toFixed(0)} s`}; answer time p99 ${ms(readyz.answerMsP99)}.
${reasonLines}

Service: serving ${fmt(service.servingMs)} ms after spawn, first \`/readyz\` 200 seen ${fmt(service.readyMs)} ms after spawn (1 s polls), ordered stop after SIGTERM ${fmt(service.stopMs)} ms (exit ${service.exit?.code ?? service.exit?.signal ?? "-"}); ${fmt(n.transitions)} transitions decided, ${fmt(n.alerts)} alert rows.
${logLines.length === 0 ? "No warning or error logged." : `Warnings and errors logged:\n${logLines.join("\n")}`}

${SWEEP_HEADING}

One row per load (assets, tick, intake seconds); a rerun replaces its row. Kept up: nothing dropped, \`/readyz\` 200
throughout, drained, and the last window's lag p99 within \`BENCH_MAX_LAG_MS\` (default 5 s).

| measured | assets | tick ms | intake s | nominal/s | offered/s | committed/s | dropped | lag p99 | /readyz non-200 | kept up |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|
${sweep.join("\n")}
<!-- throughput:end -->`;
  writeSection("throughput", section);
}
