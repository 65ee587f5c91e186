/**
 * The nats-server losses of bench:cluster: which node leads what, moving leaders off a node, killing a node just before
 * the intake's next tick (so that tick's decisions fall inside the loss, whatever the market's timeline), and timing
 * the first transition decided after the loss until it reached every WebSocket client.
 */
import { readFileSync } from "node:fs";
import type { JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { stepDownSubject } from "../src/streams/jetstream/leader-spread.ts";
import type { ClusterNode, TestNatsCluster } from "../test/support/nats-cluster.ts";
import { sleep, waitFor } from "../test/support/ports.ts";
import { nextTickAt } from "../test/scale/intake-tick.ts";
import type { TransitionClient } from "./cluster-procs.ts";

/** How long before the intake's next tick a node is killed: that tick is published and decided during the loss. */
export const KILL_LEAD_MS = 500;

async function streamNames(jsm: JetStreamManager): Promise<string[]> {
  const out: string[] = [];
  for await (const si of jsm.streams.list()) out.push(si.config.name);
  return out.sort();
}

/** The streams and buckets (as their streams, `KV_…`) whose leader `node` is. */
export async function streamsLedBy(jsm: JetStreamManager, node: string): Promise<string[]> {
  const led = await Promise.all((await streamNames(jsm)).map(async (s) => ((await jsm.streams.info(s)).cluster?.leader === node ? s : null)));
  return led.filter((s): s is string => s !== null);
}

/** The JetStream meta group's leader, from the nodes' logs (its election is logged by the new leader); null if none logged. */
export function metaLeader(cluster: TestNatsCluster): string | null {
  let best: { at: string; name: string } | null = null;
  for (const n of cluster.nodes) {
    let log = "";
    try {
      log = readFileSync(n.logFile, "utf8");
    } catch {
      continue;
    }
    for (const line of log.split("\n")) {
      const hit = /^\[\d+\] (\S+ \S+) \[INF\] JetStream cluster new metadata leader: ([^/\s]+)/.exec(line);
      if (hit !== null && (best === null || hit[1]! >= best.at)) best = { at: hit[1]!, name: hit[2]! };
    }
  }
  return best?.name ?? null;
}

/**
 * Asks every stream `node` leads to elect another leader (a stepdown picks one of its current peers), up to 5 times
 * each; returns what it still leads.
 */
export async function moveLeadersOff(nc: NatsConnection, jsm: JetStreamManager, node: string): Promise<string[]> {
  for (const s of await streamsLedBy(jsm, node)) {
    for (let i = 0; i < 5 && (await jsm.streams.info(s)).cluster?.leader === node; i++) {
      await nc.request(stepDownSubject(s), undefined, { timeout: 5_000 }).catch(() => null);
      await waitFor(async () => ((await jsm.streams.info(s)).cluster?.leader ?? node) !== node, 5_000, `a new leader of ${s}`).catch(() => {});
    }
  }
  return streamsLedBy(jsm, node);
}

/** Waits until `node` is a current replica of every stream again (after its restart), up to `timeoutMs`. */
export async function awaitCurrent(jsm: JetStreamManager, node: string, timeoutMs: number): Promise<void> {
  await waitFor(
    async () => {
      for (const s of await streamNames(jsm)) {
        const c = (await jsm.streams.info(s)).cluster;
        if (c?.leader === undefined) return false;
        if (c.leader !== node && !(c.replicas ?? []).some((r) => r.name === node && r.current)) return false;
      }
      return true;
    },
    timeoutMs,
    `nats-server ${node} to be a current replica of every stream`,
    250,
  );
}

/**
 * SIGKILL of `node` `KILL_LEAD_MS` before the intake's next tick (once a transition reached a client, so the WebSocket
 * feeds are live); resolves with the instant of the kill.
 */
export async function killBeforeTick(jsm: JetStreamManager, node: ClusterNode, tickMs: number): Promise<number> {
  await sleep((await nextTickAt(jsm, tickMs, KILL_LEAD_MS)) - KILL_LEAD_MS - Date.now());
  const at = Date.now();
  await node.kill();
  return at;
}

/** The first transition decided at or after `since` (its sample's instant) that every client received. */
export interface NextTransition {
  readonly alertId: string;
  /** Its sequence in PEG_TRANSITIONS. */
  readonly seq: number;
  readonly decidedAt: number;
  /** When the last client received it. */
  readonly receivedAt: number;
}

/**
 * The first transition decided at or after `since` (and at or before `until`) once every client received it, or null when none did within
 * `timeoutMs` (a quiet market). Transitions of different assets may arrive out of their decisions' order (each asset's
 * publish is retried on its own while a stream elects its leader), so the choice is made again `settleMs` after one
 * arrived, until it no longer changes.
 */
export async function nextDecided(clients: readonly TransitionClient[], since: number, timeoutMs: number, until = Infinity, settleMs = 1_500): Promise<NextTransition | null> {
  const first = (): { alert_id: string; seq: number; decided_at: number } | null => {
    let best: { alert_id: string; seq: number; decided_at: number } | null = null;
    for (const c of clients) for (const t of c.transitions) if (t.decided_at >= since && t.decided_at <= until && (best === null || t.decided_at < best.decided_at)) best = t;
    return best;
  };
  const everywhere = (f: { alert_id: string } | null) => f !== null && clients.every((c) => c.transitions.some((t) => t.alert_id === f.alert_id));
  const deadline = Date.now() + timeoutMs;
  for (let chosen: string | null = null; ; ) {
    const arrived = await waitFor(() => everywhere(first()), Math.max(1, deadline - Date.now()), "a transition decided after the node loss on every client", 50).then(
      () => true,
      () => false,
    );
    if (!arrived) return null;
    const f = first()!;
    if (f.alert_id === chosen) {
      const receivedAt = Math.max(...clients.map((c) => c.transitions.find((t) => t.alert_id === f.alert_id)!.received_at));
      return { alertId: f.alert_id, seq: f.seq, decidedAt: f.decided_at, receivedAt };
    }
    chosen = f.alert_id;
    await sleep(settleMs);
  }
}

/** Public reads through every API process every 200 ms until stopped: their statuses. */
export function pollReads(apiPorts: readonly number[], symbol: string): { stop(): Promise<number[]> } {
  const statuses: number[] = [];
  let polling = true;
  const loop = (async () => {
    while (polling) {
      for (const port of apiPorts) statuses.push((await fetch(`http://127.0.0.1:${port}/v1/assets/${symbol}`).catch(() => null))?.status ?? 0);
      await sleep(200);
    }
  })();
  return {
    stop: async () => {
      polling = false;
      await loop;
      return statuses;
    },
  };
}

/** When PEG_TRANSITIONS stored transition `seq` (its message time), or null if it cannot be read. */
export async function storedAt(jsm: JetStreamManager, seq: number): Promise<number | null> {
  const m = await jsm.streams.getMessage("PEG_TRANSITIONS", { seq }).catch(() => null);
  return m === null ? null : m.time.getTime();
}

/** A stream's last sequence. */
export async function lastSeq(jsm: JetStreamManager, stream: string): Promise<number> {
  return (await jsm.streams.info(stream)).state.last_seq;
}

/**
 * Counts the transitions PEG_TRANSITIONS stored after sequence `afterSeq` whose decision (their sample's instant,
 * `detected_at`) falls in [since, since + windowMs]: a try that saw none reach the clients is only quiet if the stream
 * has none either (a decision stuck in the fault is a measurement, however late). Each call reads only what was stored
 * since the one before (a message that cannot be read yet is read again next time).
 */
export function storedDecidedIn(jsm: JetStreamManager, afterSeq: number, since: number, windowMs: number): () => Promise<number> {
  let next = afterSeq + 1;
  let n = 0;
  return async () => {
    const last = await lastSeq(jsm, "PEG_TRANSITIONS");
    for (; next <= last; next++) {
      const m = await jsm.streams.getMessage("PEG_TRANSITIONS", { seq: next }).catch(() => null);
      if (m === null) break;
      const at = Date.parse(m.json<{ detected_at: string }>().detected_at);
      if (at >= since && at <= since + windowMs) n++;
    }
    return n;
  };
}
