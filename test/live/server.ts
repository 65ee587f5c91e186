/**
 * A loopback HTTP server for the live-adapter tests: random port on 127.0.0.1, every request recorded (with its
 * body and arrival time), responses written by the test's handler. `close()` drops open connections (SSE streams).
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { performance } from "node:perf_hooks";

export interface RecordedRequest {
  readonly method: string;
  readonly url: URL;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  /** performance.now() at arrival. */
  readonly at: number;
  /** 0-based arrival index. */
  readonly n: number;
}

export type Handler = (req: RecordedRequest, res: ServerResponse) => void | Promise<void>;

export interface TestServer {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  readonly requests: RecordedRequest[];
  close(): Promise<void>;
}

export async function startServer(handler: Handler): Promise<TestServer> {
  const requests: RecordedRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const recorded: RecordedRequest = {
        method: req.method ?? "GET",
        url: new URL(req.url ?? "/", "http://127.0.0.1"),
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8"),
        at: performance.now(),
        n: requests.length,
      };
      requests.push(recorded);
      new Promise<void>((resolve) => resolve(handler(recorded, res))).catch((e: unknown) => {
        if (!res.headersSent) res.writeHead(500);
        res.end(String(e));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export function json(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(body);
}

export const delay = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `cond` every 10 ms until true; throws after `timeoutMs` with `what`. */
export async function waitFor(cond: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const start = performance.now();
  while (!cond()) {
    if (performance.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await delay(10);
  }
}

/** A log callback that keeps every line, for asserting that problems were logged. */
export function recordingLog(): { lines: { level: string; msg: string; fields?: Readonly<Record<string, unknown>> }[]; log: (level: string, msg: string, fields?: Readonly<Record<string, unknown>>) => void } {
  const lines: { level: string; msg: string; fields?: Readonly<Record<string, unknown>> }[] = [];
  return {
    lines,
    log: (level, msg, fields) => {
      lines.push(fields === undefined ? { level, msg } : { level, msg, fields });
    },
  };
}
