import { beforeEach, describe, expect, it } from "vitest";
import { bandMachineDefinition, mermaidOf } from "../../src/actors/index.ts";
import { asset } from "./fixtures.ts";
import { harness, type Harness } from "./helpers.ts";

let h: Harness;
beforeEach(() => {
  h = harness();
});

describe("GET /v1/machines/band", () => {
  it("serves the XState definition and the Mermaid diagram generated from it", async () => {
    const a = await h.get("/v1/machines/band");
    expect(a.status).toBe(200);
    const body = a.body as { id: string; definition: Record<string, unknown>; mermaid: string; states: string[]; dwell: object };
    expect(body.id).toBe("band");
    expect(body.definition).toEqual(bandMachineDefinition());
    expect(body.mermaid).toBe(mermaidOf(bandMachineDefinition()));
    expect(body.states).toEqual(["cold", "PEGGED", "DRIFT", "DEPEG", "CRITICAL", "BLACK_SWAN", "UNKNOWN"]);
    expect(body.dwell).toEqual({ entry_secs: 30, exit_secs: 120 });
  });
});

describe("GET /v1/assets/{symbol}/machine", () => {
  it("answers the engine's live view of the actor", async () => {
    const a = await h.get("/v1/assets/USDC/machine");
    expect(a.status).toBe(200);
    expect(a.headers["cache-control"]).toBe("no-store");
    const v = a.body as Record<string, unknown> & { events: Record<string, unknown>[] };
    expect(v).toMatchObject({ asset: "USDC", mint: asset("USDC").mint, state: "PEGGED", committed_band: "PEGGED", candidate: "CRITICAL" });
    expect(Date.parse(v["deadline"] as string) - Date.parse(v["candidate_since"] as string)).toBe(30_000);
    expect(v.events).toHaveLength(7);
    expect(v.events.at(-1)).toMatchObject({ type: "SAMPLE", result: "skipped", skip_reason: "implausible" });
  });

  it("404 asset_not_found for an unknown symbol, 404 not_found when no engine runs the asset, 503 when none answers", async () => {
    expect((await h.get("/v1/assets/NOPE/machine", 404)).body).toMatchObject({ error: "asset_not_found" });
    h.rm.machines!.delete(asset("USDT").mint);
    const unknown = await h.get("/v1/assets/USDT/machine", 404);
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ error: "not_found", asset: "USDT" });
    h.rm.machines = null;
    const down = await h.get("/v1/assets/USDC/machine", 503);
    expect(down.status).toBe(503);
    expect(down.body).toMatchObject({ error: "not_ready" });
  });
});
