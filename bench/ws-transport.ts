/**
 * The baseline of the WebSocket benchmark (bench/ws.bench.ts): the `/v1/ws` protocol served by the `ws` npm package
 * instead of uWebSockets.js, driving the very same WsHub (src/http/ws/hub.ts), so only the transport differs.
 *
 * Topics are a Map<topic, Set<WebSocket>> kept in JavaScript; `publish` encodes the text once and sends the same
 * Buffer as a text frame to every subscriber (what a careful `ws` broadcast does: `ws` has no native pub/sub).
 * Per-connection rules mirror src/http/ws/uws.ts: nothing is sent on a closed socket, frames above the protocol's
 * 16 KiB are refused, no compression. Not production code: no proxy handling (the peer address is the client).
 */
import type { IncomingMessage } from "node:http";
import { WebSocketServer, type WebSocket } from "ws";
import type { WsConnection, WsHub, WsSession, WsTransport } from "../src/http/ws/hub.ts";
import { WS_LIMITS } from "../src/http/ws/protocol.ts";

export interface WsLibServer {
  readonly port: number;
  close(): Promise<void>;
}

/** A WsTransport over `ws` sockets: the hub's topics as sets of sockets. */
export class WsLibTransport implements WsTransport {
  readonly #topics = new Map<string, Set<WebSocket>>();

  publish(topic: string, text: string): void {
    const subs = this.#topics.get(topic);
    if (subs === undefined || subs.size === 0) return;
    const bytes = Buffer.from(text, "utf8");
    for (const socket of subs) if (socket.readyState === socket.OPEN) socket.send(bytes, { binary: false });
  }

  subscribe(socket: WebSocket, topic: string): void {
    let subs = this.#topics.get(topic);
    if (subs === undefined) this.#topics.set(topic, (subs = new Set()));
    subs.add(socket);
  }

  unsubscribe(socket: WebSocket, topic: string): void {
    const subs = this.#topics.get(topic);
    if (subs === undefined) return;
    subs.delete(socket);
    if (subs.size === 0) this.#topics.delete(topic);
  }

  /** The socket closed: out of every topic it was in. */
  drop(socket: WebSocket, topics: ReadonlySet<string>): void {
    for (const t of topics) this.unsubscribe(socket, t);
  }

  connection(socket: WebSocket, topics: Set<string>): WsConnection {
    const open = () => socket.readyState === socket.OPEN;
    return {
      send: (text) => {
        if (open()) socket.send(text);
      },
      subscribe: (topic) => {
        if (!open()) return;
        topics.add(topic);
        this.subscribe(socket, topic);
      },
      unsubscribe: (topic) => {
        topics.delete(topic);
        this.unsubscribe(socket, topic);
      },
      end: (code, reason) => {
        if (open()) socket.close(code, reason);
      },
      bufferedAmount: () => (open() ? socket.bufferedAmount : 0),
    };
  }
}

/** Serves `hub` on ws://host:<port>/v1/ws with the `ws` library (port 0: any free port). */
export function serveWsLib(hub: WsHub, transport: WsLibTransport, opts: { host: string; port: number }): Promise<WsLibServer> {
  const wss = new WebSocketServer({
    host: opts.host,
    port: opts.port,
    path: "/v1/ws",
    perMessageDeflate: false,
    maxPayload: WS_LIMITS.maxPayloadBytes,
    clientTracking: false,
    backlog: 4096,
  });
  const sockets = new Set<WebSocket>();
  wss.on("connection", (socket: WebSocket, req: IncomingMessage) => {
    const ip = req.socket.remoteAddress ?? "unknown";
    const topics = new Set<string>();
    sockets.add(socket);
    const session: WsSession | null = hub.connect(transport.connection(socket, topics), ip);
    socket.on("message", (data, isBinary) => {
      if (session === null) return;
      hub.message(session, isBinary ? null : Buffer.isBuffer(data) ? data.toString("utf8") : Buffer.concat(data as Buffer[]).toString("utf8"));
    });
    socket.on("error", () => socket.terminate());
    socket.once("close", () => {
      sockets.delete(socket);
      transport.drop(socket, topics);
      if (session !== null) hub.disconnect(session);
    });
  });
  return new Promise((resolve, reject) => {
    wss.once("error", reject);
    wss.once("listening", () => {
      const addr = wss.address();
      const port = typeof addr === "object" && addr !== null ? addr.port : 0;
      resolve({
        port,
        close: () =>
          new Promise<void>((r) => {
            for (const s of sockets) s.terminate();
            wss.close(() => r());
          }),
      });
    });
  });
}
