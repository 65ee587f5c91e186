/**
 * What the benchmarks and their service children share: a positive integer setting from the environment, and the
 * JSON log lines on stderr that `peg-oracle serve` writes (src/cli/serve.ts), for a child that runs the service itself.
 */
import type { LogFn } from "../src/streams/jetstream/index.ts";

/** `process.env[name]` as a positive integer, `fallback` when unset; throws on anything else. */
export function positiveInt(name: string, fallback: number): number {
  const v = Number(process.env[name] ?? String(fallback));
  if (!Number.isInteger(v) || v <= 0) throw new Error(`${name} must be a positive integer, got ${process.env[name]}`);
  return v;
}

const LEVELS = { debug: 10, info: 20, warn: 30, error: 40 } as const;

/** One JSON line per event on stderr (`ts`, `level`, `msg`, the fields), from `min` up. */
export function stderrLog(min: keyof typeof LEVELS): LogFn {
  return (level, msg, fields = {}) => {
    if (LEVELS[level] < LEVELS[min]) return;
    process.stderr.write(`${JSON.stringify({ ts: new Date().toISOString(), level, msg, ...fields })}\n`);
  };
}
