/**
 * Reading a running service from the outside for the throughput benchmark (its /metrics text, /proc counters) and the
 * small statistics its report needs (weighted percentiles, a least-squares slope, values at instants of a series).
 */
import { readFileSync } from "node:fs";

/** Prometheus text exposition: one value per series, keyed by name plus label set as printed (`a_total{result="x"}`). */
export function parseMetrics(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (line.startsWith("#") || line === "") continue;
    const sp = line.lastIndexOf(" ");
    out.set(line.slice(0, sp), Number(line.slice(sp + 1)));
  }
  return out;
}

/** The sum of every series of `name` whose labels contain `match` (e.g. `result="accepted"`), 0 when none. */
export function metric(m: ReadonlyMap<string, number>, name: string, match = ""): number {
  let sum = 0;
  for (const [k, v] of m) {
    const brace = k.indexOf("{");
    const n = brace < 0 ? k : k.slice(0, brace);
    if (n === name && (match === "" || k.includes(match))) sum += v;
  }
  return sum;
}

/** A process's resident set (bytes, VmRSS) and CPU time used so far (seconds, user + system). */
export function procStatus(pid: number): { rss: number; cpuS: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = Number(/VmRSS:\s+(\d+)\s+kB/.exec(status)?.[1] ?? "NaN");
  // /proc/<pid>/stat: utime and stime (fields 14 and 15, clock ticks), after the parenthesised command name.
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return { rss: kb * 1024, cpuS: (Number(f[11]) + Number(f[12])) / 100 };
}

/** The machine's CPU time so far (clock ticks): busy (everything but idle and iowait) and total, all cores. */
export function machineCpu(): { busy: number; total: number } {
  const line = readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "";
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  const total = v.reduce((a, b) => a + b, 0);
  const idle = (v[3] ?? 0) + (v[4] ?? 0);
  return { busy: total - idle, total };
}

/** Nearest-rank percentile of values with weights (`[value, count]` pairs; need not be sorted). NaN when empty. */
export function weightedPercentile(pairs: readonly (readonly [number, number])[], p: number): number {
  const sorted = [...pairs].sort((a, b) => a[0] - b[0]);
  const total = sorted.reduce((a, [, n]) => a + n, 0);
  if (total === 0) return NaN;
  const rank = Math.max(1, Math.ceil((p / 100) * total));
  let seen = 0;
  for (const [v, n] of sorted) {
    seen += n;
    if (seen >= rank) return v;
  }
  return sorted[sorted.length - 1]![0];
}

/** Nearest-rank percentile of plain values. */
export const percentile = (xs: readonly number[], p: number): number => weightedPercentile(xs.map((x) => [x, 1] as const), p);

/** Least-squares slope of y over x and the fit's r² (NaN with fewer than 3 points). */
export function fit(points: readonly (readonly [number, number])[]): { slope: number; r2: number } {
  const n = points.length;
  if (n < 3) return { slope: NaN, r2: NaN };
  const mx = points.reduce((a, [x]) => a + x, 0) / n;
  const my = points.reduce((a, [, y]) => a + y, 0) / n;
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (const [x, y] of points) {
    sxy += (x - mx) * (y - my);
    sxx += (x - mx) ** 2;
    syy += (y - my) ** 2;
  }
  return { slope: sxy / sxx, r2: syy === 0 ? 1 : (sxy * sxy) / (sxx * syy) };
}

/** The last entry of a time series (ascending `t`) at or before `t`; undefined when there is none. */
export function at<T extends { readonly t: number }>(series: readonly T[], t: number): T | undefined {
  let found: T | undefined;
  for (const s of series) {
    if (s.t > t) break;
    found = s;
  }
  return found;
}

export const mean = (xs: readonly number[]): number => (xs.length === 0 ? NaN : xs.reduce((a, b) => a + b, 0) / xs.length);
