import { jetstreamManager, type JetStreamManager, type StoredMsg } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";

/** While a consumer is silent or being re-created, the stream is asked for its next message this often... */
export const BRIDGE_POLL_MS = 200;
/** ...each request waiting this long at most: one sent to a stream electing its leader is dropped, the next follows. */
export const BRIDGE_REQUEST_TIMEOUT_MS = 600;

/** A JetStream manager with the bridge's short request timeout. */
export function bridgeManager(nc: NatsConnection): Promise<JetStreamManager> {
  return jetstreamManager(nc, { checkAPI: false, timeout: BRIDGE_REQUEST_TIMEOUT_MS });
}

export interface ReadOnOptions {
  /** The last sequence handled (by this reader or the consumer it stands in for): the next read asks for the one after. */
  after(): number;
  /** Whether to go on (checked before each request and before each delivery). */
  go(): boolean;
  /** Handles the next message, in stream order; it must move `after()` to `m.seq`. */
  deliver(m: StoredMsg): void;
}

/**
 * The bridge of a consumer that stopped delivering (the node holding it died, it is being re-created, or its
 * re-creation waits for the meta group's election after a node loss, seconds on nats-server 2.9): reads `stream`'s
 * messages after `after()` one by one by sequence, from the stream's leader (no consumer needed), and hands each to
 * `deliver` in order while `go()` holds. A message the consumer delivered meanwhile is not handed again: the next read
 * asks after it. Returns, with how many it delivered, at the first request that fails or finds nothing (the stream
 * has no leader yet, or nothing new): the caller polls again `BRIDGE_POLL_MS` later.
 */
export async function readOnBySequence(jsm: JetStreamManager, stream: string, o: ReadOnOptions): Promise<number> {
  let delivered = 0;
  while (o.go()) {
    const want = o.after() + 1;
    const m = await jsm.streams.getMessage(stream, { seq: want }).catch(() => null);
    if (m === null || m.seq !== want) return delivered;
    if (!o.go()) return delivered;
    // Delivered by the consumer while the request was out: ask for the one after.
    if (o.after() !== want - 1) continue;
    o.deliver(m);
    delivered++;
  }
  return delivered;
}
