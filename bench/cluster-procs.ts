/**
 * The processes and clients of the cluster benchmark: a role process (`cluster-child.ts`) whose JSON log lines are
 * parsed once, as they arrive (an engine with thousands of assets writes thousands of lines in a failover: reparsing
 * the whole stderr on every poll, as test/support/serve.ts does for 69 assets, would cost more than the engines), and
 * a WebSocket client subscribed to every asset that keeps only the transitions (the state updates of 10,000 assets are
 * counted, not kept).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import WebSocket from "ws";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const CHILD = fileURLToPath(new URL("./cluster-child.ts", import.meta.url));

export type LogLine = Record<string, unknown> & { msg: string; ts: string; at: number };

export interface RoleProcess {
  readonly name: string;
  readonly proc: ChildProcess;
  readonly exited: Promise<number | null>;
  /** Every JSON log line so far, with `at` = its `ts` in epoch ms. */
  readonly lines: LogLine[];
  /** The last 8 kB of stderr, for a failure's message. */
  tail(): string;
  /** Resolves with the first line (from index `from`) that `match` accepts; rejects if the process exits first or after `timeoutMs`. */
  line(match: (l: LogLine) => boolean, timeoutMs: number, what: string, from?: number): Promise<LogLine>;
}

/** Starts a role process; `nodeArgs` go to its node (e.g. `--cpu-prof`, which NODE_OPTIONS does not take). */
export function spawnRole(name: string, env: Record<string, string>, nodeArgs: readonly string[] = []): RoleProcess {
  const proc = spawn(process.execPath, [...nodeArgs, "--import", "tsx", CHILD], {
    cwd: ROOT,
    env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "/tmp", ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  const lines: LogLine[] = [];
  const waiters = new Set<(l: LogLine) => void>();
  let buf = "";
  let tail = "";
  proc.stderr!.on("data", (c: Buffer) => {
    const text = c.toString();
    tail = (tail + text).slice(-8192);
    buf += text;
    let nl: number;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const raw = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (!raw.startsWith("{")) continue;
      try {
        const l = JSON.parse(raw) as LogLine;
        l.at = Date.parse(l.ts);
        lines.push(l);
        for (const w of waiters) w(l);
      } catch {
        // not a log line
      }
    }
  });
  const exited = new Promise<number | null>((r) => proc.once("exit", (code) => r(code)));
  const line = (match: (l: LogLine) => boolean, timeoutMs: number, what: string, from = 0): Promise<LogLine> =>
    new Promise<LogLine>((resolve, reject) => {
      const found = lines.slice(from).find(match);
      if (found !== undefined) return resolve(found);
      const timer = setTimeout(() => done(new Error(`${name}: no ${what} within ${timeoutMs} ms: ${tail.slice(-2000)}`)), timeoutMs);
      const waiter = (l: LogLine) => (match(l) ? done(l) : undefined);
      const done = (r: LogLine | Error) => {
        clearTimeout(timer);
        waiters.delete(waiter);
        if (r instanceof Error) reject(r);
        else resolve(r);
      };
      waiters.add(waiter);
      void exited.then((code) => done(new Error(`${name} exited (${String(code)}) before ${what}: ${tail.slice(-2000)}`)));
    });
  return { name, proc, exited, lines, tail: () => tail, line };
}

export interface WsTransition {
  readonly seq: number;
  readonly alert_id: string;
  /** When the transition was decided (its `ts`, the engine's clock: the wall clock on the simulated market). */
  readonly decided_at: number;
  readonly received_at: number;
  /** `ASSET FROM->TO`, for reading a run's bursts. */
  readonly what: string;
}

/** A client subscribed to `*` from the start of the stream; keeps its transitions, counts the other messages. */
export class TransitionClient {
  readonly transitions: WsTransition[] = [];
  others = 0;
  closed: { code: number; at: number } | null = null;
  readonly #ws: WebSocket;
  constructor(
    readonly name: string,
    url: string,
  ) {
    this.#ws = new WebSocket(url);
    this.#ws.on("message", (data, isBinary) => {
      if (isBinary) return;
      const text = data.toString();
      // Only transitions are parsed: thousands of state updates a second are not.
      if (!text.includes('"type":"transition"')) {
        this.others++;
        return;
      }
      const m = JSON.parse(text) as { type: string; seq: number; alert_id: string; ts: string; asset: string; from_state: string; to_state: string };
      if (m.type === "transition") this.transitions.push({ seq: m.seq, alert_id: m.alert_id, decided_at: Date.parse(m.ts), received_at: Date.now(), what: `${m.asset} ${m.from_state}->${m.to_state}` });
      else this.others++;
    });
    this.#ws.on("open", () => this.#ws.send(JSON.stringify({ op: "subscribe", assets: ["*"], since_seq: 0 })));
    this.#ws.on("close", (code) => (this.closed = { code, at: Date.now() }));
    this.#ws.on("error", () => {});
  }
  close(): void {
    this.#ws.close();
  }
}
