/**
 * /v1/ws against the running service (real NATS, store, engine and uWebSockets.js), with the `ws` client library:
 * greeting, snapshots, live transitions from a burst, resume with since_seq across a forced disconnect (every
 * transition exactly once), limits, and the 1 MiB backpressure close.
 */
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect as natsConnect } from "@nats-io/transport-node";
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import type { Service } from "../../src/cli/service.ts";
import { PEG_STATES } from "../../src/methodology/index.ts";
import { TOPOLOGY } from "../../src/streams/jetstream/index.ts";
import type { TestNats } from "../support/nats.ts";
import { sleep, waitFor } from "../support/ports.ts";
import { startTestService, type TestService } from "../support/service.ts";

const catalog = loadShippedCatalog();
const USDC = catalog.bySymbol("USDC")!;
let running: TestService;
let nats: TestNats;
let service: Service;
let url: string;
let ended = false;

type Msg = Record<string, unknown> & { type: string };

/** A client that records every message; `next(pred)` waits for a matching one. */
class Client {
  readonly messages: Msg[] = [];
  readonly ws: WebSocket;
  closed: { code: number; reason: string } | null = null;
  #waiters: (() => void)[] = [];

  constructor(address = "127.0.0.1") {
    this.ws = new WebSocket(url, { localAddress: address });
    this.ws.on("message", (data, isBinary) => {
      if (!isBinary) this.messages.push(JSON.parse(data.toString()) as Msg);
      for (const w of this.#waiters.splice(0)) w();
    });
    this.ws.on("close", (code, reason) => {
      this.closed = { code, reason: reason.toString() };
      for (const w of this.#waiters.splice(0)) w();
    });
    this.ws.on("error", () => {});
  }

  send(m: unknown): void {
    this.ws.send(JSON.stringify(m));
  }

  of(type: string): Msg[] {
    return this.messages.filter((m) => m.type === type);
  }

  async until(check: () => boolean, what: string, ms = 20_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise<void>((r) => {
        this.#waiters.push(r);
        setTimeout(r, 50);
      });
    }
  }

  async hello(): Promise<Msg> {
    await this.until(() => this.messages.length > 0 || this.closed !== null, "hello");
    return this.messages[0]!;
  }
}

async function streamSeqs(): Promise<{ first: number; last: number; messages: number }> {
  const nc = await natsConnect({ servers: nats.url });
  try {
    const info = await (await jetstreamManager(nc)).streams.info(TOPOLOGY.transitions.stream);
    return { first: info.state.first_seq, last: info.state.last_seq, messages: info.state.messages };
  } finally {
    await nc.close();
  }
}

beforeAll(async () => {
  // transition-burst: 40 scenario minutes of 12 stables escalating and relaxing; at 100x it lasts about 24 s, so the
  // cut below lands during the burst even on a loaded machine (at 300x, 8 s, the burst could be over before the
  // client had its first 40 transitions).
  const env = { FEED: "scenario:transition-burst", SCENARIO_SPEED: "100" };
  running = await startTestService({ env, catalog, prefix: "peg-ws-", io: { onFeedEnd: () => (ended = true) } });
  ({ service } = running);
  nats = running.nats!;
  url = `ws://127.0.0.1:${service.api.port}/v1/ws`;
}, 120_000);

afterAll(() => running?.stop());

describe("/v1/ws on the running service", () => {
  it("a client that is cut off during the burst and resumes with since_seq has every transition exactly once", async () => {
    const a = new Client();
    const hello = await a.hello();
    expect(hello).toMatchObject({ type: "hello", methodology: "1.0.0" });
    expect(typeof hello["seq"]).toBe("number");
    a.send({ op: "subscribe", assets: ["*"], since_seq: 0 });
    await a.until(() => a.of("transition").length >= 40, "40 transitions");
    // Normally still bursting when the connection is cut; if a slow start let the burst end first, the resume below
    // is still checked the same way (every transition after the cut, once), only from the stream instead of live.
    a.ws.terminate(); // no close handshake: a dropped connection
    // Live states of the engine's recomputes came with them (ROLE=all hands them to its hub in process).
    expect(a.of("state").length).toBeGreaterThan(0);
    for (const m of a.of("state")) {
      expect(m).toMatchObject({ type: "state", state: expect.toBeOneOf([...PEG_STATES]), discount: expect.any(String) });
      expect(catalog.bySymbol(m["asset"] as string), String(m["asset"])).toBeDefined();
    }
    const first = a.of("transition");
    await sleep(500); // transitions keep coming while the client is away
    const lastSeen = Math.max(...first.map((m) => m["seq"] as number));
    const b = new Client();
    await b.hello();
    b.send({ op: "subscribe", assets: ["*"], since_seq: lastSeen });
    await waitFor(() => ended, 60_000, "the burst to end");
    await waitFor(async () => (await streamSeqs()).last === service.api.ws!.seq, 20_000, "the hub to reach the end of the stream");
    const { first: firstSeq, last, messages } = await streamSeqs();
    await b.until(() => Math.max(0, ...b.of("transition").map((m) => m["seq"] as number)) === last, "the last transition");
    const all = [...first, ...b.of("transition")];
    const seqs = all.map((m) => m["seq"] as number);
    const ids = all.map((m) => m["alert_id"] as string);
    expect(messages).toBeGreaterThan(100);
    expect(new Set(ids).size).toBe(ids.length); // no duplicate
    expect(seqs).toEqual(Array.from({ length: last - firstSeq + 1 }, (_, i) => firstSeq + i)); // no gap, in order
    expect(all.length).toBe(messages);
    for (const m of all) {
      expect(m).toMatchObject({ type: "transition", receipt_url: `/v1/audit/${m["alert_id"] as string}` });
      expect(Object.keys(m).sort()).toEqual(["alert_id", "asset", "discount", "from_state", "receipt_url", "seq", "to_state", "ts", "type"]);
    }
    // Snapshots came for every active asset, after the replay and before anything live.
    expect(b.of("snapshot")).toHaveLength(catalog.active.length);
    b.ws.close();
  }, 120_000);

  it("snapshots the subscribed asset, streams its live state, and answers ping", async () => {
    const c = new Client();
    await c.hello();
    // The snapshot carries the hub's seq when it was taken: between the seq before the subscribe and the seq now (a
    // transition still arriving from the burst may move the hub on meanwhile).
    const before = service.api.ws!.seq;
    c.send({ op: "subscribe", assets: ["USDC"] });
    await c.until(() => c.of("snapshot").length === 1, "the snapshot");
    const snapshot = c.of("snapshot")[0]!;
    expect(snapshot).toMatchObject({ type: "snapshot", asset: "USDC" });
    expect(snapshot["seq"]).toBeGreaterThanOrEqual(before);
    expect(snapshot["seq"]).toBeLessThanOrEqual(service.api.ws!.seq);
    c.send({ op: "ping" });
    await c.until(() => c.of("pong").length === 1, "pong");
    c.ws.close();
  });

  it("enforces the limits with error messages", async () => {
    const addr = "127.0.0.77";
    const clients = Array.from({ length: 20 }, () => new Client(addr));
    for (const c of clients) expect((await c.hello()).type).toBe("hello");
    const extra = new Client(addr);
    expect(await extra.hello()).toMatchObject({ type: "error", error: "too_many_connections" });
    await extra.until(() => extra.closed !== null, "the close");
    expect(extra.closed?.code).toBe(1008);
    const c = clients[0]!;
    c.send({ op: "subscribe", assets: Array.from({ length: 300 }, (_, i) => `X${i}`) });
    c.send({ op: "subscribe", assets: ["NOT_A_TOKEN"] });
    c.ws.send("{");
    await c.until(() => c.of("error").length === 3, "three errors");
    expect(c.of("error").map((m) => m["error"])).toEqual(["too_many_assets", "unknown_asset", "invalid_message"]);
    for (const x of clients) x.ws.close();
  });

  it("closes a client that stops reading once more than 1 MiB is queued for it (1013, counted)", async () => {
    const slow = new Client("127.0.0.88");
    await slow.hello();
    slow.send({ op: "subscribe", assets: ["USDC"] });
    await slow.until(() => slow.of("snapshot").length === 1, "the snapshot");
    const socket = (slow.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket;
    socket.pause(); // the client stops reading: the kernel buffers fill, then uWS queues
    const before = service.api.ws!.stats.backpressureCloses;
    // Large transitions on USDC's subject straight into the stream (the projector rejects them; the hub forwards them).
    const nc = await natsConnect({ servers: nats.url });
    const js = jetstream(nc);
    const big = "1".repeat(60_000);
    for (let i = 0; i < 400 && service.api.ws!.stats.backpressureCloses === before; i++) {
      const id = randomUUID();
      await js.publish(`peg.transition.${USDC.mint}`, JSON.stringify({ alert_id: id, mint: USDC.mint, asset: "USDC", from_state: "PEGGED", to_state: "DRIFT", discount: big, detected_at: new Date().toISOString() }), { msgID: id });
    }
    await waitFor(() => service.api.ws!.stats.backpressureCloses > before, 20_000, "the backpressure close");
    await nc.close();
    const metrics = await (await fetch(`http://127.0.0.1:${service.api.metricsPort}/metrics`)).text();
    expect(metrics).toMatch(/peg_oracle_websocket_backpressure_closes_total [1-9]/);
    socket.resume();
    await slow.until(() => slow.closed !== null, "the client to see the close", 30_000);
    expect([1013, 1006]).toContain(slow.closed!.code);
  }, 90_000);
});
