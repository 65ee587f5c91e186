/**
 * The service's real WebSocket hub (src/http/ws/hub.ts) behind in-memory sockets, for driving `PegStream` through
 * drops, crashes and restarts without a network: `FakeSocket` is what the stream constructs; `HubServer` accepts or
 * refuses pending connections, moves frames in both directions when pumped, crashes (every connection drops with
 * 1006) and restarts (a new hub whose ring is back-filled from every transition published, as the service's live feed
 * back-fills from PEG_TRANSITIONS). `fakeNetwork()` sets both up on a simulated clock for one test.
 */
import type { PegStreamOptions, WebSocketLike } from "@peg-oracle/client";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import { SimulatedClock } from "../../src/clock.ts";
import { WsHub, type LiveTransition, type WsConnection, type WsSession } from "../../src/http/ws/hub.ts";

export const catalog = loadShippedCatalog();

type Handler<E> = ((event: E) => void) | null;

export class FakeSocket implements WebSocketLike {
  static server: HubServer | null = null;
  readyState = 0;
  onopen: Handler<unknown> = null;
  onmessage: Handler<{ readonly data: unknown }> = null;
  onclose: Handler<{ readonly code: number; readonly reason: string }> = null;
  onerror: Handler<unknown> = null;
  /** Frames the client sent (parsed), in order. */
  readonly sent: Record<string, unknown>[] = [];
  /** How the client closed it, if it did. */
  closedByClient: { code: number; reason: string } | null = null;
  readonly inbox: string[] = [];
  readonly outbox: string[] = [];
  session: WsSession | null = null;

  constructor(readonly url: string) {
    FakeSocket.server?.pending.push(this);
  }

  send(data: string): void {
    if (this.readyState !== 1) throw new Error("not open");
    this.sent.push(JSON.parse(data) as Record<string, unknown>);
    this.outbox.push(data);
  }

  close(code?: number, reason?: string): void {
    if (this.readyState === 3) return;
    this.readyState = 3;
    this.closedByClient = { code: code ?? 1005, reason: reason ?? "" };
    FakeSocket.server?.clientClosed(this);
  }
}

export class HubServer {
  hub: WsHub;
  up = true;
  readonly pending: FakeSocket[] = [];
  readonly open = new Set<FakeSocket>();
  /** Every transition published, in sequence order (what PEG_TRANSITIONS holds). */
  readonly published: LiveTransition[] = [];
  readonly #toClose: { socket: FakeSocket; code: number; reason: string }[] = [];
  /** Sockets the server closed: what it sent before arrives, then the close event. */
  readonly #closing = new Set<FakeSocket>();
  #seq = 0;

  constructor(readonly clock: SimulatedClock) {
    this.hub = this.#newHub();
    FakeSocket.server = this;
  }

  #newHub(): WsHub {
    const hub = new WsHub({
      catalog,
      clock: this.clock,
      wall: () => this.clock.now(),
      transport: {
        publish: (topic, text) => {
          for (const s of this.open) if (s.session !== null && (s as SocketWithTopics).topics?.has(topic)) s.inbox.push(text);
        },
      },
    });
    return hub;
  }

  /** Opens every pending connection (server up), or refuses them (server down: the client sees 1006). */
  acceptPending(): void {
    for (const socket of this.pending.splice(0)) {
      if (socket.readyState === 3) continue;
      if (!this.up) {
        socket.readyState = 3;
        this.#toClose.push({ socket, code: 1006, reason: "connection refused" });
        continue;
      }
      socket.readyState = 1;
      this.open.add(socket);
      const topics = new Set<string>();
      (socket as SocketWithTopics).topics = topics;
      const conn: WsConnection = {
        send: (text) => {
          if (socket.readyState === 1 && this.open.has(socket)) socket.inbox.push(text);
        },
        subscribe: (t) => void topics.add(t),
        unsubscribe: (t) => void topics.delete(t),
        end: (code, reason) => this.#serverClose(socket, code, reason),
        bufferedAmount: () => 0,
      };
      socket.session = this.hub.connect(conn, "10.0.0.1");
      socket.onopen?.({});
    }
  }

  /** Moves frames both ways until nothing is in flight, and delivers pending close events. */
  pump(): void {
    for (let guard = 0; guard < 10_000; guard++) {
      let moved = false;
      for (const s of [...this.open, ...this.#closing]) {
        while (s.outbox.length > 0 && s.session !== null && this.open.has(s)) {
          moved = true;
          this.hub.message(s.session, s.outbox.shift()!);
        }
        while (s.inbox.length > 0 && s.readyState === 1) {
          moved = true;
          s.onmessage?.({ data: s.inbox.shift()! });
        }
      }
      for (const s of this.#closing) if (s.readyState === 1) s.readyState = 3;
      this.#closing.clear();
      for (const c of this.#toClose.splice(0)) {
        moved = true;
        c.socket.onclose?.({ code: c.code, reason: c.reason });
      }
      if (!moved) return;
    }
    throw new Error("pump did not settle");
  }

  /** Publishes the next transition of `symbol`. */
  publish(symbol: string): LiveTransition {
    const t = liveTransition(symbol, ++this.#seq, this.clock.now());
    this.published.push(t);
    if (this.up) this.hub.transition(t);
    return t;
  }

  /** The process dies: every connection drops (1006), nothing more is sent. */
  crash(): void {
    this.up = false;
    for (const s of [...this.open]) {
      this.open.delete(s);
      if (s.session !== null) this.hub.disconnect(s.session);
      s.inbox.length = 0; // in flight when the process died: lost with the TCP connection
      if (s.readyState !== 3) {
        s.readyState = 3;
        this.#toClose.push({ socket: s, code: 1006, reason: "" });
      }
    }
    this.hub.stop();
  }

  /** A new process: its hub back-fills every stored transition before it serves. */
  restart(): void {
    this.hub = this.#newHub();
    for (const t of this.published) this.hub.transition(t);
    this.up = true;
  }

  clientClosed(socket: FakeSocket): void {
    this.open.delete(socket);
    if (socket.session !== null) this.hub.disconnect(socket.session);
  }

  #serverClose(socket: FakeSocket, code: number, reason: string): void {
    if (!this.open.delete(socket) || socket.readyState === 3) return;
    this.#closing.add(socket);
    this.#toClose.push({ socket, code, reason });
  }
}

type SocketWithTopics = FakeSocket & { topics?: Set<string> };

/** A PEGGED → DRIFT transition of `symbol` (a catalog asset) numbered `seq`, at `at` (ms since the epoch). */
export function liveTransition(symbol: string, seq: number, at: number): LiveTransition {
  const a = catalog.bySymbol(symbol)!;
  return {
    seq,
    alert_id: `00000000-0000-8000-8000-${String(seq).padStart(12, "0")}`,
    mint: a.mint,
    asset: a.symbol,
    from_state: "PEGGED",
    to_state: "DRIFT",
    discount: "0.003",
    ts: new Date(at).toISOString(),
    at,
  };
}

/** Every open connection drops (a network cut: the client sees 1006; the server forgets the session). */
export function dropAll(server: HubServer): void {
  for (const sock of [...server.open]) {
    server.clientClosed(sock);
    sock.readyState = 3;
    sock.onclose?.({ code: 1006, reason: "" });
  }
}

/** One test's in-memory network: a hub server on a simulated clock, and the socket class a client constructs. */
export interface FakeNetwork {
  readonly clock: SimulatedClock;
  readonly server: HubServer;
  /** Every socket the client constructed through `WebSocket`, in order. */
  readonly sockets: FakeSocket[];
  /** The WebSocket constructor to hand the client: a `FakeSocket` that records itself in `sockets`. */
  readonly WebSocket: typeof FakeSocket;
  /** Connects what is pending and moves every frame. */
  settle(): void;
  /**
   * A `PegStream`'s options on this network: `http://oracle.test:8080`, every asset (`["*"]`) and no `sinceSeq`
   * unless given, the recording sockets, the simulated clock's timers and time; the rest is the stream's defaults.
   */
  streamOptions(opts?: StreamSetup): PegStreamOptions;
}

/** What a stream test varies in `FakeNetwork.streamOptions`. */
export interface StreamSetup {
  readonly assets?: readonly string[];
  readonly sinceSeq?: number | null;
  readonly maxBuffered?: number;
}

/** A `HubServer` on a `SimulatedClock` starting at `t0` (ms since the epoch), with a recording socket class. */
export function fakeNetwork(t0: number): FakeNetwork {
  const clock = new SimulatedClock(t0);
  const server = new HubServer(clock);
  const sockets: FakeSocket[] = [];
  class Recorded extends FakeSocket {
    constructor(url: string) {
      super(url);
      sockets.push(this);
    }
  }
  const settle = () => {
    server.acceptPending();
    server.pump();
  };
  const streamOptions = (opts: StreamSetup = {}): PegStreamOptions => ({
    url: "http://oracle.test:8080",
    assets: opts.assets ?? ["*"],
    sinceSeq: opts.sinceSeq ?? null,
    WebSocket: Recorded,
    timers: clock,
    now: () => clock.now(),
    ...(opts.maxBuffered === undefined ? {} : { maxBuffered: opts.maxBuffered }),
  });
  return { clock, server, sockets, WebSocket: Recorded, settle, streamOptions };
}
