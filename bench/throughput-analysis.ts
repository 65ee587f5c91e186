/**
 * The throughput benchmark's figures from what it collected (`throughput.bench.ts`): the counts along the pipeline
 * and whether they close, rates overall and per window, projection lag from each raw row's commit instant, memory,
 * /readyz and the publish queue.
 */
import { at, fit, mean, percentile, weightedPercentile } from "./throughput-stats.ts";

export interface Scrape {
  readonly t: number;
  readonly accepted: number;
  readonly skipped: number;
  readonly released: number;
  readonly unknown: number;
  readonly dropped: number;
  readonly queue: number;
  /** Ticks the simulated market skipped (the throttle: the pipeline behind, or a tick still being evaluated). */
  readonly ticksSkipped: number;
  readonly heapUsed: number;
  readonly heapTotal: number;
  readonly external: number;
  readonly loopLagP99Ms: number;
}
export interface StreamPoll {
  readonly t: number;
  readonly messages: number;
  /** Samples in the stream's messages (a batch holds many: each message decoded once, as it arrives). */
  readonly samples: number;
  readonly lastSeq: number;
  /** Messages of PEG_SAMPLES not yet delivered to the projector's durable. */
  readonly pending: number;
  /** Delivered to the projector, not acknowledged yet (acked once committed). */
  readonly ackPending: number;
  readonly ackFloor: number;
}
export interface ReadyPoll {
  readonly t: number;
  /** HTTP status; 0 when /readyz did not answer within 10 s. */
  readonly status: number;
  readonly message: string;
  readonly ms: number;
}
export interface FreshnessPoll {
  readonly t: number;
  /** The newest sample instant committed in `samples` (epoch ms), null while there is none. */
  readonly newestMs: number | null;
}
export interface MemoryPoll {
  readonly t: number;
  readonly rss: number;
  readonly cpuS: number;
  readonly machineBusy: number;
  readonly machineTotal: number;
  readonly heapUsed: number;
  readonly heapTotal: number;
  readonly external: number;
}
export interface Polls {
  readonly scrapes: Scrape[];
  readonly streams: StreamPoll[];
  readonly ready: ReadyPoll[];
  readonly freshness: FreshnessPoll[];
  readonly memory: MemoryPoll[];
}
/** Raw rows grouped by sample instant, commit instant (null: no commit timestamp) and seq (1 sample, 0 dwell timer). */
export interface RowGroup {
  readonly tsMs: number;
  readonly commitMs: number | null;
  readonly seq: number;
  readonly n: number;
}
export interface BenchConfig {
  readonly assets: number;
  readonly seconds: number;
  readonly tickMs: number;
  readonly windowS: number;
  readonly drainS: number;
  readonly maxLagMs: number;
}
type ChildLine = Record<string, unknown> | null;

export interface AnalysisInput {
  readonly config: BenchConfig;
  /** When `startService` returned (intake open), epoch ms. */
  readonly t0: number;
  /** When intake was closed (every actor released), epoch ms. */
  readonly tCut: number;
  /** When the pipeline was seen at rest after the cut-off, NaN if it never was within the drain time-out. */
  readonly drainedAt: number;
  readonly servingMs: number;
  readonly readyMs: number;
  readonly polls: Polls;
  readonly closed: ChildLine;
  readonly stopped: ChildLine;
  readonly exit: { code: number | null; signal: NodeJS.Signals | null } | null;
  readonly finalScrape: Scrape;
  readonly finalStream: StreamPoll;
  readonly rowGroups: readonly RowGroup[];
  readonly rollupSum: number;
  readonly rollupMinutes: number;
  readonly alerts: number;
  readonly mintsWithRows: number;
  readonly logs: readonly { level: string; msg: string; count: number; last: Record<string, unknown> }[];
}

/** The engine link's default queue bound (`maxQueuedSamples`), for a child that does not report its own. */
export const QUEUE_CAP = 10_000;
const MiB = 2 ** 20;

/** The largest value, NaN when there is none. */
const maxOf = (xs: readonly number[]): number => (xs.length === 0 ? NaN : xs.reduce((a, b) => Math.max(a, b), -Infinity));

const num = (o: ChildLine, ...path: string[]): number => {
  let v: unknown = o;
  for (const k of path) v = typeof v === "object" && v !== null ? (v as Record<string, unknown>)[k] : undefined;
  return typeof v === "number" ? v : NaN;
};

export function analyse(input: AnalysisInput) {
  const { config, t0, tCut, polls, finalScrape: fs, finalStream: fj } = input;
  const W = config.windowS * 1000;
  const intakeS = (tCut - t0) / 1000;

  // Counts. Samples answered `released` came after the cut-off (intake closed); they are not offered load.
  const offered = fs.accepted + fs.skipped + fs.unknown;
  const evaluated = fs.accepted + fs.skipped;
  // Published recomputes: the engine link's own count once stopped (every one acknowledged or dropped; the child's
  // event subscription starts after startService returns, when the first tick's slices may already be out). Dwell
  // evaluations come late and one at a time: the child's count of them is whole.
  const dwell = num(input.closed, "events", "dwell_timer");
  const linkPublished = num(input.stopped, "link", "ackedSamples") + num(input.stopped, "link", "droppedSamples");
  const published = Number.isFinite(linkPublished) ? linkPublished : num(input.closed, "events", "sample") + dwell;
  const engine = { sample: published - dwell, dwell, transitions: num(input.closed, "events", "transitions") };
  const queueCap = Number.isFinite(num(input.stopped, "link", "maxQueuedSamples")) ? num(input.stopped, "link", "maxQueuedSamples") : QUEUE_CAP;
  const sampleRows = input.rowGroups.filter((g) => g.seq === 1).reduce((a, g) => a + g.n, 0);
  const dwellRows = input.rowGroups.filter((g) => g.seq === 0).reduce((a, g) => a + g.n, 0);
  const rows = sampleRows + dwellRows;
  const checks = {
    acceptedIsPublishedSamples: fs.accepted === engine.sample,
    jetStreamIsPublishedMinusDropped: fj.samples === published - fs.dropped,
    rowsAreJetStream: rows === fj.samples,
    rollupsAreRows: input.rollupSum === rows,
    nothingDropped: fs.dropped === 0,
    drained: !Number.isNaN(input.drainedAt),
  };
  const counts = {
    offered,
    evaluated,
    accepted: fs.accepted,
    skipped: fs.skipped,
    unknownAsset: fs.unknown,
    releasedAfterCut: fs.released,
    ticksSkipped: at(polls.scrapes, tCut)?.ticksSkipped ?? NaN,
    ticksDue: Math.floor(intakeS / (config.tickMs / 1000)) + 1,
    dwellEvaluations: engine.dwell,
    published,
    dropped: fs.dropped,
    droppedByLink: num(input.stopped, "link", "droppedSamples"),
    jetStream: fj.samples,
    jetStreamMessages: fj.messages,
    jetStreamLastSeq: fj.lastSeq,
    rows,
    sampleRows,
    dwellRows,
    rollupSum: input.rollupSum,
    rollupMinutes: input.rollupMinutes,
    mintsWithRows: input.mintsWithRows,
    transitions: engine.transitions,
    alerts: input.alerts,
    projectorPendingAtEnd: fj.pending + fj.ackPending,
    /** Actor snapshots put to KV `peg_actors` (coalesced per asset, flushed every second), and failed puts. */
    snapshotPuts: num(input.stopped, "link", "snapshots", "written"),
    snapshotPutFailures: num(input.stopped, "link", "snapshots", "failures"),
    /** The link's publisher (samples and transitions): acked, and failed (no ack within 5 s, or refused). */
    publishAcked: num(input.stopped, "link", "publisher", "published"),
    publishFailed: num(input.stopped, "link", "publisher", "failed"),
    /**
     * Messages in PEG_SAMPLES beyond published - dropped: publishes the link counted as dropped because their ack did
     * not come in time, which JetStream had stored all the same (0 when the books close).
     */
    storedDespiteDropped: fj.samples - (published - fs.dropped),
  };

  // Rates. Committed: rows by their commit instant; during intake = committed by the cut-off over the intake time.
  const committed = input.rowGroups.filter((g): g is RowGroup & { commitMs: number } => g.commitMs !== null);
  const committedBy = (from: number, to: number) => committed.filter((g) => g.commitMs >= from && g.commitMs < to).reduce((a, g) => a + g.n, 0);
  const lastCommit = committed.reduce((a, g) => Math.max(a, g.commitMs), -Infinity);
  const rates = {
    nominal: (config.assets * 1000) / config.tickMs,
    offered: offered / intakeS,
    committedDuringIntake: committedBy(-Infinity, tCut + 1) / intakeS,
    committedUntilDrained: rows / ((lastCommit - t0) / 1000),
    untilDrainedS: (lastCommit - t0) / 1000,
  };

  // Projection lag: commit instant - sample instant, per raw row of a sample (seq 1).
  const lagPairs = (gs: readonly (RowGroup & { commitMs: number })[]) => gs.filter((g) => g.seq === 1).map((g) => [g.commitMs - g.tsMs, g.n] as const);
  const lagOf = (gs: readonly (RowGroup & { commitMs: number })[]) => {
    const pairs = lagPairs(gs);
    return { p50: weightedPercentile(pairs, 50), p90: weightedPercentile(pairs, 90), p99: weightedPercentile(pairs, 99), max: maxOf(pairs.map(([v]) => v)) };
  };
  const lag = { ...lagOf(committed), rowsWithoutCommitTime: rows - committed.reduce((a, g) => a + g.n, 0) };
  const intakeFresh = polls.freshness.filter((f) => f.t >= t0 && f.t <= tCut && f.newestMs !== null).map((f) => f.t - f.newestMs!);
  const freshness = { p50: percentile(intakeFresh, 50), p99: percentile(intakeFresh, 99), max: maxOf(intakeFresh), polls: intakeFresh.length };

  // Per window of the intake, then the drain.
  const scrapeAt = (t: number): Scrape | undefined => (t <= t0 ? undefined : t >= tCut ? input.finalScrape : at(polls.scrapes, t));
  // Counters start at 0 with intake; NaN where no poll answered before the instant (the service too busy to).
  const offeredAt = (t: number) => {
    const s = scrapeAt(t);
    return t <= t0 ? 0 : s === undefined ? NaN : s.accepted + s.skipped + s.unknown;
  };
  const droppedAt = (t: number) => (t <= t0 ? 0 : (scrapeAt(t)?.dropped ?? NaN));
  const seqAt = (t: number) => (t <= t0 ? 0 : (at(polls.streams, t)?.samples ?? NaN));
  // CPU over the 10 s memory polls that fall within the window.
  const cpuBetween = (from: number, to: number) => {
    const inside = polls.memory.filter((m) => m.t >= from && m.t <= to);
    const a = inside[0];
    const b = inside[inside.length - 1];
    if (a === undefined || b === undefined || b.t <= a.t) return { service: NaN, machine: NaN };
    return { service: (b.cpuS - a.cpuS) / ((b.t - a.t) / 1000), machine: (b.machineBusy - a.machineBusy) / (b.machineTotal - a.machineTotal) };
  };
  const windows = [];
  for (let from = t0, to = t0; from < tCut; from = to) {
    // The last window runs to the cut-off (which comes a tick boundary after the set time): no sliver of a window.
    to = tCut - (from + W) < W / 2 ? tCut : from + W;
    const s = (to - from) / 1000;
    const inW = <T extends { t: number }>(xs: readonly T[]) => xs.filter((x) => x.t >= from && x.t < to);
    const ready = inW(polls.ready);
    const backlog = at(polls.streams, to);
    const cpu = cpuBetween(from, to);
    windows.push({
      fromS: (from - t0) / 1000,
      toS: (to - t0) / 1000,
      offeredPerS: (offeredAt(to) - offeredAt(from)) / s,
      jetStreamPerS: (seqAt(to) - seqAt(from)) / s,
      committedPerS: committedBy(from, to) / s,
      dropped: droppedAt(to) - droppedAt(from),
      lag: lagOf(committed.filter((g) => g.tsMs >= from && g.tsMs < to)),
      queueMax: inW(polls.scrapes).reduce((a, x) => Math.max(a, x.queue), 0),
      backlogAtEnd: backlog === undefined ? NaN : backlog.pending + backlog.ackPending,
      readyNon200: ready.filter((r) => r.status !== 200).length,
      readyPolls: ready.length,
      serviceCpu: cpu.service,
      machineCpu: cpu.machine,
      rssAtEnd: at(polls.memory, to)?.rss ?? NaN,
    });
  }
  const drainEnd = Number.isNaN(input.drainedAt) ? Math.max(lastCommit, tCut) : input.drainedAt;
  const drain = {
    seconds: (drainEnd - tCut) / 1000,
    committed: committedBy(tCut + 1, Infinity),
    jetStreamAppended: fj.samples - (at(polls.streams, tCut)?.samples ?? NaN),
    backlogAtCut: (() => {
      const b = at(polls.streams, tCut);
      return b === undefined ? NaN : b.pending + b.ackPending;
    })(),
    queueAtCut: at(polls.scrapes, tCut)?.queue ?? NaN,
  };

  // Memory over the intake: the first span against the last (a minute, or a third of a shorter run), and the slope.
  const span = Math.min(60_000, (tCut - t0) / 3);
  const mem = polls.memory.filter((m) => m.t >= t0 && m.t <= tCut + 1000);
  const rssIn = (a: number, b: number) => mean(mem.filter((m) => m.t >= a && m.t <= b).map((m) => m.rss));
  const heapIn = (a: number, b: number) => mean(mem.filter((m) => m.t >= a && m.t <= b && Number.isFinite(m.heapUsed)).map((m) => m.heapUsed));
  const fitted = mem.filter((m) => m.t >= t0 + span);
  const rssFit = fit((fitted.length >= 3 ? fitted : mem).map((m) => [(m.t - t0) / 3_600_000, m.rss / MiB] as const));
  const heapFit = fit((fitted.length >= 3 ? fitted : mem).filter((m) => Number.isFinite(m.heapUsed)).map((m) => [(m.t - t0) / 3_600_000, m.heapUsed / MiB] as const));
  // The first span is the warm-up (the service's heap and queues filling from rest): flatness compares the second.
  const rssFirst = rssIn(t0 + span, t0 + 2 * span);
  const rssLast = rssIn(tCut - span, tCut + 1000);
  const growth = rssLast - rssFirst;
  const memory = {
    spanS: span / 1000,
    rssFirstMiB: rssFirst / MiB,
    rssLastMiB: rssLast / MiB,
    rssPeakMiB: mem.reduce((a, m) => Math.max(a, m.rss), 0) / MiB,
    rssSlopeMiBPerHour: rssFit.slope,
    rssR2: rssFit.r2,
    heapFirstMiB: heapIn(t0 + span, t0 + 2 * span) / MiB,
    heapLastMiB: heapIn(tCut - span, tCut + 1000) / MiB,
    heapSlopeMiBPerHour: heapFit.slope,
    /**
     * Flat: the last span's mean RSS at most max(32 MiB, 10 %) above the second span's (the first is the warm-up: the
     * young generation, up to three 64 MiB semi-spaces, the queues and the first ticks' allocations). Judged only when
     * intake lasted at least four minutes (null otherwise).
     */
    flat: tCut - t0 < 240_000 ? null : Number.isFinite(growth) && growth <= Math.max(32 * MiB, 0.1 * rssFirst),
    series: mem.map((m) => ({ s: Math.round((m.t - t0) / 1000), rssMiB: +(m.rss / MiB).toFixed(1), heapUsedMiB: +(m.heapUsed / MiB).toFixed(1) })),
  };

  // /readyz and the publish queue.
  const readyAll = polls.ready.filter((r) => r.t >= t0);
  // Until its first 200 the service is still starting (its first snapshots are being projected): counted apart.
  const firstReadyAt = readyAll.find((r) => r.status === 200)?.t ?? Infinity;
  const readyIntake = readyAll.filter((r) => r.t <= tCut && r.t >= firstReadyAt);
  const reasons = new Map<string, { count: number; firstS: number; example: string }>();
  let longest = 0;
  let runFrom: number | null = null;
  for (const r of readyAll) {
    if (r.status === 200) {
      if (runFrom !== null) longest = Math.max(longest, r.t - runFrom);
      runFrom = null;
      continue;
    }
    runFrom ??= r.t;
    // Each part of the message, its numbers blanked, so one reason with changing counts is one line.
    for (const part of r.message.split("; ")) {
      const key = `${r.status} ${part.replace(/\d+/g, "N")}`;
      const e = reasons.get(key) ?? { count: 0, firstS: (r.t - t0) / 1000, example: `${r.status} ${part}` };
      e.count++;
      reasons.set(key, e);
    }
  }
  if (runFrom !== null) longest = Math.max(longest, (readyAll[readyAll.length - 1]?.t ?? runFrom) - runFrom);
  const readyz = {
    polls: readyAll.length,
    non200: readyAll.filter((r) => r.status !== 200).length,
    everReady: Number.isFinite(firstReadyAt),
    non200BeforeFirstReady: readyAll.filter((r) => r.t < firstReadyAt).length,
    non200DuringIntake: readyIntake.filter((r) => r.status !== 200).length,
    pollsDuringIntake: readyIntake.length,
    firstNon200S: (() => {
      const f = readyAll.find((r) => r.status !== 200);
      return f === undefined ? null : (f.t - t0) / 1000;
    })(),
    longestNon200S: longest / 1000,
    answerMsP99: percentile(readyAll.map((r) => r.ms), 99),
    reasons: [...reasons.entries()].map(([key, v]) => ({ key, ...v })).sort((a, b) => b.count - a.count),
  };
  const queueValues = polls.scrapes.filter((s) => s.t >= t0 && s.t <= tCut).map((s) => s.queue);
  const queue = {
    p50: percentile(queueValues, 50),
    p99: percentile(queueValues, 99),
    max: queueValues.reduce((a, b) => Math.max(a, b), 0),
    cap: queueCap,
    atCapShare: queueValues.length === 0 ? NaN : queueValues.filter((q) => q >= queueCap).length / queueValues.length,
    loopLagP99MaxMs: maxOf(polls.scrapes.filter((s) => s.t >= t0 && s.t <= tCut).map((s) => s.loopLagP99Ms)),
  };

  const last = windows[windows.length - 1];
  const keptUp = checks.nothingDropped && readyz.everReady && readyz.non200DuringIntake === 0 && checks.drained && last !== undefined && last.lag.p99 <= config.maxLagMs;
  const service = {
    servingMs: input.servingMs,
    readyMs: input.readyMs,
    stopMs: num(input.stopped, "stopMs"),
    exit: input.exit,
    projected: (input.stopped as { projected?: unknown } | null)?.projected ?? null,
    warnings: input.logs.filter((l) => l.level === "warn"),
    errors: input.logs.filter((l) => l.level === "error"),
  };

  const round = (x: number) => (Number.isFinite(x) ? Math.round(x) : null);
  const summary = {
    bench: "throughput",
    assets: config.assets,
    tickMs: config.tickMs,
    seconds: config.seconds,
    intakeS,
    ...counts,
    checks,
    keptUp,
    rates: { nominal: round(rates.nominal), offered: round(rates.offered), committedDuringIntake: round(rates.committedDuringIntake), committedUntilDrained: round(rates.committedUntilDrained) },
    windows: windows.map((w) => ({ fromS: w.fromS, offeredPerS: round(w.offeredPerS), committedPerS: round(w.committedPerS), dropped: w.dropped, lagP50Ms: w.lag.p50, lagP99Ms: w.lag.p99, queueMax: w.queueMax })),
    drain,
    lagMs: lag,
    freshnessMs: freshness,
    memory: { ...memory, series: memory.series },
    readyz: { ...readyz, reasons: readyz.reasons.map((r) => `${r.example} (x${r.count})`) },
    queue,
    service: { servingMs: service.servingMs, readyMs: round(service.readyMs), stopMs: round(service.stopMs), exit: service.exit, warnings: service.warnings.map((w) => `${w.msg} (x${w.count})`), errors: service.errors.map((w) => `${w.msg} (x${w.count})`) },
  };
  return { config, counts, checks, rates, lag, freshness, windows, drain, memory, readyz, queue, keptUp, service, summary };
}

export type Analysis = ReturnType<typeof analyse>;
