/**
 * A node:http server on a random loopback port for one suite (`describe` file): started in `beforeAll`, every
 * connection closed and the server stopped in `afterAll`. The handler answers every request; tests change what it
 * answers through their own variables.
 */
import { createServer, type RequestListener, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll } from "vitest";

export interface SuiteServer {
  /** `http://127.0.0.1:<port>`, without a trailing slash; read it inside a test or hook (set in `beforeAll`). */
  readonly base: string;
}

export function httpServerForSuite(handler: RequestListener): SuiteServer {
  let server: Server | null = null;
  let base: string | null = null;
  beforeAll(async () => {
    const s = createServer(handler);
    server = s;
    await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    const s = server;
    if (s === null) return;
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  });
  return {
    get base(): string {
      if (base === null) throw new Error("the suite's HTTP server is not listening yet (read `base` inside a test)");
      return base;
    },
  };
}
