/**
 * What the scale-out tests check of a cluster run: WebSocket clients that record every message, the acknowledged
 * history read back from `PEG_TRANSITIONS`, its comparison with the offline replay, and the lease bucket's history
 * (no owner change before the previous lease expired).
 */
import type { JetStreamManager } from "@nats-io/jetstream";
import { Kvm, type KvWatchEntry } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { expect } from "vitest";
import WebSocket from "ws";
import type { Receipt, Sample } from "../../src/methodology/index.ts";
import { decodeIntakeBatch } from "../../src/streams/jetstream/intake-batch.ts";
import { subjects, TOPOLOGY } from "../../src/streams/jetstream/topology.ts";
import { LEASE_BUCKET, type LeaseValue } from "../../src/streams/jetstream/leases.ts";

export type Msg = Record<string, unknown> & { type: string };

/** A WebSocket client subscribed to every asset from the start of the stream. */
export class Client {
  readonly messages: Msg[] = [];
  readonly ws: WebSocket;
  closed: { code: number; at: number } | null = null;
  constructor(
    readonly name: string,
    url: string,
  ) {
    this.ws = new WebSocket(url);
    this.ws.on("message", (data, isBinary) => {
      if (!isBinary) this.messages.push({ ...(JSON.parse(data.toString()) as Msg), received_at: Date.now() });
    });
    this.ws.on("open", () => this.ws.send(JSON.stringify({ op: "subscribe", assets: ["*"], since_seq: 0 })));
    this.ws.on("close", (code) => (this.closed = { code, at: Date.now() }));
    this.ws.on("error", () => {});
  }
  transitions(): Msg[] {
    return this.messages.filter((m) => m.type === "transition");
  }
}

/** Every receipt in `PEG_TRANSITIONS`, in stream order, with the stream's first sequence. */
export async function ackedHistory(jsm: JetStreamManager): Promise<{ receipts: Receipt[]; firstSeq: number }> {
  const info = await jsm.streams.info("PEG_TRANSITIONS");
  const receipts: Receipt[] = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
    const m = await jsm.streams.getMessage("PEG_TRANSITIONS", { seq }).catch(() => null);
    if (m !== null) receipts.push(m.json<Receipt>());
  }
  return { receipts, firstSeq: info.state.first_seq };
}

/**
 * The samples of `scenario` that no message of `PEG_INTAKE` holds (the shared intake's stream), from its first sample
 * (the first intake starts there, however long the engines took to start). Read message by message.
 */
export async function missingIntakeSamples(jsm: JetStreamManager, scenario: readonly Sample[]): Promise<string[]> {
  const info = await jsm.streams.info(TOPOLOGY.intake.stream);
  const seen = new Set<string>();
  for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
    const m = await jsm.streams.getMessage(TOPOLOGY.intake.stream, { seq }).catch(() => null);
    if (m === null || m.subject === subjects.intakeTick || m.subject === subjects.intakeSupply) continue;
    for (const { sample } of decodeIntakeBatch(m.data).samples) seen.add(`${sample.asset}@${sample.ts}`);
  }
  return scenario.filter((x) => !seen.has(`${x.asset}@${x.ts}`)).map((x) => `${x.asset}@${new Date(x.ts).toISOString()}`);
}

/**
 * The acknowledged history is the offline replay: no alert id twice, none missing or invented, every receipt
 * identical hash for hash, one unbroken chain of states per asset. Returns the counts for a report.
 */
export function expectReplayed(acked: readonly Receipt[], expected: readonly Receipt[], context: string): { lost: number; duplicated: number; invented: number } {
  const ids = acked.map((r) => r.alert_id);
  const duplicated = ids.length - new Set(ids).size;
  const byId = new Map(expected.map((r) => [r.alert_id, r]));
  const ackedSet = new Set(ids);
  const line = (r: Receipt) => `${r.asset} ${r.from_state}->${r.to_state} at ${r.detected_at} (${r.alert_id})`;
  const extra = acked.filter((r) => !byId.has(r.alert_id)).map(line);
  const missing = expected.filter((r) => !ackedSet.has(r.alert_id)).map(line);
  expect(duplicated, "no alert id twice").toBe(0);
  expect({ extra, missing }, context).toEqual({ extra: [], missing: [] });
  for (const r of acked) {
    const want = byId.get(r.alert_id)!;
    if (r.receipt_sha256 !== want.receipt_sha256) {
      const diff = (a: Record<string, unknown>, b: Record<string, unknown>) =>
        Object.keys({ ...a, ...b }).filter((k) => JSON.stringify(a[k]) !== JSON.stringify(b[k])).map((k) => `${k}: ${JSON.stringify(a[k])} vs ${JSON.stringify(b[k])}`);
      expect.fail(`${r.asset} ${r.alert_id} at ${r.detected_at} differs: ${[...diff({ ...r.inputs_frozen }, { ...want.inputs_frozen }), ...diff({ ...r.computed }, { ...want.computed })].join("; ")}`);
    }
  }
  const lastTo = new Map<string, string>();
  for (const r of acked) {
    expect(r.from_state, `${r.asset} continuity`).toBe(lastTo.get(r.asset) ?? "PEGGED");
    lastTo.set(r.asset, r.to_state);
  }
  return { lost: missing.length, duplicated, invented: extra.length };
}

export interface LeaseEvent {
  readonly key: string;
  readonly op: string;
  readonly value: LeaseValue | null;
  /** The server's time of the write. */
  readonly at: number;
}

/** Watches the lease bucket's keys under `prefix` (e.g. `partition.>`): every write, as the bucket saw it. */
export async function watchLeases(nc: NatsConnection, prefix: string, replicas = 1): Promise<{ readonly history: LeaseEvent[]; stop(): void }> {
  const history: LeaseEvent[] = [];
  const kv = await new Kvm(nc).create(LEASE_BUCKET, { history: 1, replicas });
  const watch = await kv.watch({ key: prefix });
  void (async () => {
    for await (const e of watch as AsyncIterable<KvWatchEntry>) {
      history.push({ key: e.key, op: e.operation, value: e.operation === "PUT" ? e.json<LeaseValue>() : null, at: e.created.getTime() });
    }
  })();
  return { history, stop: () => watch.stop() };
}

/** A lease written by a new owner before the previous owner's lease expired. */
export interface EarlyHandover {
  readonly key: string;
  readonly owner: string;
  readonly at: number;
  readonly previous: string;
  readonly expiresAt: number;
}

/**
 * Owner changes that came before the previous owner's lease expired (or was deleted): must be none. A watch that lags
 * (its consumer re-created after a nats-server loss) can miss a delete marker: the bucket keeps one entry per key, so
 * a delete followed at once by another engine's create leaves only the create to read.
 */
export function earlyHandovers(history: readonly LeaseEvent[]): EarlyHandover[] {
  const last = new Map<string, LeaseEvent>();
  const early: EarlyHandover[] = [];
  for (const h of history) {
    const prev = last.get(h.key);
    if (prev !== undefined && prev.op === "PUT" && h.op === "PUT" && prev.value!.owner !== h.value!.owner && h.at < prev.value!.expires_at) {
      early.push({ key: h.key, owner: h.value!.owner, at: h.at, previous: prev.value!.owner, expiresAt: prev.value!.expires_at });
    }
    last.set(h.key, h);
  }
  return early;
}

/**
 * A client as a user of two API processes writes it: subscribed to every asset; when its connection closes it
 * reconnects to the next address with `since_seq` = the last transition it processed, so it expects every transition
 * once, in order, across the failover.
 */
export class FailoverClient {
  readonly transitions: Msg[] = [];
  readonly errors: Msg[] = [];
  readonly closes: { url: string; code: number; at: number }[] = [];
  #ws: WebSocket | null = null;
  #next = 0;
  #stopped = false;
  constructor(
    readonly name: string,
    readonly urls: readonly string[],
  ) {
    this.#open();
  }
  #open(): void {
    const url = this.urls[this.#next % this.urls.length]!;
    const since = this.transitions.at(-1)?.["seq"] ?? 0;
    const ws = new WebSocket(url);
    this.#ws = ws;
    ws.on("open", () => ws.send(JSON.stringify({ op: "subscribe", assets: ["*"], since_seq: since })));
    ws.on("message", (data, isBinary) => {
      if (isBinary) return;
      const m = { ...(JSON.parse(data.toString()) as Msg), received_at: Date.now(), via: url };
      if (m.type === "transition") this.transitions.push(m);
      else if (m.type === "error") this.errors.push(m);
    });
    ws.on("error", () => {});
    ws.on("close", (code) => {
      this.closes.push({ url, code, at: Date.now() });
      if (this.#stopped) return;
      this.#next++;
      setTimeout(() => this.#open(), 100);
    });
  }
  close(): void {
    this.#stopped = true;
    this.#ws?.close();
  }
}
