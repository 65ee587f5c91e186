/** INSPECT_PORT: the actors stream to a local @statelyai/inspect WebSocket bridge (a `ws` server standing in for it). */
import { afterAll, describe, expect, it } from "vitest";
import { WebSocketServer } from "ws";
import { ActorHost } from "../../src/actors/index.ts";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import { statelyInspector } from "../../src/cli/inspect.ts";
import { parseConfig } from "../../src/config.ts";
import { SimulatedClock } from "../../src/clock.ts";
import { D } from "../../src/methodology/index.ts";
import { freePort, waitFor } from "../support/ports.ts";

const catalog = loadShippedCatalog();
const USDC = catalog.bySymbol("USDC")!;
const servers: WebSocketServer[] = [];
afterAll(() => {
  for (const s of servers) s.close();
});

describe("Stately inspection bridge", () => {
  it("INSPECT_PORT is an optional port", () => {
    expect(parseConfig({}).inspectPort).toBeNull();
    expect(parseConfig({ INSPECT_PORT: "8787" }).inspectPort).toBe(8787);
    expect(() => parseConfig({ INSPECT_PORT: "0" })).toThrow(/INSPECT_PORT/);
  });

  it("every actor reports its events and snapshots, with the engine state as plain JSON", async () => {
    const port = await freePort();
    const received: Record<string, unknown>[] = [];
    const wss = new WebSocketServer({ host: "127.0.0.1", port });
    servers.push(wss);
    wss.on("connection", (ws) => ws.on("message", (data) => received.push(JSON.parse(data.toString()) as Record<string, unknown>)));
    const inspector = statelyInspector(port);
    const clock = new SimulatedClock(Date.UTC(2026, 5, 12));
    const host = new ActorHost({ assets: [USDC], clock, gitSha: "", inspect: inspector.inspect });
    host.ingest({ asset: "USDC", ts: clock.now(), intrinsic_usd: new D(1), market_usd: new D("0.99"), intrinsic_sol: null, market_sol: null, cr: null, oracle: {}, intrinsic_stale: false });
    await waitFor(() => received.some((m) => m["type"] === "@xstate.event" && JSON.stringify(m).includes("SAMPLE")), 10_000, "the SAMPLE event");
    expect(received.some((m) => m["type"] === "@xstate.actor")).toBe(true);
    const snapshot = received.filter((m) => m["type"] === "@xstate.snapshot").at(-1)!;
    const text = JSON.stringify(snapshot);
    expect(text).toContain('"asset":"USDC"');
    expect(text).toContain('"committed":"PEGGED"');
    host.stop();
    inspector.stop();
  });
});
