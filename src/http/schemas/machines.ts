/** Machine inspection (GET /v1/machines/band, GET /v1/assets/{symbol}/machine). */
import { z } from "zod";
import { Band, component, Decimal, GateName, PegState, Timestamp } from "./common.ts";

const MachineStateName = z.enum(["cold", "PEGGED", "DRIFT", "DEPEG", "CRITICAL", "BLACK_SWAN", "UNKNOWN"]);

export const BandMachine = component(
  "BandMachine",
  z.strictObject({
    id: z.literal("band"),
    definition: z.record(z.string(), z.unknown()).meta({ description: "The machine exactly as XState serialises it (`machine.toJSON()`)." }),
    mermaid: z.string().meta({ description: "A Mermaid `stateDiagram-v2` generated from `definition`." }),
    states: z.array(MachineStateName),
    dwell: z.strictObject({
      entry_secs: z.int32().meta({ description: "How long a worsening candidate band must persist before it commits." }),
      exit_secs: z.int32().meta({ description: "How long an improving candidate band must persist before it commits." }),
    }),
  }),
  "The band state machine every asset runs: one actor per asset, states = published states plus `cold`.",
);

const SampleWireSchema = z
  .object({
    ts: Timestamp,
    asset: z.string(),
    intrinsic_usd: Decimal,
    market_usd: Decimal,
    intrinsic_sol: Decimal.nullable().optional(),
    market_sol: Decimal.nullable().optional(),
    cr: Decimal.nullable().optional(),
    oracle: z.record(z.string(), z.strictObject({ price: Decimal, conf: Decimal, publish_time: Timestamp })).optional(),
    intrinsic_stale: z.boolean().optional(),
  })
  .strict();

export const MachineEvent = component(
  "MachineEvent",
  z.strictObject({
    type: z.enum(["SAMPLE", "DWELL_DUE", "RESUME"]),
    at: Timestamp,
    result: z.enum(["accepted", "skipped"]),
    skip_reason: z.enum(["no_value", "implausible", "missing_cr"]).optional(),
    state: PegState.nullable().meta({ description: "Published state after the event (null before the first decision)." }),
    band: Band.meta({ description: "Committed band after the event." }),
    candidate: Band.nullable(),
    discount: Decimal.nullable().meta({ description: "d_smooth after the event." }),
    transition: z.boolean().meta({ description: "The event changed the published state." }),
  }),
  "One event an asset's actor processed.",
);

export const MachineInspection = component(
  "MachineInspection",
  z.strictObject({
    asset: z.string(),
    mint: z.string(),
    state: MachineStateName.meta({ description: "The actor's machine state: `cold` before its first accepted sample." }),
    published_state: PegState.nullable(),
    committed_band: Band,
    committed_since: Timestamp.nullable(),
    candidate: Band.nullable().meta({ description: "The band dwelling to replace the committed one, if any." }),
    candidate_since: Timestamp.nullable(),
    since: Timestamp.nullable().meta({ description: "When the published state began." }),
    deadline: Timestamp.nullable().meta({ description: "When the dwelling candidate commits if it persists (the armed dwell timer)." }),
    gate: GateName.nullable(),
    discount: Decimal.nullable().meta({ description: "d_smooth after the last accepted sample." }),
    evaluated_at: Timestamp.nullable(),
    last_sample: SampleWireSchema.nullable(),
    events: z.array(MachineEvent).meta({ description: "The last 50 events, oldest first." }),
  }),
  "The live actor of one asset, read from the engine that runs it.",
);

export type BandMachineBody = z.output<typeof BandMachine>;
export type MachineInspectionBody = z.output<typeof MachineInspection>;
