/**
 * The dashboard's live connection (public/static/ws.js) is the client package's PegStream (one resume
 * implementation) with the pages' additions: the connection indicator's status names, the server clock offset and one
 * message callback. Driven against the service's real WebSocket hub on in-memory sockets and a simulated clock
 * (test/client/hub-server.ts): it subscribes, resumes after a drop and after a server restart with `since_seq`, shows
 * every transition once, backs off up to the dashboard's 10 s, and stops for good. The stream's own behaviour in depth
 * is test/client/stream.test.ts's.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { PegStream } from "@peg-oracle/client";
import { LiveSocket, wsUrl, type Status } from "../../public/static/ws.js";
import { catalog, dropAll, fakeNetwork } from "../client/hub-server.ts";

const T0 = Date.UTC(2026, 10, 21, 12, 0, 0);

function setup(assets: readonly string[] = ["*"]) {
  const { clock, server, sockets, WebSocket, settle: connectAndPump } = fakeNetwork(T0);
  const messages: Record<string, unknown>[] = [];
  const statuses: [Status, { attempt: number; delayMs: number }][] = [];
  let now = T0;
  const live = new LiveSocket({
    url: "ws://oracle.test/v1/ws",
    assets,
    WebSocketImpl: WebSocket,
    timers: clock,
    now: () => now,
    random: () => 1, // no jitter: each delay is its ceiling
    onMessage: (m) => messages.push(m),
    onStatus: (s, d) => statuses.push([s, d]),
  });
  const settle = () => {
    clock.increment(0);
    connectAndPump();
  };
  return {
    clock,
    server,
    live,
    sockets,
    messages,
    statuses,
    settle,
    /** Our wall clock, apart from the server's (the simulated clock). */
    setNow: (ms: number) => void (now = ms),
    types: () => messages.map((m) => m["type"]),
    transitions: () => messages.filter((m) => m["type"] === "transition").map((m) => m["seq"]),
  };
}

describe("wsUrl", () => {
  it("matches the page's protocol", () => {
    expect(wsUrl({ protocol: "http:", host: "localhost:8080" })).toBe("ws://localhost:8080/v1/ws");
    expect(wsUrl({ protocol: "https:", host: "oracle.example" })).toBe("wss://oracle.example/v1/ws");
  });
});

describe("LiveSocket", () => {
  it("is the package's PegStream, created on start (a page without an asset never connects)", () => {
    const t = setup([]);
    expect(t.live.stream).toBeNull();
    t.settle();
    expect(t.sockets).toHaveLength(0);
    const u = setup(["USDC"]);
    u.live.start();
    expect(u.live.stream).toBeInstanceOf(PegStream);
    // No reconnect, resume or heartbeat code of its own: that is PegStream's.
    const src = readFileSync(new URL("../../public/static/ws.js", import.meta.url), "utf8")
      .replace(/\/\*[\s\S]*?\*\//g, "")
      .replace(/^\s*\/\/.*$/gm, "");
    expect(src).toMatch(/^import \{ PegStream \} from "@peg-oracle\/client";$/m);
    expect(src).not.toMatch(/setTimeout|setInterval|since_seq|new WebSocket|WebSocketImpl\(/);
  });

  it("subscribes on open, passes messages on, tracks the server clock", () => {
    const t = setup(["USDC"]);
    t.live.start();
    t.setNow(T0 - 5000); // our clock is 5 s behind the server's
    t.settle();
    expect(t.sockets[0]!.url).toBe("ws://oracle.test/v1/ws");
    expect(t.sockets[0]!.sent[0]).toEqual({ op: "subscribe", assets: ["USDC"] });
    expect(t.statuses.map((s) => s[0])).toEqual(["connecting", "connected"]);
    expect(t.types()).toEqual(["hello", "snapshot"]);
    expect(t.live.clockOffsetMs).toBe(5000);
    // A server clock running ahead (a fast scenario): the estimate follows what it publishes, never backwards.
    const mint = catalog.bySymbol("USDC")!.mint;
    t.clock.increment(1000); // the hub sends at most 4 states a second per asset
    t.server.hub.state({ mint, state: "DRIFT", discount: "0.003", at: T0 + 9000 });
    t.server.pump();
    expect(t.live.clockOffsetMs).toBe(14_000);
    t.setNow(T0); // 5 s later by our clock: the estimate is T0 + 19 s, ahead of the next state's T0 + 10 s
    t.clock.increment(1000);
    t.server.hub.state({ mint, state: "DRIFT", discount: "0.003", at: T0 + 10_000 });
    t.server.pump();
    expect(t.live.clockOffsetMs).toBe(14_000);
    expect(t.types()).toEqual(["hello", "snapshot", "state", "state"]);
  });

  it("resumes after a drop and after a server restart with since_seq: every transition once, in order", () => {
    const t = setup(["*"]);
    t.live.start();
    t.settle();
    t.server.publish("USDC"); // 1
    t.server.pump();
    expect(t.transitions()).toEqual([1]);
    dropAll(t.server);
    expect(t.statuses.at(-1)).toEqual(["reconnecting", { attempt: 1, delayMs: 500 }]);
    t.server.publish("USDT"); // 2: while the dashboard was away
    t.clock.increment(500);
    t.settle();
    expect(t.sockets[1]!.sent[0]).toEqual({ op: "subscribe", assets: ["*"], since_seq: 1 });
    expect(t.transitions()).toEqual([1, 2]);
    t.server.crash();
    t.server.publish("PYUSD"); // 3: stored while the service was down
    t.server.pump();
    t.clock.increment(500);
    t.settle(); // refused: the server is down
    t.server.restart();
    t.clock.increment(1000);
    t.settle();
    expect(t.sockets.at(-1)!.sent[0]).toEqual({ op: "subscribe", assets: ["*"], since_seq: 2 });
    expect(t.transitions()).toEqual([1, 2, 3]);
    expect(t.live.lastSeq).toBe(3);
    expect(t.statuses.at(-1)![0]).toBe("connected");
  });

  it("backs off from 0.5 s doubling to the dashboard's 10 s", () => {
    const t = setup();
    t.live.start();
    t.server.up = false;
    for (let i = 0; i < 8; i++) {
      t.settle();
      t.clock.increment(10_000);
    }
    const delays = t.statuses.filter((s) => s[0] === "reconnecting" && s[1].delayMs > 0).map((s) => s[1].delayMs);
    expect(delays).toEqual([500, 1000, 2000, 4000, 8000, 10000, 10000, 10000]);
  });

  it("passes the server's errors on as error messages", () => {
    const t = setup(["NOPE"]);
    t.live.start();
    t.settle();
    expect(t.messages.find((m) => m["type"] === "error")).toMatchObject({ type: "error", error: "unknown_asset", fatal: true });
    expect(t.statuses.at(-1)![0]).toBe("closed");
  });

  it("stops for good, and a new start resumes where it stopped", () => {
    const t = setup(["USDC"]);
    t.live.start();
    t.settle();
    t.server.publish("USDC");
    t.server.pump();
    t.live.stop();
    expect(t.sockets[0]!.closedByClient).toMatchObject({ code: 1000 });
    expect(t.statuses.at(-1)![0]).toBe("closed");
    t.clock.increment(60_000);
    t.settle();
    expect(t.sockets).toHaveLength(1);
    expect(t.live.lastSeq).toBe(1);
    t.live.start();
    t.settle();
    expect(t.sockets[1]!.sent[0]).toEqual({ op: "subscribe", assets: ["USDC"], since_seq: 1 });
  });
});
