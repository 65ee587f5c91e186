/**
 * What the live-stream hub (hub.ts) talks to: the transport's connections and topics, a connected client's session,
 * and the states and transitions the feed hands it. The uWS adapter (uws.ts) and the benchmark's `ws`-library
 * transport implement the connection and transport sides.
 */
import type { EpochMs, PegState } from "../../methodology/index.ts";

/** One client connection as the transport exposes it. */
export interface WsConnection {
  send(text: string): void;
  subscribe(topic: string): void;
  unsubscribe(topic: string): void;
  /** Closes with a close frame (code, reason). */
  end(code: number, reason: string): void;
  /** Bytes queued for this client and not yet written to its socket. */
  bufferedAmount(): number;
}

export interface WsTransport {
  /** Sends `text` to every connection subscribed to `topic`. */
  publish(topic: string, text: string): void;
}

/** A connected client: its subscriptions and message budget. */
export interface WsSession {
  readonly conn: WsConnection;
  readonly ip: string;
  all: boolean;
  readonly mints: Set<string>;
  windowStart: number;
  messages: number;
  warned: boolean;
  closed: boolean;
}

/** A published recompute as it arrives on `peg.state.<mint>`. */
export interface LiveState {
  readonly mint: string;
  readonly state: PegState;
  /** d_smooth, wire decimal. */
  readonly discount: string | null;
  readonly at: EpochMs;
}

/** A transition as it arrives on `peg.transition.<mint>` (the receipt's fields the stream carries). */
export interface LiveTransition {
  readonly seq: number;
  readonly alert_id: string;
  readonly mint: string;
  readonly asset: string;
  readonly from_state: PegState;
  readonly to_state: PegState;
  readonly discount: string;
  /** detected_at, RFC 3339. */
  readonly ts: string;
  /** When the stream stored it (epoch ms; default: now): what the 24 h replay window is measured on. */
  readonly at?: EpochMs;
}
