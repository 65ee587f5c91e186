/**
 * The messages of `/v1/ws` (docs/websocket.md) as the client receives them, and their parser. The shapes are the
 * server's (`src/http/ws/protocol.ts`); `test/client/stream-messages.test.ts` parses what that module builds.
 */
import type { components } from "./generated/schema.ts";

export type PegState = components["schemas"]["PegState"];

/** Once, on connect. `seq` is the latest transition sequence the server has seen. */
export interface HelloMessage {
  readonly type: "hello";
  readonly seq: number;
  /** The server's clock (RFC 3339); a scenario feed runs it faster than the wall. */
  readonly server_time: string;
  readonly methodology: string;
}

/** Where an asset stands: `snapshot` once per asset after each subscribe, `state` on every published recompute. */
export interface AssetStateMessage {
  readonly type: "snapshot" | "state";
  /** The latest transition sequence when it was sent. */
  readonly seq: number;
  readonly asset: string;
  /** `UNKNOWN` with nulls before any data, and when the snapshot is over 15 minutes old. */
  readonly state: PegState;
  /** Smoothed discount, a wire decimal string (a fraction: `0.0123` is 123 bps); see `parseDecimal`. */
  readonly discount: string | null;
  readonly risk_score: number | null;
  readonly updated_at: string | null;
}

export interface SnapshotMessage extends AssetStateMessage {
  readonly type: "snapshot";
}

export interface StateMessage extends AssetStateMessage {
  readonly type: "state";
}

/** A published state change: `seq` is its sequence in `PEG_TRANSITIONS`, the key the stream resumes from. */
export interface TransitionMessage {
  readonly type: "transition";
  readonly seq: number;
  readonly alert_id: string;
  readonly asset: string;
  readonly from_state: PegState;
  readonly to_state: PegState;
  /** Smoothed discount at the decision, a wire decimal string. */
  readonly discount: string;
  /** The decision instant (RFC 3339). */
  readonly ts: string;
  /** Relative: `/v1/audit/{alert_id}`. */
  readonly receipt_url: string;
}

/** Error codes the server sends in `error` messages. */
export type StreamServerErrorCode =
  | "invalid_message"
  | "unknown_asset"
  | "too_many_assets"
  | "too_many_connections"
  | "rate_limited"
  | "replay_truncated"
  | "upstream_unavailable";

export interface ServerErrorMessage {
  readonly type: "error";
  readonly error: StreamServerErrorCode;
  readonly message: string;
}

export type ServerMessage =
  | HelloMessage
  | SnapshotMessage
  | StateMessage
  | TransitionMessage
  | ServerErrorMessage
  | { readonly type: "ping" }
  | { readonly type: "pong" };

const PEG_STATES: ReadonlySet<string> = new Set(["PEGGED", "DRIFT", "DEPEG", "CRITICAL", "BLACK_SWAN", "UNKNOWN"] satisfies PegState[]);
const ERROR_CODES: ReadonlySet<string> = new Set([
  "invalid_message",
  "unknown_asset",
  "too_many_assets",
  "too_many_connections",
  "rate_limited",
  "replay_truncated",
  "upstream_unavailable",
] satisfies StreamServerErrorCode[]);

const isSeq = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v >= 0;
const isStr = (v: unknown): v is string => typeof v === "string";
const strOrNull = (v: unknown): v is string | null => v === null || typeof v === "string";
const isState = (v: unknown): v is PegState => typeof v === "string" && PEG_STATES.has(v);

/**
 * Parses one text frame. Returns null for anything that is not a well-formed server message of a known type (a
 * newer server's new message type included): the stream skips those rather than guess.
 */
export function parseServerMessage(text: string): ServerMessage | null {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) return null;
  const m = v as Record<string, unknown>;
  switch (m["type"]) {
    case "transition":
      return isSeq(m["seq"]) && isStr(m["alert_id"]) && isStr(m["asset"]) && isState(m["from_state"]) && isState(m["to_state"]) && isStr(m["discount"]) && isStr(m["ts"]) && isStr(m["receipt_url"])
        ? (m as unknown as TransitionMessage)
        : null;
    case "snapshot":
    case "state":
      return isSeq(m["seq"]) && isStr(m["asset"]) && isState(m["state"]) && strOrNull(m["discount"]) && (m["risk_score"] === null || typeof m["risk_score"] === "number") && strOrNull(m["updated_at"])
        ? (m as unknown as AssetStateMessage as SnapshotMessage | StateMessage)
        : null;
    case "hello":
      return isSeq(m["seq"]) && isStr(m["server_time"]) && isStr(m["methodology"]) ? (m as unknown as HelloMessage) : null;
    case "error":
      return isStr(m["error"]) && ERROR_CODES.has(m["error"]) && isStr(m["message"]) ? (m as unknown as ServerErrorMessage) : null;
    case "ping":
      return { type: "ping" };
    case "pong":
      return { type: "pong" };
    default:
      return null;
  }
}
