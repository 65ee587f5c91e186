import type { JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Clock } from "../../clock.ts";
import { LEASE_BUCKET } from "./lease-store.ts";
import type { LogFn } from "./sample-recorder.ts";
import { TOPOLOGY } from "./topology.ts";

/** The lease bucket's stream (a KV bucket is the stream `KV_<bucket>`). */
export const LEASE_STREAM = `KV_${LEASE_BUCKET}`;

/**
 * The streams a take-over or a decision waits on, kept off the node that leads the lease bucket: the transitions (the
 * fencing token, the WebSocket stream), the actors' snapshots (a take-over's restore) and the shared intake (what the
 * engines evaluate).
 */
export const SPREAD_STREAMS: readonly string[] = [TOPOLOGY.transitions.stream, `KV_${TOPOLOGY.actors.bucket}`, TOPOLOGY.intake.stream];

/** How often the engine that runs the cluster's chores looks at the leaders (ms). */
export const LEADER_SPREAD_EVERY_MS = 5_000;

/** The JetStream API asks a stream's leader to step down (an election among its other peers follows at once). */
export const stepDownSubject = (stream: string) => `$JS.API.STREAM.LEADER.STEPDOWN.${stream}`;

export interface LeaderSpreadOptions {
  readonly nc: NatsConnection;
  readonly jsm: JetStreamManager;
  /** Whether this process runs the cluster's chores now (one engine at a time: `Partition.leadsChores`). */
  readonly duty: () => boolean;
  readonly clock: Clock;
  readonly log: LogFn;
  readonly everyMs?: number;
  /** Default `SPREAD_STREAMS`. */
  readonly streams?: readonly string[];
}

/** What one look found: the streams it moved off the lease bucket's leader, or why it moved none. */
export type SpreadCheck = { readonly moved: readonly string[] } | { readonly skipped: "not on duty" | "no cluster" | "no leader" };

/**
 * Keeps the leader of the lease bucket on a node that leads none of `SPREAD_STREAMS` (docs/scaling.md, "Stream
 * leaders"). A lost nats-server stops what it led for an election, 4-9 s on nats-server 2.9: the lease bucket's
 * stops every renewal, and every engine fences its partitions (the lease outlives no election). Had the same node
 * also led the transitions and the snapshots, the take-overs after that election waited for theirs too (24 s of
 * blindness in bench:cluster run c3, against about the election alone apart). The look moves the other stream, not
 * the lease bucket: its step-down pauses transition publishes for a moment, where the bucket's would pause renewals.
 */
export class LeaderSpread {
  readonly #o: LeaderSpreadOptions;
  readonly #streams: readonly string[];
  #timer: unknown = null;
  #running: Promise<unknown> | null = null;
  #stopped = false;

  constructor(o: LeaderSpreadOptions) {
    this.#o = o;
    this.#streams = o.streams ?? SPREAD_STREAMS;
  }

  start(): void {
    if (this.#timer !== null || this.#stopped) return;
    const tick = () => {
      this.#running = this.check()
        .catch((e: unknown) => this.#o.log("warn", "stream leader check failed", { error: e instanceof Error ? e.message : String(e) }))
        .finally(() => {
          this.#running = null;
          if (!this.#stopped) this.#timer = this.#o.clock.setTimeout(tick, this.#o.everyMs ?? LEADER_SPREAD_EVERY_MS);
        });
    };
    this.#timer = this.#o.clock.setTimeout(tick, this.#o.everyMs ?? LEADER_SPREAD_EVERY_MS);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== null) this.#o.clock.clearTimeout(this.#timer);
    await this.#running;
  }

  /** One look: every stream of `streams` led by the lease bucket's leader is asked to step down. */
  async check(): Promise<SpreadCheck> {
    if (!this.#o.duty()) return { skipped: "not on duty" };
    const leases = await this.#leader(LEASE_STREAM);
    if (leases === undefined) return { skipped: "no cluster" };
    if (leases === null) return { skipped: "no leader" };
    const shared = (await Promise.all(this.#streams.map(async (s) => ((await this.#leader(s)) === leases ? s : null)))).filter((s) => s !== null);
    const moved: string[] = [];
    for (const stream of shared) {
      // Not on duty any more (fenced meanwhile): the engine that is will look.
      if (!this.#o.duty()) break;
      const answer = await this.#o.nc.request(stepDownSubject(stream), undefined, { timeout: 2_000 });
      const body = answer.json<{ success?: boolean; error?: { code: number; description: string } }>();
      if (body.success === true) moved.push(stream);
      else this.#o.log("warn", "stream leader step-down refused", { stream, node: leases, error: body.error?.description ?? "no answer" });
    }
    if (moved.length > 0) this.#o.log("info", "stream leaders moved off the lease bucket's node", { node: leases, streams: moved });
    return { moved };
  }

  /**
   * The node leading `stream`: undefined when it is not replicated (a single server: nothing to spread) or absent,
   * null when it has no leader now (an election).
   */
  async #leader(stream: string): Promise<string | null | undefined> {
    const info = await this.#o.jsm.streams.info(stream).catch((e: unknown) => {
      if (e instanceof Error && /stream not found/i.test(e.message)) return null;
      throw e;
    });
    if (info === null || info.config.num_replicas <= 1) return undefined;
    return info.cluster?.leader ?? null;
  }
}
