/** NATS JetStream for the engine: topology, publishing with a bounded window, snapshots, consumers, recovery. */
export { embeddedNatsUrlFile, startEmbeddedNats, NatsServerMissingError, NATS_CONF, type EmbeddedNats } from "./embedded.ts";
export { ensureTopology, subjects, TOPOLOGY, type Topology } from "./topology.ts";
export { BoundedPublisher } from "./publisher.ts";
export { PipelinedPublisher, type PipelinedPublisherOptions, type SamplePublisher } from "./pipelined-publisher.ts";
export { SnapshotWriter } from "./snapshots.ts";
export { isTransientNatsError, untilAnswered, type UntilAnsweredOptions } from "./until-answered.ts";
export { ensureDurable, startBatchConsumer, type BatchConsumer, type BatchConsumerOptions, type BatchMessage } from "./consumer.ts";
export { EngineLink, type AckedTransition, type EngineLinkOptions, type LogFn } from "./engine-link.ts";
export {
  applyRecovery,
  BULK_FROM,
  lastTransition,
  readRecovery,
  readRecoveryStates,
  recoverActors,
  type RecoveryOptions,
  type RecoveryRead,
  type RecoverySource,
  type RecoverySummary,
} from "./recovery.ts";
export { sampleMessage, sampleMsgId, type SampleMessage } from "./messages.ts";
export { InspectionUnavailableError, requestMachineView, serveMachineInspection } from "./inspect-service.ts";
export { RecentAlertIds, startLiveFeed, type LiveFeed, type LiveFeedOptions, type LiveSink, type LiveState } from "./live-feed.ts";
export {
  LEASE_BUCKET,
  LEASE_KEYS,
  LeaseConflictError,
  LeaseManager,
  natsLeaseStore,
  planLeases,
  type LeaseHandlers,
  type LeaseManagerOptions,
  type LeasePlan,
  type LeaseRecord,
  type LeaseStore,
  type LeaseValue,
  type LeaseView,
} from "./leases.ts";
export { sharedScenarioNow, startPartition, type Partition, type PartitionIntake, type PartitionOptions } from "./partition.ts";
export { ensureIntakeStream } from "./topology.ts";
export { IntakeConsumer, type IntakeConsumerOptions, type IntakeHold } from "./intake-consumer.ts";
export { IntakeLeader, INTAKE_LEASE_KEY, type IntakeSource } from "./intake-leader.ts";
export { LeaderSpread } from "./leader-spread.ts";
export { LEASE_MAX_STALL_MS, LeaseKeeperThread, type LeaseKeeper } from "./lease-keeper.ts";
export { IntakePublisher } from "./intake-publisher.ts";
