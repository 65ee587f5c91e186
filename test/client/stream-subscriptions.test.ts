/**
 * `PegStream`'s subscription on a live connection, its `connected()` promise and its `reconnecting` announcements,
 * against the service's real WebSocket hub on in-memory sockets and a simulated clock (hub-server.ts):
 *
 * - `subscribe()` / `unsubscribe()` change what arrives without a new connection, resolve once the server has applied
 *   them (a subscribe's snapshots first), reject a refusal without closing the stream, wait for a connection when
 *   there is none, are sent again when the connection drops under them, and shape every later connection;
 * - "every asset but some" survives a reconnect: the left-out assets' replayed transitions are not delivered;
 * - requests are paced under the server's 10 messages a second, and a `rate_limited` makes the stream set itself up
 *   again on a new connection rather than wait for an answer that will not come;
 * - `connected()` resolves once subscribed (at once when it is), waits through reconnects, and rejects when the
 *   stream closes (a refused subscription, `close()`) or its signal aborts;
 * - `reconnecting` comes exactly once per attempt, with the attempt number and the delay, as the status does;
 * - after any sequence of changes and drops, what the server sends the connection is what `subscription` says.
 */
import fc from "fast-check";
import { describe, expect, expectTypeOf, it } from "vitest";
import { PegStream, PegStreamError, type PegStreamEvents, type StatusChange, type Subscription } from "@peg-oracle/client";
import { catalog, dropAll, fakeNetwork, type FakeSocket, type StreamSetup } from "./hub-server.ts";

const T0 = Date.UTC(2026, 10, 26, 12, 0, 0);

function setup(opts: StreamSetup = {}) {
  const { clock, server, sockets, settle, streamOptions } = fakeNetwork(T0);
  const stream = new PegStream({ ...streamOptions(opts), random: () => 1 });
  const log: string[] = [];
  const events: { [K in keyof PegStreamEvents]?: PegStreamEvents[K][] } = {};
  for (const k of ["transition", "snapshot", "status", "reconnecting", "error", "disconnect"] as const) {
    events[k] = [];
    stream.on(k, (p) => (events[k] as unknown[]).push(p));
  }
  stream.on("transition", (t) => log.push(`transition ${t.asset} ${t.seq}`));
  stream.on("snapshot", (s) => log.push(`snapshot ${s.asset}`));
  clock.increment(0);
  /** Lets settled promises run their callbacks. */
  const flush = () => new Promise<void>((r) => setTimeout(r, 0));
  return { clock, server, stream, sockets, log, events, settle, flush };
}

/** A promise's outcome so far, without waiting for it. */
function track<T>(p: Promise<T>) {
  const s: { state: "pending" | "resolved" | "rejected"; value?: T; error?: unknown } = { state: "pending" };
  p.then(
    (value) => Object.assign(s, { state: "resolved", value }),
    (error: unknown) => Object.assign(s, { state: "rejected", error }),
  );
  return s;
}

describe("PegStream.subscribe / unsubscribe on a live connection", () => {
  it("adds and removes assets on the same connection; each resolves once applied, a subscribe after its snapshot", async () => {
    const t = setup({ assets: ["USDC"] });
    t.settle();
    await t.stream.connected();
    t.server.publish("USDC"); // 1
    t.server.publish("USDT"); // 2: not subscribed yet
    t.server.pump();

    const added = track(t.stream.subscribe(["USDT"]));
    await t.flush();
    expect(added.state).toBe("pending");
    t.server.pump();
    await t.flush();
    expect(added.state).toBe("resolved");
    expect(t.sockets).toHaveLength(1);
    expect(t.sockets[0]!.sent).toEqual([
      { op: "subscribe", assets: ["USDC"] },
      { op: "ping" },
      { op: "subscribe", assets: ["USDT"], since_seq: 1 },
      { op: "ping" },
    ]);
    // Resuming from lastSeq 1, the server replays USDT's transition 2, then its snapshot.
    expect(t.log).toEqual(["snapshot USDC", "transition USDC 1", "transition USDT 2", "snapshot USDT"]);
    expect(t.stream.subscription).toEqual({ all: false, assets: ["USDC", "USDT"] });

    t.server.publish("USDT"); // 3
    t.server.pump();
    expect(t.log.at(-1)).toBe("transition USDT 3");
    t.stream.close();
  });

  it("stops delivering an unsubscribed asset, keeps the others, and later connections subscribe to the result", async () => {
    const t = setup({ assets: ["USDC", "USDT"] });
    t.settle();
    const removed = track(t.stream.unsubscribe(["USDC"]));
    t.server.pump();
    await t.flush();
    expect(removed.state).toBe("resolved");
    t.server.publish("USDC"); // 1
    t.server.publish("USDT"); // 2
    t.server.pump();
    expect(t.events.transition!.map((m) => [m.asset, m.seq])).toEqual([["USDT", 2]]);
    expect(t.stream.subscription).toEqual({ all: false, assets: ["USDT"] });

    dropAll(t.server);
    t.server.publish("USDC"); // 3
    t.server.publish("USDT"); // 4
    t.clock.increment(500);
    t.settle();
    expect(t.sockets[1]!.sent[0]).toEqual({ op: "subscribe", assets: ["USDT"], since_seq: 2 });
    expect(t.events.transition!.map((m) => [m.asset, m.seq])).toEqual([["USDT", 2], ["USDT", 4]]);
    t.stream.close();
  });

  it("rejects a refused change with the server's code and carries on, unchanged, on the same connection", async () => {
    const t = setup({ assets: ["USDC"] });
    t.settle();
    const refused = track(t.stream.subscribe(["NOPE", "USDT"]));
    const next = track(t.stream.subscribe(["USDT"]));
    t.server.pump();
    await t.flush();
    expect(refused.state).toBe("rejected");
    expect(refused.error).toBeInstanceOf(PegStreamError);
    expect(refused.error).toMatchObject({ code: "unknown_asset", fatal: false });
    expect(next.state).toBe("resolved"); // the change after it went through
    expect(t.stream.status).toBe("open");
    expect(t.sockets).toHaveLength(1);
    expect(t.events.error).toEqual([]); // a change's refusal goes to its caller, not to the error event
    expect(t.stream.subscription).toEqual({ all: false, assets: ["USDC", "USDT"] });
    await expect(t.stream.subscribe([])).rejects.toThrow(TypeError);
    t.stream.close();
  });

  it("keeps 'every asset but some' across a reconnect: the left-out asset's replayed transitions are not delivered", async () => {
    const t = setup({ assets: ["*"] });
    t.settle();
    const removed = track(t.stream.unsubscribe(["USDC"]));
    t.server.pump();
    await t.flush();
    expect(removed.state).toBe("resolved");
    expect(t.stream.subscription).toEqual({ all: true, except: ["USDC"] });
    t.server.publish("USDC"); // 1
    t.server.publish("USDT"); // 2
    t.server.pump();
    dropAll(t.server);
    const snapshotsBefore = t.events.snapshot!.length;
    t.server.publish("USDC"); // 3: replayed by the server to a "*" subscription, skipped by the client
    t.server.publish("PYUSD"); // 4
    t.clock.increment(500);
    t.settle();
    await t.stream.connected();
    expect(t.sockets[1]!.sent).toEqual([{ op: "subscribe", assets: ["*"], since_seq: 2 }, { op: "ping" }, { op: "unsubscribe", assets: ["USDC"] }, { op: "ping" }]);
    expect(t.events.transition!.map((m) => [m.asset, m.seq])).toEqual([["USDT", 2], ["PYUSD", 4]]);
    const snapshotsAfter = t.events.snapshot!.slice(snapshotsBefore);
    expect(snapshotsAfter.length).toBeGreaterThan(60);
    expect(snapshotsAfter.some((s) => s.asset === "USDC")).toBe(false);
    t.server.publish("USDC"); // 5: the server has left it out again
    t.server.publish("USDT"); // 6
    t.server.pump();
    expect(t.events.transition!.map((m) => m.seq)).toEqual([2, 4, 6]);
    // Subscribing it again takes it out of the exceptions; the last one back, a subscribe to "*" follows, so the
    // server sends every asset again, listed later or not (it held the list of the others).
    const back = track(t.stream.subscribe(["USDC"]));
    for (let i = 0; i < 3; i++) {
      t.server.pump();
      await t.flush();
    }
    expect(back.state).toBe("resolved");
    expect(t.stream.subscription).toEqual({ all: true, except: [] });
    expect(t.sockets[1]!.sent.slice(4)).toEqual([{ op: "subscribe", assets: ["USDC"], since_seq: 6 }, { op: "ping" }, { op: "subscribe", assets: ["*"], since_seq: 6 }, { op: "ping" }]);
    expect([...(t.sockets[1] as FakeSocket & { topics: Set<string> }).topics]).toContain("all");
    t.stream.close();
  });

  it("applies a change made while disconnected once connected, and sends one again that a drop interrupted", async () => {
    const t = setup({ assets: ["USDC"] });
    const early = track(t.stream.subscribe(["USDT"])); // before the first connection
    t.settle();
    await t.flush();
    expect(early.state).toBe("resolved");
    expect(t.sockets[0]!.sent.map((m) => m["op"])).toEqual(["subscribe", "ping", "subscribe", "ping"]);

    // In flight when the connection drops: not answered, sent again on the next connection after its setup.
    const cut = track(t.stream.subscribe(["PYUSD"]));
    await t.flush();
    expect(t.sockets[0]!.outbox.map((m) => JSON.parse(m) as unknown)).toEqual([{ op: "subscribe", assets: ["PYUSD"], since_seq: 0 }, { op: "ping" }]);
    dropAll(t.server);
    expect(cut.state).toBe("pending");
    t.clock.increment(500);
    t.settle();
    await t.flush();
    expect(cut.state).toBe("resolved");
    expect(t.sockets[1]!.sent.map((m) => [m["op"], m["assets"]])).toEqual([
      ["subscribe", ["USDC", "USDT"]],
      ["ping", undefined],
      ["subscribe", ["PYUSD"]],
      ["ping", undefined],
    ]);
    expect(t.stream.subscription).toEqual({ all: false, assets: ["USDC", "USDT", "PYUSD"] });

    // Closing rejects what is still waiting, and anything asked afterwards.
    t.server.up = false;
    dropAll(t.server);
    const lost = track(t.stream.unsubscribe(["USDT"]));
    t.stream.close();
    await t.flush();
    expect(lost.error).toMatchObject({ name: "PegStreamError", code: "closed" });
    await expect(t.stream.subscribe(["USDC"])).rejects.toMatchObject({ code: "closed" });
  });

  it("paces its requests under the server's 10 messages a second: twenty changes in a row, none ignored", async () => {
    const t = setup({ assets: ["USDC"] });
    t.settle();
    const symbols = ["USDT", "PYUSD", "USDS", "USDe", "hyUSD", "USDG", "sUSD", "USDY", "EURC", "AUSD"];
    const changes = symbols.flatMap((s) => [track(t.stream.subscribe([s])), track(t.stream.unsubscribe([s]))]);
    // 40 messages at no more than 8 in any 1.25 s: about 6 s of the simulated clock.
    for (let i = 0; i < 200 && changes.some((c) => c.state === "pending"); i++) {
      t.server.pump();
      await t.flush();
      t.clock.increment(100);
    }
    expect(changes.map((c) => c.state)).toEqual(changes.map(() => "resolved"));
    expect(t.clock.now() - T0).toBeGreaterThan(5_000);
    // No 1-second window of the server's saw more than 10 of them (it would have answered rate_limited).
    expect(t.events.error).toEqual([]);
    expect(t.sockets).toHaveLength(1);
    expect(t.stream.subscription).toEqual({ all: false, assets: ["USDC"] });
    t.stream.close();
  });

  it("sets itself up again on a new connection when the server ignored a message (rate_limited) it awaits an answer to", async () => {
    const t = setup({ assets: ["USDC"] });
    t.settle();
    const pending = track(t.stream.subscribe(["USDT"]));
    await t.flush();
    // The server drops what we sent and says so.
    const first = t.sockets[0]!;
    first.outbox.length = 0;
    first.onmessage?.({ data: JSON.stringify({ type: "error", error: "rate_limited", message: "at most 10 messages per second" }) });
    expect(first.closedByClient?.code).toBe(4003);
    expect(t.events.error!.map((e) => [e.code, e.fatal])).toEqual([["rate_limited", false]]);
    t.clock.increment(500);
    t.settle();
    await t.flush();
    expect(pending.state).toBe("resolved");
    expect(t.sockets[1]!.sent.map((m) => m["op"])).toEqual(["subscribe", "ping", "subscribe", "ping"]);
    t.stream.close();
  });
});

describe("PegStream.connected()", () => {
  it("resolves once subscribed (the snapshots delivered first), at once when connected, and waits through reconnects", async () => {
    const t = setup({ assets: ["USDC"] });
    const ready = track(t.stream.connected());
    t.server.up = false;
    t.settle(); // refused
    t.clock.increment(500);
    t.settle(); // refused again
    await t.flush();
    expect(ready.state).toBe("pending");
    t.server.up = true;
    t.clock.increment(1_000);
    t.server.acceptPending();
    await t.flush();
    expect(t.stream.status).toBe("open"); // open, but not yet subscribed
    expect(ready.state).toBe("pending");
    t.server.pump();
    await t.flush();
    expect(ready.state).toBe("resolved");
    expect(t.log).toEqual(["snapshot USDC"]);
    await expect(t.stream.connected()).resolves.toBeUndefined();
    // A drop: a new wait until the next connection is set up.
    dropAll(t.server);
    const again = track(t.stream.connected());
    await t.flush();
    expect(again.state).toBe("pending");
    t.clock.increment(500);
    t.settle();
    await t.flush();
    expect(again.state).toBe("resolved");
    t.stream.close();
  });

  it("rejects with the refusal that closed the stream, with `closed` after close(), and with its signal's reason", async () => {
    const refused = setup({ assets: ["NOPE"] });
    const p = refused.stream.connected();
    refused.settle();
    await expect(p).rejects.toMatchObject({ name: "PegStreamError", code: "unknown_asset", fatal: true });
    await expect(refused.stream.connected()).rejects.toMatchObject({ code: "unknown_asset" });

    const t = setup();
    const waiting = t.stream.connected();
    t.stream.close();
    await expect(waiting).rejects.toMatchObject({ code: "closed" });
    await expect(t.stream.connected()).rejects.toMatchObject({ code: "closed" });

    const u = setup();
    u.server.up = false;
    const ac = new AbortController();
    const aborted = u.stream.connected({ signal: ac.signal });
    ac.abort(new Error("gave up"));
    await expect(aborted).rejects.toThrow("gave up");
    await expect(u.stream.connected({ signal: AbortSignal.abort(new Error("already")) })).rejects.toThrow("already");
    u.stream.close();
  });
});

describe("PegStream reconnecting", () => {
  it("is announced exactly once per attempt, with its number and delay, as event and as status", () => {
    const t = setup();
    t.settle();
    t.server.crash();
    t.server.pump();
    for (let i = 0; i < 4; i++) {
      t.clock.increment(t.events.reconnecting!.at(-1)!.delayMs);
      t.settle(); // each attempt is refused
    }
    t.server.restart();
    t.clock.increment(t.events.reconnecting!.at(-1)!.delayMs);
    t.settle();
    expect(t.stream.status).toBe("open");
    // Five attempts (four refused, the fifth connected), each announced once, for the five sockets after the first.
    expect(t.sockets).toHaveLength(6);
    expect(t.events.reconnecting).toEqual([
      { attempt: 1, delayMs: 500 },
      { attempt: 2, delayMs: 1_000 },
      { attempt: 3, delayMs: 2_000 },
      { attempt: 4, delayMs: 4_000 },
      { attempt: 5, delayMs: 8_000 },
    ]);
    const statuses = t.events.status!.filter((s) => s.status === "reconnecting");
    expect(statuses).toEqual(t.events.reconnecting!.map((r) => ({ status: "reconnecting", ...r })));
    expect(t.events.status!.map((s) => s.status)).toEqual(["connecting", "open", "reconnecting", "reconnecting", "reconnecting", "reconnecting", "reconnecting", "open"]);
    t.stream.close();
  });

  it("announces the reconnect that resumes a paused stream once, with no delay", async () => {
    const t = setup({ assets: ["USDC"], maxBuffered: 2 });
    const it = t.stream[Symbol.asyncIterator]();
    t.settle();
    for (let i = 0; i < 3; i++) t.server.publish("USDC");
    t.server.pump();
    expect(t.stream.status).toBe("paused");
    for (let i = 0; i < 3; i++) await it.next();
    expect(t.events.reconnecting).toEqual([{ attempt: 1, delayMs: 0 }]);
    expect(t.events.status!.filter((s) => s.status === "reconnecting")).toHaveLength(1);
    expect(t.sockets).toHaveLength(2);
    t.stream.close();
  });

  it("narrows the status event by outcome: only `reconnecting` has a delay", () => {
    const narrowed = (s: StatusChange) => {
      if (s.status === "reconnecting") expectTypeOf(s.delayMs).toEqualTypeOf<number>();
      else expectTypeOf(s.delayMs).toEqualTypeOf<0>();
    };
    narrowed({ status: "open", attempt: 0, delayMs: 0 });
    // @ts-expect-error: only a reconnect has a delay
    narrowed({ status: "open", attempt: 0, delayMs: 500 });
  });
});

describe("PegStream subscription changes in any order", () => {
  const symbols = ["USDC", "USDT", "PYUSD", "*", "NOPE"] as const;
  type Step = { kind: "subscribe" | "unsubscribe"; assets: string[] } | { kind: "drop" };
  const step: fc.Arbitrary<Step> = fc.oneof(
    { weight: 4, arbitrary: fc.record({ kind: fc.constantFrom("subscribe" as const, "unsubscribe" as const), assets: fc.uniqueArray(fc.constantFrom(...symbols), { minLength: 1, maxLength: 3 }) }) },
    { weight: 1, arbitrary: fc.constant({ kind: "drop" as const }) },
  );

  /** The topics the hub has the connection in (hub-server.ts records them), as symbols; `*` for every asset. */
  function serverSide(t: ReturnType<typeof setup>): Set<string> {
    const sock = [...t.server.open][0] as FakeSocket & { topics: Set<string> };
    const out = new Set<string>();
    for (const topic of sock.topics) {
      if (topic === "all") out.add("*");
      else if (topic.startsWith("a/")) out.add(catalog.byMint(topic.slice(2))!.symbol);
    }
    return out;
  }

  /** What `subscription` says, in the hub's terms (every asset but some is the explicit list of the others). */
  function clientSide(view: Subscription): Set<string> {
    if (!view.all) return new Set(view.assets);
    if (view.except.length === 0) return new Set(["*"]);
    return new Set(catalog.active.map((a) => a.symbol).filter((s) => !view.except.includes(s)));
  }

  it("leaves the server sending exactly what `subscription` says, refused changes changing nothing", async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(["*"], ["USDC"], ["USDT", "PYUSD"]), fc.array(step, { minLength: 1, maxLength: 12 }), async (initial, steps) => {
        const t = setup({ assets: initial });
        t.settle();
        for (const s of steps) {
          if (s.kind === "drop") {
            dropAll(t.server);
            t.clock.increment(30_000);
            t.settle();
            continue;
          }
          const before = t.stream.subscription;
          const change = track(s.kind === "subscribe" ? t.stream.subscribe(s.assets) : t.stream.unsubscribe(s.assets));
          for (let i = 0; i < 50 && change.state === "pending"; i++) {
            t.server.pump();
            await t.flush();
            t.clock.increment(100);
          }
          if (s.assets.includes("NOPE") && !s.assets.includes("*")) {
            // (with "*" the server does not look at the other names)
            expect(change.error).toMatchObject({ code: "unknown_asset", fatal: false });
            expect(t.stream.subscription).toEqual(before);
          } else {
            expect(change.state).toBe("resolved");
          }
          expect(serverSide(t)).toEqual(clientSide(t.stream.subscription));
        }
        expect(t.stream.status).toBe("open");
        expect(t.events.error).toEqual([]);
        t.stream.close();
      }),
      { numRuns: 60 },
    );
  });
});

