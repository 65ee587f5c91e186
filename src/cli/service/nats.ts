import { connect, type NatsConnection } from "@nats-io/transport-node";
import type { Clock } from "../../clock.ts";
import type { Config } from "../../config.ts";
import { ensureTopology, natsLeaseStore, startEmbeddedNats, untilAnswered, type EmbeddedNats, type LogFn, type Topology } from "../../streams/jetstream/index.ts";
import type { UndoStack } from "./undo.ts";

/** NATS as the service uses it: the connection, its JetStream topology and, when the service started it, the server. */
export interface NatsLink {
  readonly nc: NatsConnection;
  readonly servers: readonly string[];
  readonly embedded: EmbeddedNats | null;
  readonly topology: Topology;
}

/** Starts the embedded nats-server (unless NATS_URL is set), connects and ensures the topology; `undo` gets each part. */
export async function openNats(config: Config, log: LogFn, undo: UndoStack): Promise<NatsLink> {
  let embedded: EmbeddedNats | null = null;
  let servers: readonly string[];
  if (config.nats.kind === "external") servers = config.nats.servers;
  else {
    const e = await startEmbeddedNats(config.nats.storeDir);
    embedded = e;
    undo.push(() => e.stop());
    servers = [e.url];
    log("info", "started embedded nats-server", { url: e.url, store: config.nats.storeDir });
  }
  // noAsyncTraces: the client otherwise builds an Error (a stack trace) for every request and subscription timer,
  // that is for every JetStream publish: 10 % of the engine's CPU at 4,000 samples/s (docs/benchmarks.md).
  const nc = await connect({ servers: [...servers], name: "peg-oracle", maxReconnectAttempts: -1, reconnectTimeWait: 250, noAsyncTraces: true });
  undo.push(() => nc.close());
  // Idempotent, so a request that times out (a loaded machine, a cluster still electing) is tried again, not fatal.
  const topology = await untilAnswered("ensuring the streams and buckets", () => ensureTopology(nc, config.natsReplicas, { samplesMaxBytes: config.history.samplesStreamMaxBytes }), { log });
  if (topology.samplesMaxBytes < config.history.samplesStreamMaxBytes) log("warn", "PEG_SAMPLES holds less than SAMPLES_STREAM_MAX_GB: the server's file store could not reserve it", { max_bytes: topology.samplesMaxBytes });
  return { nc, servers, embedded, topology };
}

/**
 * For an API process's readiness: whether some engine announced itself in PEG_LEASES within its TTL (re-read every
 * 2 s). Before the bucket exists (no engine ever started) nothing is alive; it never creates the bucket.
 */
export function watchEngines(nc: NatsConnection, clock: Clock): { alive(): boolean; stop(): void } {
  let alive = false;
  let store: Awaited<ReturnType<typeof natsLeaseStore>> | null = null;
  const check = async () => {
    store ??= await natsLeaseStore(nc, "open");
    const engines = await store.list("engine.");
    const now = clock.now();
    alive = [...engines.values()].some((r) => r.value.expires_at > now);
  };
  void check().catch(() => (alive = false));
  const timer = setInterval(() => void check().catch(() => (alive = false)), 2_000);
  timer.unref();
  return { alive: () => alive, stop: () => clearInterval(timer) };
}
