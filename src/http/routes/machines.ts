/** Machine inspection: the band machine's definition and one asset's live actor (read from the engine over NATS). */
import { bandMachineDefinition, mermaidOf } from "../../actors/index.ts";
import { CONFIRM_UP_SECS, DECAY_DOWN_SECS } from "../../methodology/index.ts";
import { ApiError } from "../errors.ts";
import type { ReadModel } from "../read-model.ts";
import { BandMachine, MachineInspection, PathParams, type BandMachineBody } from "../schemas/index.ts";
import { activeAsset } from "./common.ts";
import { JSON_TYPE, jsonResult, type DocumentedRoute } from "./spec.ts";

export function bandMachineBody(): BandMachineBody {
  const definition = bandMachineDefinition();
  return {
    id: "band",
    definition,
    mermaid: mermaidOf(definition),
    states: Object.keys(definition["states"] as object) as BandMachineBody["states"],
    dwell: { entry_secs: CONFIRM_UP_SECS, exit_secs: DECAY_DOWN_SECS },
  };
}

export function machineRoutes(rm: ReadModel): DocumentedRoute[] {
  // The definition never changes while the process runs: serialised once.
  const bandText = Buffer.from(JSON.stringify(bandMachineBody()));
  return [
    {
      method: "GET",
      path: "/v1/machines/band",
      handler: () => ({ status: 200, text: bandText, contentType: JSON_TYPE, headers: { "cache-control": "public, max-age=300" } }),
      spec: {
        summary: "The band state machine",
        description: "The XState definition every asset's actor runs (`machine.toJSON()`), a Mermaid `stateDiagram-v2` generated from it, and the dwell windows.",
        tags: ["machines"],
        responses: { 200: BandMachine },
        errors: [],
      },
    },
    {
      method: "GET",
      path: "/v1/assets/{symbol}/machine",
      handler: async (req) => {
        const a = activeAsset(rm, req.params["symbol"] ?? "");
        const r = await rm.machine(a.mint);
        if (r.kind === "unavailable") throw new ApiError("not_ready", `the engine did not answer: ${r.reason}`);
        if (r.kind === "unknown") throw new ApiError("not_found", `no engine runs ${a.symbol}`, { asset: a.symbol });
        return jsonResult(200, r.view, { "cache-control": "no-store" });
      },
      spec: {
        summary: "The live actor of one asset",
        description:
          "Published state, committed band, dwelling candidate and its deadline, gate, last sample and the last 50 events, read from the engine process that runs the asset. 503 `not_ready` when no engine answers within 2 s.",
        tags: ["machines"],
        params: { symbol: PathParams.symbol },
        responses: { 200: MachineInspection },
        errors: ["asset_not_found", "not_found", "not_ready", "invalid_query"],
      },
    },
  ];
}
