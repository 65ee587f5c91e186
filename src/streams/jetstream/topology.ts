import { jetstreamManager, RetentionPolicy, StorageType, DiscardPolicy, type JetStreamManager, type StreamConfig } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import { nanos, type NatsConnection } from "@nats-io/transport-node";

/** Stream and bucket names and subjects (addendum E). Subject tokens are mints, never symbols. */
export const TOPOLOGY = {
  /**
   * Batches of samples on `peg.samples.<partition>`; `legacySubjects`: one `SampleMessage` per message, as builds before
   * issue 25 published (still read, from a stream of such a build or an engine not yet upgraded). `maxBytes`: the
   * default bound (10 GiB; SAMPLES_STREAM_MAX_GB), whichever of it and 24 h is reached first.
   */
  samples: { stream: "PEG_SAMPLES", subjects: "peg.samples.>", legacySubjects: "peg.sample.>", maxAgeMs: 24 * 3600_000, maxBytes: 10 * 2 ** 30 },
  transitions: { stream: "PEG_TRANSITIONS", subjects: "peg.transition.>", maxAgeMs: 400 * 24 * 3600_000 },
  deliveries: { stream: "PEG_DELIVERIES", subjects: "peg.delivery.>" },
  actors: { bucket: "peg_actors" },
  /**
   * The samples of the cluster's one intake (issue 26 item 2; engines with `INTAKE=shared`), by partition, kept long
   * enough for an engine that takes a partition over to evaluate what arrived since its last state.
   */
  intake: { stream: "PEG_INTAKE", subjects: "peg.intake.>", maxAgeMs: 15 * 60_000 },
} as const;

export const subjects = {
  /** A batch of samples of the mints in one partition (`SampleRecorder`). */
  sampleBatch: (partition: number) => `peg.samples.${partition}`,
  /** Received samples of the assets of one partition (`IntakePublisher`). */
  intake: (partition: number) => `peg.intake.${partition}`,
  /** The intake's watermark while it has no sample to publish. */
  intakeTick: "peg.intake.tick",
  /** The circulating supplies the intake observed. */
  intakeSupply: "peg.intake.supply",
  /** One sample (`v: 1`): what builds before issue 25 published. */
  sample: (mint: string) => `peg.sample.${mint}`,
  state: (mint: string) => `peg.state.${mint}`,
  transition: (mint: string) => `peg.transition.${mint}`,
  /** The KV bucket `peg_actors`'s subject for a key (a put is a JetStream publish there; NATS ADR-8). */
  actorSnapshot: (mint: string) => `$KV.${TOPOLOGY.actors.bucket}.${mint}`,
  /** Core request/reply: the engine answers with the live band-machine view of the asset. */
  machine: (mint: string) => `peg.machine.${mint}`,
};

/** Dedupe horizon for `Nats-Msg-Id`: a re-published transition (same alert id) within it is dropped by the server. */
const DUPLICATE_WINDOW_MS = 2 * 3600_000;

async function ensureStream(jsm: JetStreamManager, config: Partial<StreamConfig> & { name: string }): Promise<void> {
  // Exists: bring the mutable limits up to date (subjects, ages, windows); storage/retention cannot change.
  const update = async () => void (await jsm.streams.update(config.name, { ...(await jsm.streams.info(config.name)).config, ...config }));
  try {
    await update();
  } catch (e) {
    if (!isNotFound(e)) throw e;
    try {
      await jsm.streams.add(config);
    } catch (added) {
      // Another process created it meanwhile (engines starting together), maybe with other limits: update it.
      if (!isInUse(added)) throw added;
      await update();
    }
  }
}

/** JetStream error 10058: a stream of that name exists (with another configuration). */
function isInUse(e: unknown): boolean {
  const api = (e as { api_error?: { err_code?: number } } | null)?.api_error;
  return api?.err_code === 10058 || /already in use/i.test(e instanceof Error ? e.message : String(e));
}

function isNotFound(e: unknown): boolean {
  const msg = e instanceof Error ? e.message : String(e);
  return /not found/i.test(msg) || (typeof e === "object" && e !== null && (e as { code?: unknown }).code === 404);
}

export interface Topology {
  /** The connection the streams were ensured on (ordered consumers are created on it: ordered-consumer.ts). */
  readonly nc: NatsConnection;
  readonly jsm: JetStreamManager;
  readonly actors: KV;
  /** The byte bound `PEG_SAMPLES` got: the one asked for, or less when the server could not reserve it (halved until it could). */
  readonly samplesMaxBytes: number;
}

/** The smallest bound tried before giving up on reserving one for a bounded stream (`PEG_SAMPLES`, `PEG_INTAKE`). */
const MIN_STREAM_BYTES = 64 * 2 ** 20;

/** A file stream's `max_bytes` is reserved from the server's `max_file_store`: JetStream error 10047 when it does not fit. */
function isInsufficientStorage(e: unknown): boolean {
  const api = (e as { api_error?: { err_code?: number } } | null)?.api_error;
  return api?.err_code === 10047 || /insufficient storage/i.test(e instanceof Error ? e.message : String(e));
}

/**
 * A file stream bounded by age and by bytes (discard old: the oldest messages go first). A server whose file store
 * cannot reserve `maxBytes` gets the largest halving of it that fits, down to 64 MiB. Returns the bound it got.
 */
async function ensureBoundedStream(jsm: JetStreamManager, replicas: number, maxBytes: number, config: { name: string; subjects: string[]; maxAgeMs: number }): Promise<number> {
  for (let bytes = maxBytes; ; bytes = Math.floor(bytes / 2)) {
    try {
      await ensureStream(jsm, {
        name: config.name,
        subjects: config.subjects,
        retention: RetentionPolicy.Limits,
        storage: StorageType.File,
        discard: DiscardPolicy.Old,
        max_age: nanos(config.maxAgeMs),
        max_bytes: bytes,
        duplicate_window: nanos(60_000),
        num_replicas: replicas,
      });
      return bytes;
    } catch (e) {
      if (!isInsufficientStorage(e) || bytes / 2 < MIN_STREAM_BYTES) throw e;
    }
  }
}

/** `PEG_SAMPLES`, bounded by age (24 h) and by `maxBytes`. */
function ensureSamples(jsm: JetStreamManager, replicas: number, maxBytes: number): Promise<number> {
  const { stream, subjects: live, legacySubjects, maxAgeMs } = TOPOLOGY.samples;
  return ensureBoundedStream(jsm, replicas, maxBytes, { name: stream, subjects: [live, legacySubjects], maxAgeMs });
}

/**
 * `PEG_INTAKE` (engines with a shared intake): replicated like the others, bounded by age (`TOPOLOGY.intake.maxAgeMs`)
 * and by bytes (2 GiB, or the largest halving the servers can reserve). Returns the bound it got.
 */
export function ensureIntakeStream(jsm: JetStreamManager, replicas: number, maxBytes = 2 * 2 ** 30): Promise<number> {
  const { stream, subjects: all, maxAgeMs } = TOPOLOGY.intake;
  return ensureBoundedStream(jsm, replicas, maxBytes, { name: stream, subjects: [all], maxAgeMs });
}

/**
 * Creates (or updates) the streams and the KV bucket the service uses, idempotently: safe on every start and from
 * several processes at once. `replicas` is 1 on a single server, 3 on a cluster; `samplesMaxBytes` bounds
 * `PEG_SAMPLES` (default `TOPOLOGY.samples.maxBytes`).
 */
export async function ensureTopology(nc: NatsConnection, replicas = 1, options: { readonly samplesMaxBytes?: number } = {}): Promise<Topology> {
  const jsm = await jetstreamManager(nc);
  const samplesMaxBytes = await ensureSamples(jsm, replicas, options.samplesMaxBytes ?? TOPOLOGY.samples.maxBytes);
  await ensureStream(jsm, {
    name: TOPOLOGY.transitions.stream,
    subjects: [TOPOLOGY.transitions.subjects],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    discard: DiscardPolicy.Old,
    max_age: nanos(TOPOLOGY.transitions.maxAgeMs),
    duplicate_window: nanos(DUPLICATE_WINDOW_MS),
    num_replicas: replicas,
  });
  await ensureStream(jsm, {
    name: TOPOLOGY.deliveries.stream,
    subjects: [TOPOLOGY.deliveries.subjects],
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
    num_replicas: replicas,
  });
  const actors = await new Kvm(nc).create(TOPOLOGY.actors.bucket, { history: 1, replicas });
  return { nc, jsm, actors, samplesMaxBytes };
}
