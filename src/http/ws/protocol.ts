/**
 * The `/v1/ws` protocol (addendum D): text frames of JSON. Client operations are parsed strictly (anything else is an
 * `invalid_message` error, never a crash); server messages are built here so every transport sends the same bytes.
 */
import type { PegState } from "../../methodology/index.ts";

/** Limits of addendum D. */
export const WS_LIMITS = {
  connectionsPerIp: 20,
  assetsPerConnection: 200,
  messagesPerSecond: 10,
  /** Bytes queued for one client beyond which it is closed with 1013. */
  backpressureBytes: 1024 * 1024,
  heartbeatMs: 15_000,
  idleTimeoutSecs: 60,
  /** Largest client message accepted; a bigger one closes the connection with 1009 (message too big). */
  maxPayloadBytes: 16 * 1024,
  /**
   * Largest client message read at all. Messages above `maxPayloadBytes` up to this size are read so the close can
   * say 1009; uWebSockets refuses bigger frames at their header, without reading them, and can only drop the TCP
   * connection (the client sees 1006). As large as the send budget a client already has (`backpressureBytes`).
   */
  maxReadBytes: 1024 * 1024,
  /** Live state messages per asset per second at most. */
  statesPerSecond: 4,
  /** How far back `since_seq` replays. */
  replayWindowMs: 24 * 3600_000,
} as const;

/** Close codes the server uses. */
export const CLOSE = { policy: 1008, messageTooBig: 1009, tryAgainLater: 1013, goingAway: 1001 } as const;

export type WsErrorCode =
  | "invalid_message"
  | "unknown_asset"
  | "too_many_assets"
  | "too_many_connections"
  | "rate_limited"
  | "replay_truncated"
  | "upstream_unavailable";

export type ClientOp =
  | { readonly op: "subscribe"; readonly assets: readonly string[]; readonly sinceSeq: number | null }
  | { readonly op: "unsubscribe"; readonly assets: readonly string[] }
  | { readonly op: "ping" };

export class ProtocolError extends Error {
  constructor(
    readonly code: WsErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "ProtocolError";
  }
}

const invalid = (message: string) => new ProtocolError("invalid_message", message);

function assetList(v: unknown): string[] {
  if (!Array.isArray(v) || v.length === 0) throw invalid("`assets` must be a non-empty array of symbols (or \"*\")");
  if (v.length > WS_LIMITS.assetsPerConnection + 1) throw new ProtocolError("too_many_assets", `at most ${WS_LIMITS.assetsPerConnection} assets per connection`);
  const out: string[] = [];
  for (const a of v) {
    if (typeof a !== "string" || a.length === 0 || a.length > 64) throw invalid("every entry of `assets` must be a symbol string of 1 to 64 characters");
    out.push(a);
  }
  return out;
}

/** Parses one client text frame. Throws ProtocolError with the code to send back. */
export function parseClientMessage(text: string): ClientOp {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw invalid("messages are JSON objects");
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw invalid("messages are JSON objects");
  const m = v as Record<string, unknown>;
  switch (m["op"]) {
    case "subscribe": {
      const assets = assetList(m["assets"]);
      const since = m["since_seq"];
      if (since !== undefined && since !== null && !(typeof since === "number" && Number.isSafeInteger(since) && since >= 0)) {
        throw invalid("`since_seq` must be a non-negative integer");
      }
      return { op: "subscribe", assets, sinceSeq: typeof since === "number" ? since : null };
    }
    case "unsubscribe":
      return { op: "unsubscribe", assets: assetList(m["assets"]) };
    case "ping":
      return { op: "ping" };
    default:
      throw invalid("`op` must be subscribe, unsubscribe or ping");
  }
}

export interface AssetStateMessage {
  readonly asset: string;
  readonly state: PegState;
  readonly discount: string | null;
  readonly risk_score: number | null;
  readonly updated_at: string | null;
}

export interface TransitionMessage {
  readonly seq: number;
  readonly alert_id: string;
  readonly asset: string;
  readonly from_state: PegState;
  readonly to_state: PegState;
  readonly discount: string;
  readonly ts: string;
  readonly receipt_url: string;
}

export const helloMessage = (seq: number, serverTime: string, methodology: string): string =>
  JSON.stringify({ type: "hello", seq, server_time: serverTime, methodology });

export const snapshotMessage = (seq: number, s: AssetStateMessage): string => JSON.stringify({ type: "snapshot", seq, ...s });

export const stateMessage = (seq: number, s: AssetStateMessage): string => JSON.stringify({ type: "state", seq, ...s });

export const transitionMessage = (t: TransitionMessage): string => JSON.stringify({ type: "transition", ...t });

export const errorMessage = (error: WsErrorCode, message: string): string => JSON.stringify({ type: "error", error, message });

export const PING = JSON.stringify({ type: "ping" });
export const PONG = JSON.stringify({ type: "pong" });
