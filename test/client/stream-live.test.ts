/**
 * `PegStream` over a real network connection: the service's WebSocket hub (src/http/ws/hub.ts) behind a `ws`
 * WebSocketServer on a random port, the client on the `ws` package's WebSocket and real timers. What the in-memory
 * tests (stream-subscriptions.test.ts) show on a simulated clock holds on a socket: `connected()` resolves after the
 * snapshots, and `subscribe()` / `unsubscribe()` change what arrives on the same connection, each resolving once the
 * server has applied it.
 */
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket, { WebSocketServer } from "ws";
import { PegStream, type StreamEvent } from "@peg-oracle/client";
import { systemClock } from "../../src/clock.ts";
import { WsHub, type LiveTransition } from "../../src/http/ws/hub.ts";
import { catalog, liveTransition } from "./hub-server.ts";

let server: WebSocketServer;
let hub: WsHub;
let url: string;
let connections = 0;
let seq = 0;

beforeAll(async () => {
  const topicsOf = new Map<WebSocket, Set<string>>();
  hub = new WsHub({
    catalog,
    clock: systemClock,
    transport: {
      publish: (topic, text) => {
        for (const [socket, topics] of topicsOf) if (topics.has(topic)) socket.send(text);
      },
    },
  });
  server = new WebSocketServer({ port: 0, host: "127.0.0.1" });
  server.on("connection", (socket) => {
    connections++;
    const topics = new Set<string>();
    topicsOf.set(socket, topics);
    const session = hub.connect(
      {
        send: (text) => socket.send(text),
        subscribe: (t) => void topics.add(t),
        unsubscribe: (t) => void topics.delete(t),
        end: (code, reason) => socket.close(code, reason),
        bufferedAmount: () => socket.bufferedAmount,
      },
      "127.0.0.1",
    );
    socket.on("message", (data, binary) => {
      if (session !== null) hub.message(session, binary ? null : String(data));
    });
    socket.on("close", () => {
      topicsOf.delete(socket);
      if (session !== null) hub.disconnect(session);
    });
  });
  await new Promise((r) => server.once("listening", r));
  url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/v1/ws`;
});

afterAll(async () => {
  hub.stop();
  for (const c of server.clients) c.terminate();
  await new Promise((r) => server.close(r));
});

function publish(symbol: string): LiveTransition {
  const t = liveTransition(symbol, ++seq, Date.now());
  hub.transition(t);
  return t;
}

async function until(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe("PegStream on a real socket", () => {
  it("connects, then subscribes and unsubscribes on the same connection", async () => {
    const stream = new PegStream({ url, assets: ["USDC"], WebSocket });
    const got: StreamEvent[] = [];
    stream.on("snapshot", (s) => got.push(s));
    stream.on("transition", (t) => got.push(t));
    await stream.connected({ signal: AbortSignal.timeout(5_000) });
    expect(got.map((e) => `${e.type} ${e.asset}`)).toEqual(["snapshot USDC"]);

    await stream.subscribe(["USDT"]);
    expect(got.map((e) => `${e.type} ${e.asset}`)).toEqual(["snapshot USDC", "snapshot USDT"]);
    publish("USDT");
    publish("PYUSD");
    await stream.unsubscribe(["USDC"]);
    publish("USDC");
    const last = publish("USDT");
    await until(() => got.some((e) => e.type === "transition" && e.seq === last.seq), "the last transition");
    expect(got.filter((e) => e.type === "transition").map((e) => `${e.asset} ${e.seq}`)).toEqual([`USDT ${last.seq - 3}`, `USDT ${last.seq}`]);
    await expect(stream.subscribe(["NOPE"])).rejects.toMatchObject({ code: "unknown_asset", fatal: false });
    expect(stream.subscription).toEqual({ all: false, assets: ["USDT"] });
    expect(stream.stats.connections).toBe(1);
    expect(connections).toBe(1);
    stream.close();
    expect(await stream.closed()).toBeNull();
  });
});
