/**
 * The HTTP edge over raw sockets (issue 23, item 4; docs/http-edge.md): what the uWS server does with a request
 * byte for byte, seen from a `node:net` socket against the real adapter, pipeline and public routes.
 *
 * Fixed in the adapter: HEAD completes its response, so `Connection: close` closes at once and a kept-alive
 * connection serves the next request (before, the HEAD response stayed pending: the connection was never closed and
 * never timed out, and a request after it was closed unanswered); a `Connection` header that lists `close` among
 * other tokens closes after the response.
 *
 * Decided by the native parser of the pinned build (uWebSockets v20.43, docs/http-edge.md), pinned here so that an
 * upgrade that changes it shows up: a method outside its nine, a request with headers but no Host, or a body with
 * both Transfer-Encoding and Content-Length is closed at once without an answer; a request line or header it cannot
 * parse (HTTP/1.0, HTTP/9.9, a folded header, a header without a colon) is taken for an incomplete request and
 * gets no answer: the connection is closed by the 10 s idle timeout or as soon as 4 KiB are buffered.
 */
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SimulatedClock } from "../../src/clock.ts";
import { createPipeline } from "../../src/http/pipeline.ts";
import { Router } from "../../src/http/router.ts";
import { publicRoutes } from "../../src/http/routes/index.ts";
import { serveUws, wantsClose, type UwsServer } from "../../src/http/uws-adapter.ts";
import { fakeReadModel, NOW } from "../http/fixtures.ts";

let server: UwsServer;

beforeAll(async () => {
  const pipeline = createPipeline({ router: new Router(publicRoutes(fakeReadModel())), clock: new SimulatedClock(NOW), ratePerMinute: 1e9, corsOrigins: [] });
  server = await serveUws(pipeline, { host: "127.0.0.1", port: 0, trustProxy: false });
});
afterAll(() => server?.close());

interface Exchange {
  /** Everything the server wrote (latin1). */
  readonly text: string;
  /** When the server closed the connection (ms after the request was written), or null if still open at `waitMs`. */
  readonly closedAfterMs: number | null;
}

/** Writes `raw` on a fresh connection and collects the answer until the server closes or `waitMs` pass. */
function exchange(raw: string, waitMs = 1_000): Promise<Exchange> {
  return new Promise((resolve, reject) => {
    const socket = connect(server.port, "127.0.0.1");
    let text = "";
    let settled = false;
    let started = 0;
    const finish = (closedAfterMs: number | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ text, closedAfterMs });
    };
    const timer = setTimeout(() => finish(null), waitMs);
    socket.on("data", (d: Buffer) => (text += d.toString("latin1")));
    socket.on("end", () => finish(Date.now() - started));
    socket.on("close", () => finish(Date.now() - started));
    socket.on("error", (e: NodeJS.ErrnoException) => (e.code === "ECONNRESET" ? finish(Date.now() - started) : reject(e)));
    socket.on("connect", () => {
      started = Date.now();
      socket.write(raw, "latin1");
    });
  });
}

/** The responses in `text`: status code, lower-cased headers and body (as long as Content-Length says). */
function responses(text: string, head = false): { status: number; headers: Record<string, string>; body: string }[] {
  const out: { status: number; headers: Record<string, string>; body: string }[] = [];
  let rest = text;
  while (rest.length > 0) {
    const end = rest.indexOf("\r\n\r\n");
    if (end < 0) throw new Error(`incomplete response head: ${JSON.stringify(rest.slice(0, 200))}`);
    const [line, ...fields] = rest.slice(0, end).split("\r\n");
    const headers: Record<string, string> = {};
    for (const f of fields) headers[f.slice(0, f.indexOf(":")).toLowerCase()] = f.slice(f.indexOf(":") + 1).trim();
    const length = head ? 0 : Number(headers["content-length"] ?? 0);
    out.push({ status: Number(line!.split(" ")[1]), headers, body: rest.slice(end + 4, end + 4 + length) });
    rest = rest.slice(end + 4 + length);
  }
  return out;
}

const HOST = "Host: 127.0.0.1\r\n";

describe("HEAD completes its response", () => {
  it("HEAD with Connection: close is answered (GET's Content-Length, no body) and the connection closed at once", async () => {
    const get = responses((await exchange(`GET /v1/assets HTTP/1.1\r\n${HOST}Connection: close\r\n\r\n`)).text);
    const x = await exchange(`HEAD /v1/assets HTTP/1.1\r\n${HOST}Connection: close\r\n\r\n`);
    expect(x.closedAfterMs, "closed within 1 s").not.toBeNull();
    const [head, ...more] = responses(x.text, true);
    expect(more).toEqual([]);
    expect(head!.status).toBe(200);
    expect(head!.headers["content-length"]).toBe(String(Buffer.byteLength(get[0]!.body)));
    expect(head!.body).toBe("");
  });

  it("a kept-alive connection serves the request after a HEAD (pipelined and one after the other)", async () => {
    const pipelined = await exchange(`HEAD /healthz HTTP/1.1\r\n${HOST}\r\nGET /healthz HTTP/1.1\r\n${HOST}Connection: close\r\n\r\n`);
    expect(pipelined.closedAfterMs).not.toBeNull();
    // The HEAD answer has no body: parse it as a head, then the GET after it.
    const end = pipelined.text.indexOf("\r\n\r\n") + 4;
    expect(responses(pipelined.text.slice(0, end), true).map((r) => r.status)).toEqual([200]);
    expect(responses(pipelined.text.slice(end)).map((r) => [r.status, r.body])).toEqual([[200, '{"ok":true}']]);

    const socket = connect(server.port, "127.0.0.1");
    try {
      await new Promise<void>((resolve) => socket.once("connect", resolve));
      let text = "";
      socket.on("data", (d: Buffer) => (text += d.toString("latin1")));
      socket.write(`HEAD /healthz HTTP/1.1\r\n${HOST}\r\n`);
      await until(() => text.includes("\r\n\r\n"));
      const after = text.length;
      socket.write(`GET /healthz HTTP/1.1\r\n${HOST}\r\n`);
      await until(() => text.slice(after).endsWith('{"ok":true}'));
      expect(socket.destroyed).toBe(false);
    } finally {
      socket.destroy();
    }
  });
});

describe("Connection: close", () => {
  it("exactly `close` (any case): answered and closed at once", async () => {
    for (const value of ["close", "Close", "CLOSE"]) {
      const x = await exchange(`GET /healthz HTTP/1.1\r\n${HOST}Connection: ${value}\r\n\r\n`);
      expect(x.closedAfterMs, value).not.toBeNull();
      expect(responses(x.text).map((r) => [r.status, r.body])).toEqual([[200, '{"ok":true}']]);
    }
  });

  it("`close` in a list of tokens: answered with Connection: close and closed at once", async () => {
    for (const value of ["keep-alive, close", "close, TE", "TE,close"]) {
      const x = await exchange(`GET /healthz HTTP/1.1\r\n${HOST}Connection: ${value}\r\n\r\n`);
      expect(x.closedAfterMs, value).not.toBeNull();
      const [r] = responses(x.text);
      expect([r!.status, r!.body, r!.headers["connection"]]).toEqual([200, '{"ok":true}', "close"]);
    }
  });

  it("wantsClose reads the header's tokens", () => {
    for (const v of ["close", "Close", " close ", "keep-alive, close", "close,TE", "upgrade ,CLOSE"]) expect(wantsClose(v), v).toBe(true);
    for (const v of [undefined, "", "keep-alive", "closed", "enclose", "clo se", "keep-alive, upgrade"]) expect(wantsClose(v), String(v)).toBe(false);
  });
});

describe("what the native parser decides (uWebSockets v20.43; docs/http-edge.md)", () => {
  it("a method outside GET POST HEAD PUT DELETE CONNECT OPTIONS TRACE PATCH (case-sensitive) is closed at once, unanswered", async () => {
    const all = await Promise.all(["BREW", "PROPFIND", "get", "M-SEARCH"].map((m) => exchange(`${m} /v1/assets HTTP/1.1\r\n${HOST}\r\n`)));
    for (const x of all) expect(x).toMatchObject({ text: "", closedAfterMs: expect.any(Number) });
  });

  it("no Host among other headers, Transfer-Encoding with Content-Length, a bad Content-Length: closed at once, unanswered", async () => {
    const all = await Promise.all(
      [
        `GET /healthz HTTP/1.1\r\nAccept: */*\r\n\r\n`,
        `POST /v1/me/webhooks HTTP/1.1\r\n${HOST}Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\nabc`,
        `POST /v1/me/webhooks HTTP/1.1\r\n${HOST}Content-Length: 3x\r\n\r\nabc`,
      ].map((raw) => exchange(raw)),
    );
    for (const x of all) expect(x).toMatchObject({ text: "", closedAfterMs: expect.any(Number) });
  });

  it("a request it cannot parse is taken for an incomplete one: no answer, and the connection held past 1 s", async () => {
    const all = await Promise.all(
      [
        `GET /v1/assets HTTP/1.0\r\n${HOST}\r\n`,
        `OPTIONS / HTTP/1.0\r\n\r\n`, // HAProxy's default httpchk
        `GET /v1/assets HTTP/9.9\r\n${HOST}\r\n`,
        `GET /v1/assets HTTP/1.1\r\n${HOST}X-Folded: a\r\n b\r\n\r\n`,
        `GET /v1/assets HTTP/1.1\r\n${HOST}No colon here\r\n\r\n`,
        `GET /v1/assets HTTP/1.1\r\n${HOST}X-Space : b\r\n\r\n`,
        `GET /v1/assets HTTP/1.1\r\n\r\n`,
        `GET /v1/assets HTTP/1.1\n${HOST.replace("\r", "")}\n`,
      ].map((raw) => exchange(raw, 1_200)),
    );
    for (const x of all) expect(x).toEqual({ text: "", closedAfterMs: null });
  });

  it("... until 4 KiB of it are buffered: then closed at once, unanswered", async () => {
    const x = await exchange(`GET /v1/assets HTTP/1.0\r\n${HOST}X-Pad: ${"a".repeat(4096)}\r\n\r\n`);
    expect(x).toMatchObject({ text: "", closedAfterMs: expect.any(Number) });
  });
});

async function until(check: () => boolean, timeoutMs = 2_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 10));
  }
}
