/**
 * `peg-oracle serve` (src/main.ts) as a child process, for tests that start, kill and restart the real CLI. The
 * child gets only PATH, HOME, `LOG_LEVEL=info`, `METRICS_PORT=0` (a free port: tests run side by side) and the given
 * environment; its stderr (one JSON log line per event) is kept, and `serving` resolves at its `{"msg":"serving"}`
 * line (which names `port` and `metrics_port`).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

export interface ServeProcess {
  /** For messages: which process this is. */
  readonly name: string;
  readonly proc: ChildProcess;
  readonly exited: Promise<number | null>;
  /** Resolves at the "serving" log line (never rejects: see `started`). */
  readonly serving: Promise<void>;
  /** Everything written to stderr so far. */
  stderr(): string;
  /** stdout so far (empty unless `stdout: true`). */
  stdout(): string;
  /** The JSON log lines so far (other lines skipped). */
  lines(): Record<string, unknown>[];
  /** Resolves when stderr contains `text`; rejects if the process exits first. */
  waitFor(text: string): Promise<void>;
  /** Resolves once serving; rejects if the process exits first or does not serve within `timeoutMs`. */
  started(timeoutMs?: number): Promise<void>;
}

/** `nodeArgs`: node flags before the script (a scale-out test's are its deploy unit's, `deployedNodeArgs`). */
export function spawnServe(env: Record<string, string>, options: { name?: string; stdout?: boolean; nodeArgs?: readonly string[] } = {}): ServeProcess {
  const name = options.name ?? "service";
  const proc = spawn(process.execPath, [...(options.nodeArgs ?? []), "--import", "tsx", "src/main.ts", "serve"], {
    cwd: ROOT,
    env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "/tmp", LOG_LEVEL: "info", METRICS_PORT: "0", ...env },
    stdio: ["ignore", options.stdout === true ? "pipe" : "ignore", "pipe"],
  });
  let err = "";
  let out = "";
  const waiters: { text: string; resolve: () => void }[] = [];
  proc.stdout?.on("data", (c: Buffer) => (out += c.toString()));
  proc.stderr?.on("data", (c: Buffer) => {
    err += c.toString();
    for (let i = waiters.length - 1; i >= 0; i--) {
      if (err.includes(waiters[i]!.text)) waiters.splice(i, 1)[0]!.resolve();
    }
  });
  const exited = new Promise<number | null>((r) => proc.once("exit", (code) => r(code)));
  const waitFor = (text: string): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      if (err.includes(text)) return resolve();
      waiters.push({ text, resolve });
      void exited.then((code) => reject(new Error(`${name} exited (${String(code)}) before "${text}": ${err.slice(-3000)}`)));
    });
  const serving = waitFor('"msg":"serving"').catch(() => new Promise<void>(() => {}));
  return {
    name,
    proc,
    exited,
    serving,
    stderr: () => err,
    stdout: () => out,
    lines: () =>
      err.split("\n").flatMap((l) => {
        try {
          return [JSON.parse(l) as Record<string, unknown>];
        } catch {
          return [];
        }
      }),
    waitFor,
    started: (timeoutMs = 90_000) => {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${name} did not start within ${timeoutMs} ms: ${err.slice(-3000)}`)), timeoutMs);
      });
      return Promise.race([waitFor('"msg":"serving"'), timeout]).finally(() => clearTimeout(timer));
    },
  };
}
