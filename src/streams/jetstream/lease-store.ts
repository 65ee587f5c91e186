import { JetStreamApiCodes, JetStreamApiError, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { kvLeaderGet } from "./kv-leader-get.ts";
import { untilAnswered } from "./until-answered.ts";

/**
 * The compare-and-set store the lease protocol runs on (leases.ts): its key layout, its one error, and its NATS KV
 * implementation. Every write names the revision it expects, so two engines can never both believe a write made them
 * the owner.
 */

/**
 * Default lease lifetime: how long after a dead engine's last renewal its units move (issue 26: kill -> restored
 * < 3 s). Renewed every 300 ms (`LEASE_RENEW_EVERY_MS`), fenced 1,000 ms after the last renewal sent, 250 ms before the
 * lease expires (`LEASE_MARGIN_MS`). It was 2 s, renewed every 500 ms, until the renewals moved to a thread of their
 * own (`lease-keeper.ts`), where a stall of the engine's event loop no longer delays them; then 1.5 s with 500 ms of
 * margin: bench:cluster's kill -> restored went from 2.87-3.59 s to 2.50-3.07 s (docs/benchmarks.md, "Cluster").
 */
export const LEASE_TTL_MS = 1_250;
/** Default renewal (and planning) period of a lease: three tries before its fencing deadline. */
export const LEASE_RENEW_EVERY_MS = 300;
/**
 * Between an owner's fence and its lease's expiry: what the engines' clocks may disagree by. NTP keeps machines
 * within milliseconds of each other; 250 ms is two orders of magnitude more (it was 500 ms, and every survivor waited
 * that long for nothing after a kill). A late fence timer is not counted here: a lease's holder stops deciding at the
 * deadline whatever its timers do (`LeaseManager.live`).
 */
export const LEASE_MARGIN_MS = 250;

/** The value of a lease or heartbeat key. `expires_at` is epoch milliseconds on the writer's clock. */
export interface LeaseValue {
  readonly owner: string;
  readonly expires_at: number;
}

/** One key as read, with the revision a compare-and-set must name. */
export interface LeaseRecord {
  readonly value: LeaseValue;
  readonly revision: number;
}

/** Thrown by a `LeaseStore` when a compare-and-set found another revision (or an existing key on create). */
export class LeaseConflictError extends Error {
  override readonly name = "LeaseConflictError";
  readonly code = "lease_conflict";
  constructor(key: string) {
    super(`lease ${key} was written by someone else`);
  }
}

/** The compare-and-set store the manager runs on: NATS KV (`natsLeaseStore`) or an in-memory fake in tests. */
export interface LeaseStore {
  /** Every live (not deleted) key under `prefix`. Unreadable values are skipped. */
  list(prefix: string): Promise<Map<string, LeaseRecord>>;
  /** One live key, or null. */
  get(key: string): Promise<LeaseRecord | null>;
  /** Creates the key; `LeaseConflictError` when it exists (a deleted key may be created again). */
  create(key: string, value: LeaseValue): Promise<number>;
  /**
   * Writes when the key is at `revision`; `LeaseConflictError` otherwise. `timeoutMs` (default 1,000) bounds the wait
   * for the answer: an unanswered write may still have landed.
   */
  update(key: string, value: LeaseValue, revision: number, timeoutMs?: number): Promise<number>;
  /** Deletes when the key is at `revision`; `LeaseConflictError` otherwise. */
  remove(key: string, revision: number): Promise<void>;
  /** Writes unconditionally (heartbeats: only their own engine writes them). */
  put(key: string, value: LeaseValue): Promise<number>;
  /** Deletes unconditionally. */
  purge(key: string): Promise<void>;
}

export const LEASE_KEYS = {
  asset: (mint: string) => `asset.${mint}`,
  /** A partition's lease (src/streams/jetstream/lease-partitions.ts): the unit of ownership when LEASE_PARTITIONS > 0. */
  partition: (n: string) => `partition.${n}`,
  engine: (id: string) => `engine.${id}`,
} as const;

function isConflict(e: unknown): boolean {
  return (
    e instanceof JetStreamApiError &&
    (e.code === JetStreamApiCodes.StreamWrongLastSequence || e.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown)
  );
}

/** The lease bucket's JetStream requests (listing, reads, acquisitions, heartbeats) wait this long for an answer. */
const LEASE_REQUEST_TIMEOUT_MS = 2_000;

/** Name of the lease bucket. */
export const LEASE_BUCKET = "PEG_LEASES";

/**
 * The lease bucket on NATS KV (history 1, `replicas` as the streams). Keys `asset.<mint>` and `engine.<id>`, values
 * `LeaseValue` JSON. Compare-and-set is the `Nats-Expected-Last-Subject-Sequence` header the KV client sends. Reads go
 * to the stream leader (`kvLeaderGet`), never to a replica that may not have a write yet (a deleted key read as live).
 * `replicas: "open"` only opens an existing bucket (readers such as an API process must never create it: a bucket
 * created with the wrong replica count would not survive the loss of its one node).
 */
export async function natsLeaseStore(nc: NatsConnection, replicas: number | "open" = 1): Promise<LeaseStore & { readonly kv: KV }> {
  // Idempotent: tried again while requests time out (a loaded machine, a cluster electing), not a failed start.
  if (replicas !== "open") await untilAnswered("creating the lease bucket", () => new Kvm(nc).create(LEASE_BUCKET, { history: 1, replicas }));
  // The lease protocol's own requests wait 2 s at most (not the client's 5 s): a listing or an acquisition sent while
  // the bucket elects a leader is dropped unanswered, and the next round, after the election, should not wait for it.
  const kv = await untilAnswered("opening the lease bucket", () => new Kvm(jetstream(nc, { timeout: LEASE_REQUEST_TIMEOUT_MS })).open(LEASE_BUCKET));
  const jsm = await untilAnswered("opening JetStream", () => jetstreamManager(nc, { timeout: LEASE_REQUEST_TIMEOUT_MS }));
  const encode = (v: LeaseValue) => JSON.stringify(v);
  const subjectPrefix = `$KV.${LEASE_BUCKET}.`;
  const read = async (key: string): Promise<LeaseRecord | null> => {
    const e = await kvLeaderGet(jsm, LEASE_BUCKET, key);
    if (e === null || e.operation !== "PUT") return null;
    try {
      const v = e.json<LeaseValue>();
      return typeof v.owner === "string" && typeof v.expires_at === "number" ? { value: v, revision: e.revision } : null;
    } catch {
      return null; // not a lease value: ignored
    }
  };
  const update = async (key: string, value: LeaseValue, revision: number, timeoutMs = 1_000): Promise<number> => {
    try {
      // A short timeout: a renewal must land well within the fencing deadline (1 s after it was sent), or be retried.
      return await kv.update(key, encode(value), revision, timeoutMs);
    } catch (e) {
      if (isConflict(e)) throw new LeaseConflictError(key);
      throw e;
    }
  };
  return {
    kv,
    list: async (prefix) => {
      // The keys from the stream's per-subject state, not from `kv.keys()`: that creates a single-replica consumer,
      // which may be placed on a node that just died, while the stream answers as soon as it has a leader.
      const info = await jsm.streams.info(`KV_${LEASE_BUCKET}`, { subjects_filter: `${subjectPrefix}${prefix}>` });
      const keys = Object.keys(info.state.subjects ?? {}).map((subject) => subject.slice(subjectPrefix.length));
      const out = new Map<string, LeaseRecord>();
      await Promise.all(
        keys.map(async (k) => {
          const r = await read(k);
          if (r !== null) out.set(k, r);
        }),
      );
      return out;
    },
    create: async (key, value) => {
      try {
        return await kv.put(key, encode(value), { previousSeq: 0 }); // what `kv.create` sends first
      } catch (e) {
        if (!isConflict(e)) throw e;
      }
      // The key has a message. `kv.create` would then read it with a direct get, which a replica without the delete
      // yet answers with the old value (a spurious conflict): read it on the leader, and write over a delete marker
      // on its revision (still compare-and-set: another engine's create in between makes this fail).
      const last = await kvLeaderGet(jsm, LEASE_BUCKET, key);
      if (last === null || last.operation === "PUT") throw new LeaseConflictError(key);
      return update(key, value, last.revision);
    },
    update,
    put: (key, value) => kv.put(key, encode(value)),
    get: read,
    purge: (key) => kv.delete(key),
    remove: async (key, revision) => {
      try {
        await kv.delete(key, { previousSeq: revision });
      } catch (e) {
        if (isConflict(e)) throw new LeaseConflictError(key);
        throw e;
      }
    },
  };
}
