/** The client's parser reads exactly what the server's protocol module builds, and skips what it does not know. */
import { describe, expect, it } from "vitest";
import { errorMessage, helloMessage, PING, PONG, snapshotMessage, stateMessage, transitionMessage } from "../../src/http/ws/protocol.ts";
import { parseServerMessage } from "../../packages/client/src/stream-messages.ts";

const transition = { seq: 7, alert_id: "0286b705-1108-8ea5-b552-264e41e4c095", asset: "USDC", from_state: "DEPEG", to_state: "DRIFT", discount: "0.0026052545553733", ts: "2026-03-11T02:08:30.000Z", receipt_url: "/v1/audit/0286b705-1108-8ea5-b552-264e41e4c095" } as const;
const state = { asset: "USDC", state: "DRIFT", discount: "0.001529415", risk_score: 31, updated_at: "2026-03-10T20:13:00.000Z" } as const;
const empty = { asset: "hyloSOL+", state: "UNKNOWN", discount: null, risk_score: null, updated_at: null } as const;

describe("stream messages", () => {
  it("parses every message the server builds, unchanged", () => {
    expect(parseServerMessage(helloMessage(12, "2026-11-21T12:00:00.000Z", "1.0.0"))).toEqual({ type: "hello", seq: 12, server_time: "2026-11-21T12:00:00.000Z", methodology: "1.0.0" });
    expect(parseServerMessage(transitionMessage(transition))).toEqual({ type: "transition", ...transition });
    expect(parseServerMessage(snapshotMessage(3, state))).toEqual({ type: "snapshot", seq: 3, ...state });
    expect(parseServerMessage(stateMessage(4, empty))).toEqual({ type: "state", seq: 4, ...empty });
    expect(parseServerMessage(errorMessage("replay_truncated", "older than 24 h"))).toEqual({ type: "error", error: "replay_truncated", message: "older than 24 h" });
    expect(parseServerMessage(PING)).toEqual({ type: "ping" });
    expect(parseServerMessage(PONG)).toEqual({ type: "pong" });
    for (const code of ["invalid_message", "unknown_asset", "too_many_assets", "too_many_connections", "rate_limited", "replay_truncated"] as const) {
      expect(parseServerMessage(errorMessage(code, "x"))).toMatchObject({ error: code });
    }
  });

  it("returns null for anything malformed or unknown", () => {
    const bad = [
      "",
      "not json",
      "[]",
      "null",
      JSON.stringify({ type: "news" }),
      JSON.stringify({ ...JSON.parse(transitionMessage(transition)), seq: -1 }),
      JSON.stringify({ ...JSON.parse(transitionMessage(transition)), seq: 1.5 }),
      JSON.stringify({ ...JSON.parse(transitionMessage(transition)), to_state: "MELTDOWN" }),
      JSON.stringify({ ...JSON.parse(transitionMessage(transition)), discount: 0.002 }),
      JSON.stringify({ ...JSON.parse(snapshotMessage(1, state)), risk_score: "31" }),
      JSON.stringify({ type: "error", error: "teapot", message: "x" }),
      JSON.stringify({ type: "hello", seq: "1", server_time: "x", methodology: "1.0.0" }),
    ];
    for (const b of bad) expect(parseServerMessage(b), b).toBeNull();
  });
});
