import type { JetStreamManager } from "@nats-io/jetstream";

/** A KV key's last message as the stream leader stores it. */
export interface LeaderKvEntry {
  /** `PUT` for a value; `DEL` or `PURGE` for a delete marker (the KV's `KV-Operation` header). */
  readonly operation: "PUT" | "DEL" | "PURGE";
  /** The message's stream sequence: the revision a compare-and-set names. */
  readonly revision: number;
  /** The value as JSON (throws on a marker or a value that is not JSON). */
  json<T>(): T;
}

/**
 * The last message of `key` in KV bucket `bucket`, read from the stream leader (`STREAM.MSG.GET`), or null when the
 * key has none. Not `kv.get`: on a bucket with `allow_direct` (the default) that is a direct get, which any replica
 * answers, and a write is acknowledged once a quorum (2 of 3) has it, so the third replica may answer with the value
 * before a write already acknowledged. The leader has applied every write it acknowledged.
 */
export async function kvLeaderGet(jsm: JetStreamManager, bucket: string, key: string): Promise<LeaderKvEntry | null> {
  const sm = await jsm.streams.getMessage(`KV_${bucket}`, { last_by_subj: `$KV.${bucket}.${key}` });
  if (sm === null) return null;
  const op = sm.header.get("KV-Operation");
  return { operation: op === "DEL" || op === "PURGE" ? op : "PUT", revision: sm.seq, json: <T>() => sm.json<T>() };
}
