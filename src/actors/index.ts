/** Band machines and the actor host: one XState actor per asset, on an injected clock. */
export { bandMachine, type BandContext, type BandEmitted, type BandEvent, type BandInput } from "./band-machine.ts";
export {
  ActorHost,
  type ActorHostOptions,
  type HostAsset,
  type HostEvent,
  type HostSnapshot,
  type IngestResult,
  type StateEvent,
  type TransitionEvent,
} from "./host.ts";
export { assetStateFromJSON, assetStateToJSON, SnapshotFormatError, type AssetStateJSON } from "./persist.ts";
export {
  bandMachineDefinition,
  EVENT_HISTORY,
  EventRing,
  machineView,
  mermaidOf,
  type MachineEventView,
  type MachineView,
  type RecordedEvent,
} from "./inspect.ts";
