/**
 * `/v1/ws` on uWebSockets.js: the hub's topics are uWS pub/sub topics (fan-out in native code). The socket rules:
 * the upgrade copies what it needs synchronously; nothing is sent on a closed socket; queued bytes are capped (the
 * hub closes a client above 1 MiB with 1013; uWS's own cap sits 64 KiB higher so the close frame still fits). A client
 * message over 16 KiB is closed with 1009 here, which is why uWS reads messages up to `maxReadBytes`: at its own cap
 * uWS can only drop the connection without a close frame.
 */
import uws from "uWebSockets.js";
import type { TemplatedApp, WebSocket } from "uWebSockets.js";
import { canonicalSet, DEFAULT_IPV6_PREFIX, rateLimitKey } from "../client-ip.ts";
import { clientAddress } from "../uws-adapter.ts";
import type { WsConnection, WsHub, WsSession, WsTransport } from "./hub.ts";
import { CLOSE, WS_LIMITS } from "./protocol.ts";

interface UserData {
  /** The client's key for the per-address connection limit: its address, an IPv6 one as its prefix (`rateLimitKey`). */
  readonly ip: string;
  session: WsSession | null;
  closed: boolean;
}

export const WS_PATH = "/v1/ws";

/** A transport whose `publish` reaches the app once `attachWs` has bound it. */
export function uwsTransport(): WsTransport & { bind(app: TemplatedApp): void } {
  let app: TemplatedApp | null = null;
  return {
    bind: (a) => (app = a),
    publish: (topic, text) => {
      app?.publish(topic, text, false);
    },
  };
}

function connection(ws: WebSocket<UserData>): WsConnection {
  const data = ws.getUserData();
  return {
    send: (text) => {
      if (!data.closed) ws.send(text, false);
    },
    subscribe: (topic) => {
      if (!data.closed) ws.subscribe(topic);
    },
    unsubscribe: (topic) => {
      if (!data.closed) ws.unsubscribe(topic);
    },
    end: (code, reason) => {
      if (!data.closed) ws.end(code, reason);
    },
    bufferedAmount: () => (data.closed ? 0 : ws.getBufferedAmount()),
  };
}

/** Registers the WebSocket route on `app` (before the catch-all HTTP route). */
export function attachWs(
  app: TemplatedApp,
  hub: WsHub,
  opts: { trustProxy: boolean; trustedProxies?: readonly string[]; /** RATE_LIMIT_IPV6_PREFIX; default 64. */ ipv6Prefix?: number },
): void {
  const trusted = canonicalSet(opts.trustedProxies ?? []);
  app.ws<UserData>(WS_PATH, {
    compression: uws.DISABLED,
    maxPayloadLength: WS_LIMITS.maxReadBytes,
    idleTimeout: WS_LIMITS.idleTimeoutSecs,
    sendPingsAutomatically: true,
    maxBackpressure: WS_LIMITS.backpressureBytes + 64 * 1024,
    upgrade: (res, req, context) => {
      const xff = req.getHeader("x-forwarded-for");
      const address = clientAddress(Buffer.from(res.getRemoteAddressAsText()).toString("latin1"), xff === "" ? undefined : xff, opts.trustProxy, trusted);
      // One IPv6 client holds a whole prefix: keyed by address, it could open unlimited connections by rotating.
      const ip = rateLimitKey(address, opts.ipv6Prefix ?? DEFAULT_IPV6_PREFIX);
      const data: UserData = { ip, session: null, closed: false };
      res.upgrade(data, req.getHeader("sec-websocket-key"), req.getHeader("sec-websocket-protocol"), req.getHeader("sec-websocket-extensions"), context);
    },
    open: (ws) => {
      const data = ws.getUserData();
      data.session = hub.connect(connection(ws), data.ip);
    },
    message: (ws, message, isBinary) => {
      const data = ws.getUserData();
      if (data.session === null || data.closed) return;
      if (message.byteLength > WS_LIMITS.maxPayloadBytes) {
        ws.end(CLOSE.messageTooBig, `message too big: at most ${WS_LIMITS.maxPayloadBytes} bytes`);
        return;
      }
      hub.message(data.session, isBinary ? null : Buffer.from(message).toString("utf8"));
    },
    close: (ws) => {
      const data = ws.getUserData();
      data.closed = true;
      if (data.session !== null) hub.disconnect(data.session);
    },
  });
}
