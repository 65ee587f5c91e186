/**
 * Step 2 of bench:cluster: two nats-server losses, each by SIGKILL 0.5 s before the intake's next tick, timed from the
 * kill to the first transition decided after it on every WebSocket client, with public reads through both API
 * processes meanwhile (the primitives are in `cluster-node-loss.ts`). Each try starts from a settled cluster. A try
 * that falls on a quiet stretch of the market measures nothing of the loss: the node is started again and the loss
 * tried again.
 */
import type { JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { LEADER_SPREAD_EVERY_MS, LEASE_STREAM, SPREAD_STREAMS, stepDownSubject } from "../src/streams/jetstream/leader-spread.ts";
import type { ClusterNode, TestNatsCluster } from "../test/support/nats-cluster.ts";
import { sleep, waitFor } from "../test/support/ports.ts";
import { awaitCurrent, killBeforeTick, lastSeq, metaLeader, moveLeadersOff, nextDecided, pollReads, storedAt, storedDecidedIn, streamsLedBy, type NextTransition } from "./cluster-node-loss.ts";
import type { RoleProcess, TransitionClient } from "./cluster-procs.ts";
import { BLIND_DECISION_MS, type ClusterDraft } from "./cluster-report.ts";

/** What the loss steps act on and read, from the running benchmark. */
export interface LossRun {
  readonly jsm: JetStreamManager;
  readonly conn: NatsConnection;
  readonly cluster: TestNatsCluster;
  readonly clients: readonly TransitionClient[];
  readonly apiPorts: readonly number[];
  /** The node the proxied engine reaches NATS through: never killed (its connection must outlive the losses). */
  readonly proxied: ClusterNode;
  /** The live engines (their fence lines count the leases lost). */
  readonly engines: readonly RoleProcess[];
  /** The asset the public reads ask for. */
  readonly readSymbol: string;
  readonly tickMs: number;
  /** Bound of a restart until current, and of every partition leased again. */
  readonly slowMs: number;
  /** 2b times the delivery of this many transitions after the loss. */
  readonly nodeTransitions: number;
  /** Every partition leased again, each live engine within one partition of its share. */
  leasedAgain(): Promise<boolean>;
  step(what: string): void;
}

/**
 * How many times a nats-server loss is tried: a try whose next decision came more than BLIND_DECISION_MS after the kill
 * fell on a quiet tick of the market (it decides in bursts) and measures nothing of the loss; the node is started again,
 * the cluster settles, and the loss is tried again.
 */
const LOSS_TRIES = 6;
/**
 * A try is quiet when no transition decided after the kill reached every client this long after it (the market decides
 * in bursts 30-50 s apart); the last try waits for one up to 120 s.
 */
const QUIET_MS = 25_000;

/** A try starts once no engine lost or took a lease, or the intake, for this long (and every partition is leased). */
const SETTLE_MS = 3_000;
const MOVES = ["acquired assets", "this engine is the intake", "lease not renewed in time: stopping the asset before it can expire", "assets stopped: lease lost"];

/**
 * Whether the cluster settled: every partition leased and balanced, and no engine logged a lease lost or taken (or
 * the intake moving) for SETTLE_MS. A node that rejoins can make renewals time out and partitions move (bench run of
 * 2026-11-28 06:00: a try 0.2 s after the previous try's node was back fell in the middle of such a move, and measured
 * its take-overs, 8.9 s, not the loss).
 */
async function settled(r: LossRun): Promise<boolean> {
  const since = Date.now() - SETTLE_MS;
  for (const e of r.engines) {
    for (let i = e.lines.length - 1; i >= 0 && e.lines[i]!.at >= since; i--) if (MOVES.includes(e.lines[i]!.msg)) return false;
  }
  return r.leasedAgain();
}

const awaitSettled = (r: LossRun) => waitFor(() => settled(r), r.slowMs, "the cluster to settle (no lease moved for 3 s)", 500);

/** Leases the engines let lapse (they fenced themselves) from `since` on. */
const leasesLost = (engines: readonly RoleProcess[], since: number) => engines.flatMap((e) => e.lines).filter((l) => l.at >= since && l.msg.startsWith("lease not renewed in time")).length;

/** Whether a try measured the loss: the next transition was decided during it. */
const measured = (next: NextTransition | null, killedAt: number) => next !== null && next.decidedAt - killedAt <= BLIND_DECISION_MS;

/**
 * The first transition decided after a kill at `killedAt` on every client, or null for a quiet try: none reached every
 * client within QUIET_MS, and PEG_TRANSITIONS holds none decided within BLIND_DECISION_MS of the kill either (one that
 * is stored but not delivered yet is waited for, however long it takes: that is the measurement).
 */
async function measuredNext(r: LossRun, killedAt: number, seqBefore: number, attempt: number): Promise<NextTransition | null> {
  const next = await nextDecided(r.clients, killedAt, attempt < LOSS_TRIES ? QUIET_MS : 120_000);
  if (measured(next, killedAt) || attempt >= LOSS_TRIES) return next;
  const decidedInWindow = storedDecidedIn(r.jsm, seqBefore, killedAt, BLIND_DECISION_MS);
  const stuck = await waitFor(async () => (await decidedInWindow()) > 0, 10_000, "a decision of the window in the stream", 1_000).then(
    () => true,
    () => false,
  );
  return stuck ? nextDecided(r.clients, killedAt, 120_000, killedAt + BLIND_DECISION_MS) : next;
}

/** Restarts `node` and waits until it is a current replica of every stream; its restart -> current, in ms. */
async function restart(r: LossRun, node: ClusterNode): Promise<number> {
  const at = Date.now();
  await node.start();
  await awaitCurrent(r.jsm, node.name, r.slowMs);
  const took = Date.now() - at;
  r.step(`nats-server ${node.name} is back and current (${took} ms)`);
  return took;
}

const killLine = (next: NextTransition | null, killedAt: number) =>
  `killed at ${new Date(killedAt).toISOString()}: ${next === null ? "nothing decided after it reached every client" : `the next transition decided ${next.decidedAt - killedAt} ms after the kill, on every client ${next.receivedAt - killedAt} ms after it`}`;

/**
 * 2a. SIGKILL of the nats-server that is neither the proxied engine's node nor the leader of PEG_TRANSITIONS, once
 * every stream it led has elected another leader: clients connected to it reconnect, its consumers are re-created,
 * and no stream waits for an election. The next transition must reach every client within 3 s of the kill. Started
 * again afterwards, and awaited until it is a current replica of every stream (step 2b needs two of three nodes).
 */
export async function followerLoss(r: LossRun, m: ClusterDraft): Promise<void> {
  const reads = pollReads(r.apiPorts, r.readSymbol);
  for (let attempt = 1; ; attempt++) {
    await awaitSettled(r);
    const transitionsLeader = (await r.jsm.streams.info("PEG_TRANSITIONS")).cluster?.leader;
    const node = r.cluster.nodes.find((n) => n !== r.proxied && n.name !== transitionsLeader)!;
    const stillLed = await moveLeadersOff(r.conn, r.jsm, node.name);
    const meta = metaLeader(r.cluster) === node.name ? ["the JetStream meta group"] : [];
    m.follower_node_killed = node.name;
    m.follower_loss_led = [...stillLed, ...meta];
    m.follower_loss_attempts = attempt;
    r.step(`SIGKILL of nats-server ${node.name}, a follower of every stream${m.follower_loss_led.length === 0 ? "" : ` but the leader of ${m.follower_loss_led.join(", ")}`} (try ${attempt})`);
    const seqBefore = await lastSeq(r.jsm, "PEG_TRANSITIONS");
    const killedAt = await killBeforeTick(r.jsm, node, r.tickMs);
    const next = await measuredNext(r, killedAt, seqBefore, attempt);
    if (next !== null) {
      m.follower_loss_to_next_ws_ms = next.receivedAt - killedAt;
      m.follower_loss_next_decided_ms = next.decidedAt - killedAt;
      m.follower_loss_next_stored_ms = ((await storedAt(r.jsm, next.seq)) ?? NaN) - killedAt;
    }
    r.step(killLine(next, killedAt));
    m.follower_loss_leases_lost = leasesLost(r.engines, killedAt);
    m.follower_restart_to_current_ms = await restart(r, node);
    if (measured(next, killedAt) || attempt >= LOSS_TRIES) break;
  }
  const statuses = await reads.stop();
  m.follower_loss_reads = statuses.length;
  m.follower_loss_reads_not_200 = statuses.filter((x) => x !== 200).length;
}

/**
 * The node leading `stream` once it is not the proxied engine's (`stream` is asked to step down while it is) and,
 * unless `stream` is the lease bucket itself, not the lease bucket's leader either (the engines' `LeaderSpread` moves
 * a stream off that node within a period). `stepped`: whether a step-down was asked (the cluster settles again).
 */
async function leaderOffProxied(r: LossRun, stream: string): Promise<{ node: ClusterNode; stepped: boolean }> {
  const leaderName = async (s: string) => (await r.jsm.streams.info(s)).cluster?.leader;
  const deadline = Date.now() + r.slowMs;
  let stepped = false;
  while (Date.now() < deadline) {
    const [led, leases] = [await leaderName(stream), await leaderName(LEASE_STREAM)];
    const node = r.cluster.nodes.find((n) => n.name === led);
    if (node !== undefined && node !== r.proxied && (stream === LEASE_STREAM || led !== leases)) return { node, stepped };
    if (node === r.proxied) {
      stepped = true;
      await r.conn.request(stepDownSubject(stream), undefined, { timeout: 5_000 }).catch(() => null);
    }
    // Electing, or led by the lease bucket's leader: the engines move it within a period.
    await sleep(node === r.proxied ? 1_000 : LEADER_SPREAD_EVERY_MS / 10);
  }
  throw new Error(`${stream} stayed on the proxied engine's node${stream === LEASE_STREAM ? "" : " or the lease bucket's leader"}`);
}

/** A settled cluster and the node leading `stream` (`leaderOffProxied`), settled again after a step-down it asked. */
async function settledLeaderOf(r: LossRun, stream: string): Promise<ClusterNode> {
  await awaitSettled(r);
  const { node, stepped } = await leaderOffProxied(r, stream);
  if (!stepped) return node;
  await awaitSettled(r);
  return (await leaderOffProxied(r, stream)).node;
}

/**
 * 2b. SIGKILL of the nats-server leading PEG_TRANSITIONS (never the proxied engine's node: it steps down first if it
 * leads; nor the lease bucket's leader, which the engines keep apart), just before the intake's next tick: no
 * transition can be stored before the stream's election ends. The node is started again after each try; a quiet try
 * is followed, once every partition is leased again, by another.
 */
export async function leaderLoss(r: LossRun, m: ClusterDraft): Promise<void> {
  const reads = pollReads(r.apiPorts, r.readSymbol);
  for (let attempt = 1; ; attempt++) {
    const leader = await settledLeaderOf(r, "PEG_TRANSITIONS");
    m.nats_node_killed = leader.name;
    m.node_loss_attempts = attempt;
    // Who else the killed node led: a stream or bucket whose leader dies takes no writes until its election ends (4-7 s
    // on nats-server 2.9, bench/nats-election.ts); the lease bucket's means every engine stops its partitions.
    m.node_loss_led = [...(await streamsLedBy(r.jsm, leader.name)).filter((s) => s !== "PEG_TRANSITIONS"), ...(metaLeader(r.cluster) === leader.name ? ["the JetStream meta group"] : [])];
    r.step(`SIGKILL of nats-server ${leader.name} (it also leads ${m.node_loss_led.join(", ") || "nothing else"}; try ${attempt})`);
    const seqBefore = await lastSeq(r.jsm, "PEG_TRANSITIONS");
    const killedAt = await killBeforeTick(r.jsm, leader, r.tickMs);
    // The first transition decided after the loss (the engine's ts, the instant of its sample), from the kill and,
    // apart, from its decision (the delivery blind time).
    const next = await measuredNext(r, killedAt, seqBefore, attempt);
    // Kill -> the first transition on every client, whenever it was decided (what earlier runs reported).
    const firstAfter = r.clients.map((c) => c.transitions.find((t) => t.received_at > killedAt)?.received_at);
    if (firstAfter.every((x) => x !== undefined)) m.node_loss_to_first_ws_ms = Math.max(...firstAfter) - killedAt;
    if (next !== null) {
      m.node_loss_kill_to_next_ws_ms = next.receivedAt - killedAt;
      m.node_loss_to_next_ws_ms = next.receivedAt - next.decidedAt;
      m.node_loss_next_decided_ms = next.decidedAt - killedAt;
      m.node_loss_next_stored_ms = ((await storedAt(r.jsm, next.seq)) ?? NaN) - killedAt;
    }
    r.step(killLine(next, killedAt));
    // Engines that could not renew through the election stop their assets (fenced) until they lease them again.
    m.node_loss_leases_lost = leasesLost(r.engines, killedAt);
    const done = measured(next, killedAt) || attempt >= LOSS_TRIES;
    if (done) m.node_loss_ws_delay_max_ms = await deliveryDelayAfter(r, killedAt);
    await restart(r, leader);
    if (done) break;
  }
  const statuses = await reads.stop();
  m.reads_during_node_loss = statuses.length;
  m.reads_not_200 = statuses.filter((x) => x !== 200).length;
}

/**
 * How late the first `nodeTransitions` transitions received after the loss arrived, from their decision (or from the
 * loss, for one decided before it). Bounded: a run whose engines decide few transitions is timed on those that came.
 */
async function deliveryDelayAfter(r: LossRun, killedAt: number): Promise<number> {
  const after = (c: TransitionClient) => c.transitions.filter((t) => t.received_at > killedAt);
  await waitFor(() => r.clients.every((c) => after(c).length >= r.nodeTransitions), 60_000, "transitions after the node loss", 100).catch(() => {});
  const first = r.clients.flatMap((c) => after(c).slice(0, r.nodeTransitions));
  return Math.max(...first.map((t) => t.received_at - Math.max(t.decided_at, killedAt)));
}

/**
 * When every partition the engines fenced after `since` ran again: the instant of the last `acquired assets` line of
 * one (at or after its fence), or null while one is not acquired again (a partition is a lease unit: its line's
 * `unit`).
 */
function refencedRestoredAt(engines: readonly RoleProcess[], since: number): number | null {
  const lines = engines.flatMap((e) => e.lines).filter((l) => l.at >= since);
  const fenced = new Map<string, number>();
  for (const l of lines) if (l.msg.startsWith("lease not renewed in time") && !fenced.has(String(l["mint"]))) fenced.set(String(l["mint"]), l.at);
  let last = since;
  for (const [unit, at] of fenced) {
    const back = lines.find((l) => l.msg === "acquired assets" && String(l["unit"]) === unit && l.at >= at);
    if (back === undefined) return null;
    last = Math.max(last, back.at);
  }
  return last;
}

/**
 * The lease bucket's leader, once it leads none of `SPREAD_STREAMS` (the engines' `LeaderSpread` moves them off it
 * within a period of a restart's elections) and is not the proxied engine's node.
 */
async function settledLeaseLeader(r: LossRun): Promise<ClusterNode> {
  const deadline = Date.now() + r.slowMs;
  for (;;) {
    const node = await settledLeaderOf(r, LEASE_STREAM);
    const shared = (await streamsLedBy(r.jsm, node.name)).filter((s) => SPREAD_STREAMS.includes(s));
    if (shared.length === 0) return node;
    if (Date.now() > deadline) throw new Error(`the lease bucket's leader ${node.name} still leads ${shared.join(", ")}`);
    await sleep(LEADER_SPREAD_EVERY_MS / 5);
  }
}

/**
 * 2c. SIGKILL of the nats-server leading the lease bucket (`KV_PEG_LEASES`; never the proxied engine's node: the
 * bucket steps down first if it leads), once the engines have moved the other streams off it, just before the
 * intake's next tick. No lease is renewed until the bucket's election ends (4-9 s on nats-server 2.9): every engine
 * fences its partitions 1 s after its last renewal, and takes them back after the election. Timed from the kill to
 * every fenced partition running again (the cluster's blind time), and to the next transition on every client (a
 * decision of the second before the fences counts there). The node is left down, once every partition runs again
 * (step 3 runs on two nodes).
 */
export async function leaseLeaderLoss(r: LossRun, m: ClusterDraft): Promise<void> {
  const reads = pollReads(r.apiPorts, r.readSymbol);
  for (let attempt = 1; ; attempt++) {
    const node = await settledLeaseLeader(r);
    m.lease_leader_node_killed = node.name;
    m.lease_leader_loss_attempts = attempt;
    m.lease_leader_loss_led = [...(await streamsLedBy(r.jsm, node.name)).filter((s) => s !== LEASE_STREAM), ...(metaLeader(r.cluster) === node.name ? ["the JetStream meta group"] : [])];
    r.step(`SIGKILL of nats-server ${node.name}, the lease bucket's leader (it also leads ${m.lease_leader_loss_led.join(", ") || "nothing else"}; try ${attempt})`);
    const seqBefore = await lastSeq(r.jsm, "PEG_TRANSITIONS");
    const killedAt = await killBeforeTick(r.jsm, node, r.tickMs);
    const next = await measuredNext(r, killedAt, seqBefore, attempt);
    if (next !== null) {
      m.lease_leader_loss_to_next_ws_ms = next.receivedAt - killedAt;
      m.lease_leader_loss_next_decided_ms = next.decidedAt - killedAt;
      m.lease_leader_loss_next_stored_ms = ((await storedAt(r.jsm, next.seq)) ?? NaN) - killedAt;
    }
    r.step(killLine(next, killedAt));
    await waitFor(() => refencedRestoredAt(r.engines, killedAt) !== null && r.leasedAgain(), r.slowMs, "every fenced partition to run again", 200);
    m.lease_leader_loss_leases_lost = leasesLost(r.engines, killedAt);
    m.lease_leader_loss_to_restored_ms = refencedRestoredAt(r.engines, killedAt)! - killedAt;
    r.step(`${m.lease_leader_loss_leases_lost} leases lapsed; every partition ran again ${m.lease_leader_loss_to_restored_ms} ms after the kill`);
    if (measured(next, killedAt) || attempt >= LOSS_TRIES) break;
    await restart(r, node);
  }
  const statuses = await reads.stop();
  m.lease_leader_loss_reads = statuses.length;
  m.lease_leader_loss_reads_not_200 = statuses.filter((x) => x !== 200).length;
}
