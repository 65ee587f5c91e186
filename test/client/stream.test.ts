/**
 * `PegStream` against the service's real WebSocket hub on in-memory sockets and a simulated clock: subscription and
 * resume with `since_seq`, de-duplication, reconnect backoff with jitter, the heartbeat, server errors, the bounded
 * queue of a slow consumer, closing, and a randomized run of drops, crashes and restarts in which every transition
 * must arrive exactly once and in order.
 */
import type { AddressInfo } from "node:net";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { PegStream, PegStreamError, backoffDelay, streamUrl, type PegStreamEvents, type StreamEvent, type StreamStatus } from "@peg-oracle/client";
import { WebSocketServer } from "ws";
import { FakeSocket, dropAll, fakeNetwork, type StreamSetup } from "./hub-server.ts";

const T0 = Date.UTC(2026, 10, 21, 12, 0, 0);

function setup(opts: StreamSetup & { random?: () => number } = {}) {
  const { clock, server, sockets, settle, streamOptions } = fakeNetwork(T0);
  const stream = new PegStream({
    ...streamOptions(opts),
    random: opts.random ?? (() => 0.5),
    heartbeatTimeoutMs: 40_000,
    pingIntervalMs: 20_000,
  });
  const seen: { [K in keyof PegStreamEvents]: PegStreamEvents[K][] } = { transition: [], snapshot: [], state: [], hello: [], status: [], reconnecting: [], disconnect: [], slow: [], error: [] };
  for (const k of Object.keys(seen) as (keyof PegStreamEvents)[]) stream.on(k, (p) => (seen[k] as unknown[]).push(p));
  // The stream connects on the next turn of its timers: listeners added after construction see it all.
  expect(sockets).toHaveLength(0);
  clock.increment(0);
  expect(seen.status[0]).toEqual({ status: "connecting", attempt: 0, delayMs: 0 });
  return { clock, server, stream, sockets, seen, settle, statuses: () => seen.status.map((s) => s.status) as StreamStatus[] };
}

describe("PegStream: subscribing and resuming", () => {
  it("subscribes on open, delivers snapshots, states and transitions, and resumes after a drop with since_seq", () => {
    const t = setup({ assets: ["USDC", "USDT"] });
    expect(t.sockets[0]!.url).toBe("ws://oracle.test:8080/v1/ws");
    t.server.publish("USDC"); // seq 1, before the client: not replayed without since_seq
    t.settle();
    expect(t.sockets[0]!.sent[0]).toEqual({ op: "subscribe", assets: ["USDC", "USDT"] });
    expect(t.seen.hello).toHaveLength(1);
    expect(t.seen.snapshot.map((s) => [s.asset, s.seq])).toEqual([["USDC", 1], ["USDT", 1]]);
    expect(t.stream.lastSeq).toBe(1);
    expect(t.stream.status).toBe("open");

    t.server.publish("USDT"); // 2
    t.server.publish("PYUSD"); // 3: not subscribed
    t.server.hub.state({ mint: t.server.published[0]!.mint, state: "DRIFT", discount: "0.003", at: t.clock.now() });
    t.server.pump();
    expect(t.seen.transition.map((m) => m.seq)).toEqual([2]);
    expect(t.seen.state.map((s) => [s.asset, s.state, s.seq])).toEqual([["USDC", "DRIFT", 3]]);
    expect(t.stream.lastSeq).toBe(3);

    // The connection drops; transitions go on; the client comes back and asks for what came after 3.
    dropAll(t.server);
    t.server.publish("USDC"); // 4
    t.server.publish("USDT"); // 5
    expect(t.stream.status).toBe("reconnecting");
    t.clock.increment(500); // random 0.5: 375 ms of the first 500 ms ceiling
    t.settle();
    expect(t.sockets[1]!.sent[0]).toEqual({ op: "subscribe", assets: ["USDC", "USDT"], since_seq: 3 });
    expect(t.seen.transition.map((m) => m.seq)).toEqual([2, 4, 5]);
    expect(t.seen.disconnect.map((d) => d.code)).toEqual([1006]);
    t.stream.close();
  });

  it("starts from sinceSeq when given (replay, then snapshots, then live)", () => {
    const t = setup({ sinceSeq: 2 });
    for (const s of ["USDC", "USDT", "USDC", "PYUSD"]) t.server.publish(s);
    t.settle();
    expect(t.sockets[0]!.sent[0]).toEqual({ op: "subscribe", assets: ["*"], since_seq: 2 });
    expect(t.seen.transition.map((m) => [m.seq, m.asset])).toEqual([[3, "USDC"], [4, "PYUSD"]]);
    expect(t.seen.snapshot.length).toBeGreaterThan(60);
    t.stream.close();
  });

  it("drops a transition it already delivered (an API process behind the one the client left)", () => {
    const t = setup();
    t.settle();
    t.server.publish("USDC"); // 1
    t.server.publish("USDC"); // 2
    t.server.pump();
    // A lagging server re-sends 2 and then 3.
    const s = t.sockets[0]!;
    for (const seq of [2, 3]) {
      s.onmessage?.({ data: JSON.stringify({ type: "transition", seq, alert_id: `a-${seq}`, asset: "USDC", from_state: "PEGGED", to_state: "DRIFT", discount: "0.003", ts: new Date(T0).toISOString(), receipt_url: `/v1/audit/a-${seq}` }) });
    }
    expect(t.seen.transition.map((m) => m.seq)).toEqual([1, 2, 3]);
    expect(t.stream.stats.duplicatesDropped).toBe(1);
    t.stream.close();
  });
});

describe("PegStream: reconnecting", () => {
  it("backs off exponentially with equal jitter, and starts over once a server greets it", () => {
    expect(backoffDelay(0, {}, () => 0)).toBe(250);
    expect(backoffDelay(0, {}, () => 0.999999)).toBe(500);
    expect([0, 1, 2, 3, 10].map((n) => backoffDelay(n, { initialMs: 100, maxMs: 1_000 }, () => 1))).toEqual([100, 200, 400, 800, 1_000]);
    fc.assert(
      fc.property(fc.nat(80), fc.double({ min: 0, max: 1, noNaN: true }), (n, r) => {
        const d = backoffDelay(n, { initialMs: 500, maxMs: 30_000 }, () => r);
        const ceiling = Math.min(30_000, 500 * 2 ** n);
        return d >= Math.floor(ceiling / 2) && d <= ceiling;
      }),
    );

    const t = setup({ random: () => 1 });
    t.settle();
    t.server.crash();
    t.server.pump();
    // Down: every attempt is refused; the waits double (random 1: the whole ceiling).
    const waits: number[] = [];
    for (let i = 0; i < 5; i++) {
      const last = t.seen.status.at(-1)!;
      expect(last.status).toBe("reconnecting");
      waits.push(last.delayMs);
      t.clock.increment(last.delayMs);
      t.settle();
    }
    expect(waits).toEqual([500, 1_000, 2_000, 4_000, 8_000]);
    t.server.restart();
    t.clock.increment(t.seen.status.at(-1)!.delayMs);
    t.settle();
    expect(t.stream.status).toBe("open");
    // Greeted: the next outage starts from 500 ms again.
    t.server.crash();
    t.server.pump();
    expect(t.seen.status.at(-1)).toMatchObject({ status: "reconnecting", delayMs: 500 });
    t.stream.close();
  });

  it("replaces a connection that goes silent (heartbeat timeout) and one that never opens, and pings an open one", () => {
    const t = setup();
    t.settle();
    const first = t.sockets[0]!;
    t.clock.increment(20_000);
    t.server.pump();
    // The subscribe and the ping that asks the server to acknowledge it (stream-subscriptions.test.ts), then the heartbeat.
    expect(first.sent.map((m) => m["op"])).toEqual(["subscribe", "ping", "ping"]);
    // The server answers pong, so the connection stays; then it goes silent (half-open TCP: no close event).
    t.clock.increment(30_000);
    expect(t.stream.status).toBe("open");
    t.server.up = false;
    first.inbox.length = 0;
    t.server.open.clear();
    t.clock.increment(60_000);
    expect(first.closedByClient).toEqual({ code: 4001, reason: "heartbeat timeout" });
    expect(t.seen.disconnect.at(-1)).toEqual({ code: 4001, reason: "heartbeat timeout" });
    // The next socket is never accepted nor refused (a black hole): replaced after the same timeout.
    const blackHole = t.sockets.at(-1)!;
    expect(blackHole).not.toBe(first);
    expect(blackHole.readyState).toBe(0);
    t.clock.increment(45_000);
    expect(blackHole.closedByClient?.code).toBe(4001);
    expect(t.sockets.at(-1)).not.toBe(blackHole);
    t.stream.close();
  });
});

describe("PegStream: server errors", () => {
  it("closes on a refused subscription (unknown_asset): the loop throws after the queued events, closed() tells why", async () => {
    const t = setup({ assets: ["USDC", "NOPE"] });
    const it = t.stream[Symbol.asyncIterator]();
    t.settle();
    expect(t.stream.status).toBe("closed");
    await expect(it.next()).rejects.toMatchObject({ name: "PegStreamError", code: "unknown_asset", fatal: true });
    await expect(it.next()).resolves.toEqual({ done: true, value: undefined });
    const why = await t.stream.closed();
    expect(why).toBeInstanceOf(PegStreamError);
    expect(why?.code).toBe("unknown_asset");
    expect(t.sockets[0]!.closedByClient?.code).toBe(1000);
    expect(t.clock.pending).toBe(0);
  });

  it("reports replay_truncated and carries on; retries after too_many_connections", () => {
    const t = setup({ sinceSeq: 0 });
    t.server.hub.coverFrom(5);
    for (let i = 0; i < 6; i++) t.server.publish("USDC");
    t.settle();
    expect(t.seen.error.map((e) => [e.code, e.fatal])).toEqual([["replay_truncated", false]]);
    expect(t.stream.status).toBe("open");
    // Twenty other connections from the same address: the server refuses ours with an error and 1008.
    t.sockets[0]!.close(1000, "test");
    for (let i = 0; i < 20; i++) t.server.hub.connect({ send() {}, subscribe() {}, unsubscribe() {}, end() {}, bufferedAmount: () => 0 }, "10.0.0.1");
    t.sockets[0]!.onclose?.({ code: 1006, reason: "" });
    t.clock.increment(t.seen.status.at(-1)!.delayMs);
    t.settle();
    expect(t.seen.error.map((e) => e.code)).toContain("too_many_connections");
    expect(t.seen.disconnect.at(-1)?.code).toBe(1008);
    expect(t.stream.status).toBe("reconnecting");
    t.stream.close();
  });
});

describe("PegStream: a slow consumer", () => {
  it("pauses the connection past maxBuffered and resumes from the last queued seq once drained: nothing lost or doubled", async () => {
    const t = setup({ assets: ["USDC"], maxBuffered: 5 });
    const it = t.stream[Symbol.asyncIterator]();
    t.settle();
    const got: StreamEvent[] = [];
    got.push((await it.next()).value!); // the snapshot
    for (let i = 0; i < 12; i++) t.server.publish("USDC");
    t.server.pump();
    expect(t.seen.slow).toEqual([{ buffered: 6, lastSeq: 6 }]);
    expect(t.stream.status).toBe("paused");
    expect(t.sockets[0]!.closedByClient).toEqual({ code: 4002, reason: "consumer too slow" });
    // Paused: no reconnect timer runs however long the consumer takes.
    t.clock.increment(600_000);
    expect(t.sockets).toHaveLength(1);
    for (let i = 0; i < 3; i++) got.push((await it.next()).value!);
    expect(t.sockets).toHaveLength(1); // 3 queued: still more than half of 5
    got.push((await it.next()).value!);
    expect(t.sockets).toHaveLength(2); // 2 queued: it reconnects
    t.settle();
    expect(t.sockets[1]!.sent[0]).toEqual({ op: "subscribe", assets: ["USDC"], since_seq: 6 });
    // The replay (7-12) overfills the queue again: the stream pauses as often as it must, and the consumer still
    // gets each transition once.
    const transitions = () => got.filter((e) => e.type === "transition").length;
    let pending = it.next();
    for (let guard = 0; guard < 100 && transitions() < 12; guard++) {
      const r = await Promise.race([pending, new Promise<null>((res) => setTimeout(() => res(null), 5))]);
      if (r === null) {
        t.settle();
        continue;
      }
      if (r.done !== true) got.push(r.value);
      pending = it.next();
    }
    const seqs = got.filter((e) => e.type === "transition").map((e) => e.seq);
    expect(seqs).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    expect(t.stream.stats.pauses).toBeGreaterThanOrEqual(2);
    expect(t.seen.slow.every((s) => s.buffered === 6)).toBe(true);
    t.stream.close();
  });
});

describe("PegStream: closing and construction", () => {
  it("close() ends every loop after its queued events and leaves no timer", async () => {
    const t = setup({ assets: ["USDC"] });
    const it = t.stream[Symbol.asyncIterator]();
    t.settle();
    t.server.publish("USDC");
    t.server.pump();
    t.stream.close();
    t.stream.close();
    expect((await it.next()).value?.type).toBe("snapshot");
    expect((await it.next()).value?.type).toBe("transition");
    expect(await it.next()).toEqual({ done: true, value: undefined });
    expect(await t.stream.closed()).toBeNull();
    expect(t.statuses().at(-1)).toBe("closed");
    expect(t.clock.pending).toBe(0);
    // A loop started after close ends at once.
    const late = t.stream[Symbol.asyncIterator]();
    expect(await late.next()).toEqual({ done: true, value: undefined });
  });

  it("without a WebSocket given or a global one (Node 20), connects through the optional peer `ws`", async () => {
    const g = globalThis as { WebSocket?: unknown };
    const saved = g.WebSocket;
    g.WebSocket = undefined;
    const server = new WebSocketServer({ port: 0, host: "127.0.0.1" });
    await new Promise((r) => server.once("listening", r));
    try {
      const first = new Promise<string>((resolve) => server.once("connection", (socket) => socket.once("message", (m) => resolve(String(m)))));
      const stream = new PegStream({ url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}/v1/ws`, assets: ["USDC"] });
      expect(JSON.parse(await first)).toEqual({ op: "subscribe", assets: ["USDC"] });
      stream.close();
    } finally {
      g.WebSocket = saved;
      await new Promise((r) => server.close(r));
    }
  });

  it("needs a usable URL and assets", () => {
    expect(streamUrl("http://h:8080")).toBe("ws://h:8080/v1/ws");
    expect(streamUrl("https://h/")).toBe("wss://h/v1/ws");
    expect(streamUrl("wss://h/custom/ws")).toBe("wss://h/custom/ws");
    expect(() => streamUrl("ftp://h")).toThrow(TypeError);
    expect(() => new PegStream({ url: "ws://h", WebSocket: FakeSocket, assets: [] })).toThrow(TypeError);
    expect(() => new PegStream({ url: "ws://h", WebSocket: FakeSocket, sinceSeq: -1 })).toThrow(RangeError);
  });
});

describe("PegStream: drops, crashes and restarts in any order", () => {
  type Step = { kind: "publish"; symbol: string; n: number } | { kind: "drop" } | { kind: "crash" } | { kind: "restart" } | { kind: "wait"; ms: number } | { kind: "settle" };
  const step: fc.Arbitrary<Step> = fc.oneof(
    { weight: 5, arbitrary: fc.record({ kind: fc.constant("publish" as const), symbol: fc.constantFrom("USDC", "USDT", "PYUSD"), n: fc.integer({ min: 1, max: 8 }) }) },
    { weight: 2, arbitrary: fc.constant({ kind: "drop" as const }) },
    { weight: 1, arbitrary: fc.constant({ kind: "crash" as const }) },
    { weight: 1, arbitrary: fc.constant({ kind: "restart" as const }) },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant("wait" as const), ms: fc.integer({ min: 0, max: 70_000 }) }) },
    { weight: 4, arbitrary: fc.constant({ kind: "settle" as const }) },
  );

  it("delivers every published transition of the subscribed assets exactly once, in sequence order", () => {
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 60 }), fc.constantFrom(["*"], ["USDC", "PYUSD"]), fc.constantFrom(null, 0), (steps, assets, sinceSeq) => {
        const t = setup({ assets, sinceSeq, random: Math.random });
        for (const s of steps) {
          if (s.kind === "publish") for (let i = 0; i < s.n; i++) t.server.publish(s.symbol);
          else if (s.kind === "drop") dropAll(t.server);
          else if (s.kind === "crash") t.server.crash();
          else if (s.kind === "restart") {
            if (!t.server.up) t.server.restart();
          } else if (s.kind === "wait") t.clock.increment(s.ms);
          else t.settle();
        }
        // Heal: the server comes back and the client catches up.
        if (!t.server.up) t.server.restart();
        for (let i = 0; i < 40 && !(t.stream.status === "open" && t.server.open.size > 0); i++) {
          t.settle();
          t.clock.increment(31_000);
        }
        t.settle();
        expect(t.stream.status).toBe("open");
        // Without sinceSeq the stream starts where the server stood at its first subscription (its first snapshot).
        const from = sinceSeq ?? t.seen.snapshot[0]!.seq;
        const want = t.server.published.filter((p) => p.seq > from && ((assets as readonly string[]).includes("*") || (assets as readonly string[]).includes(p.asset))).map((p) => p.seq);
        expect(t.seen.transition.map((m) => m.seq)).toEqual(want);
        t.stream.close();
      }),
      { numRuns: 150 },
    );
  });
});
