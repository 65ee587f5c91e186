/** GET /v1/ws: the WebSocket live stream. The upgrade itself is handled by uWS (src/http/ws/uws.ts) before routing. */
import { ApiError } from "../errors.ts";
import type { DocumentedRoute } from "./spec.ts";

export function streamRoutes(): DocumentedRoute[] {
  return [
    {
      method: "GET",
      path: "/v1/ws",
      handler: () => {
        throw new ApiError("upgrade_required", "GET /v1/ws is a WebSocket endpoint: send Connection: Upgrade and Upgrade: websocket", {
          headers: { upgrade: "websocket", connection: "Upgrade" },
        });
      },
      spec: {
        summary: "Live state stream (WebSocket)",
        description:
          "Upgrade to a WebSocket (text frames, JSON; addendum D). The server greets with `hello` {seq, server_time, methodology}. " +
          'Client operations: `{"op":"subscribe","assets":["USDC" | "*", ...],"since_seq"?:n}`, `{"op":"unsubscribe","assets":[...]}`, `{"op":"ping"}`. ' +
          "Server messages: `snapshot` per subscribed asset, live `state` (at most 4 per second per asset), `transition` {seq, alert_id, asset, from_state, to_state, discount, ts, receipt_url} " +
          "where seq is the PEG_TRANSITIONS stream sequence (with since_seq the missed transitions of the last 24 h are replayed first, then live, with no gap and no duplicate), " +
          "`ping` heartbeats every 15 s, `pong`, and `error` {error, message} with codes invalid_message, unknown_asset, too_many_assets, too_many_connections, rate_limited, replay_truncated. " +
          "Limits: 20 connections per address, 200 assets per connection, 10 client messages per second; idle connections close after 60 s; a client with more than 1 MiB queued is closed with 1013. " +
          "A plain GET (no upgrade) answers 426 `upgrade_required`. See docs/websocket.md.",
        tags: ["stream"],
        responses: { 101: { schema: null, description: "Switching Protocols: the connection is now a WebSocket." } },
        errors: ["upgrade_required"],
      },
    },
  ];
}
