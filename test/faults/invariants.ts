/**
 * What must hold after every fault (issue 8): every transition JetStream acknowledged is stored exactly once, no
 * alert id repeats, every webhook event is delivered at least once with its original event id, `/readyz` reported
 * the outage and recovered, and memory came back to its baseline. Each check fails with the evidence.
 */
import { connect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { expect } from "vitest";
import type { Catalog } from "../../src/catalog/index.ts";
import { decideDispatch, eventIdFor, type PriorSend } from "../../src/delivery/index.ts";
import { replayBundle, verifyBundle, type Receipt } from "../../src/methodology/index.ts";
import type { Store } from "../../src/store/index.ts";
import type { Receiver } from "../delivery/receiver.ts";
import type { Hook, MemoryReport, ReadyzSample } from "./harness.ts";

/** Every transition in `PEG_TRANSITIONS` (each message there was acknowledged to its publisher), in stream order. */
export async function jetStreamTransitions(natsUrl: string): Promise<Receipt[]> {
  const nc = await connect({ servers: natsUrl });
  try {
    const jsm = await jetstreamManager(nc);
    const info = await jsm.streams.info("PEG_TRANSITIONS");
    const out: Receipt[] = [];
    for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
      const m = await jsm.streams.getMessage("PEG_TRANSITIONS", { seq });
      if (m !== null) out.push(m.json<Receipt>());
    }
    return out;
  } finally {
    await nc.close();
  }
}

/** True when the durable consumer has acknowledged everything in its stream (nothing pending or unacked). */
export async function consumerCaughtUp(natsUrl: string, stream: string, durable: string): Promise<boolean> {
  const nc = await connect({ servers: natsUrl });
  try {
    const jsm = await jetstreamManager(nc);
    const c = await jsm.consumers.info(stream, durable);
    return c.num_pending === 0 && c.num_ack_pending === 0;
  } finally {
    await nc.close();
  }
}

export async function storedAlertIds(store: Store): Promise<string[]> {
  const ids: string[] = [];
  for (let offset = 0; ; offset += 500) {
    const page = await store.alerts({ limit: 500, offset });
    ids.push(...page.map((a) => a.id));
    if (page.length < 500) return ids;
  }
}

const show = (r: Receipt) => `${r.alert_id} ${r.asset} ${r.from_state}->${r.to_state} at ${r.detected_at} by ${r.inputs_frozen.trigger}`;

/**
 * The acknowledged history is sound: no alert id twice; per asset, each transition starts where the previous one
 * ended (from PEGGED for the first), so none was lost or repeated in between; and every receipt verifies (its
 * decision recomputed from its frozen inputs gives the same verdict and hash).
 */
export function expectAckedHistory(acked: readonly Receipt[]): void {
  const ids = acked.map((r) => r.alert_id);
  const repeated = ids.filter((id, i) => ids.indexOf(id) !== i);
  expect(repeated, "alert ids that repeat in PEG_TRANSITIONS").toEqual([]);
  const lastTo = new Map<string, string>();
  const broken: string[] = [];
  for (const r of acked) {
    if (r.from_state !== (lastTo.get(r.asset) ?? "PEGGED")) broken.push(`${show(r)} after ${lastTo.get(r.asset) ?? "nothing"}`);
    lastTo.set(r.asset, r.to_state);
  }
  expect(broken, "transitions that do not continue their asset's history").toEqual([]);
  const failing = acked.filter((r) => verifyBundle(JSON.parse(JSON.stringify(replayBundle(r)))).exit !== 0).map(show);
  expect(failing, "receipts that do not verify").toEqual([]);
}

/**
 * How the acknowledged history compares with the offline replay of the same scenario (informational, not asserted:
 * on a scaled clock, an event-loop stall could let a dwell timer fire before samples stamped earlier were ingested, so
 * a loaded machine made the live run decide differently; `ScaledClock` prevents that since 2026-11-27, see the fault
 * suite's notes in the README).
 */
export function compareWithReplay(acked: readonly Receipt[], expected: readonly Receipt[]): string {
  const want = new Map(expected.map((r) => [r.alert_id, r.receipt_sha256]));
  const got = new Set(acked.map((r) => r.alert_id));
  const extra = acked.filter((r) => !want.has(r.alert_id));
  const missing = expected.filter((r) => !got.has(r.alert_id));
  const differ = acked.filter((r) => want.has(r.alert_id) && want.get(r.alert_id) !== r.receipt_sha256);
  if (extra.length + missing.length + differ.length === 0) return "identical to the offline replay";
  return `differs from the offline replay: ${extra.length} extra [${extra.map(show).join(", ")}], ${missing.length} missing [${missing.map(show).join(", ")}], ${differ.length} with other inputs`;
}

/** Every acknowledged transition is in the store exactly once, with the receipt JetStream holds. */
export async function expectStoredExactlyOnce(store: Store, acked: readonly Receipt[]): Promise<void> {
  const stored = await storedAlertIds(store);
  const repeated = stored.filter((id, i) => stored.indexOf(id) !== i);
  expect(repeated, "alert ids stored more than once").toEqual([]);
  const ackedIds = new Set(acked.map((r) => r.alert_id));
  expect(stored.filter((id) => !ackedIds.has(id)), "stored alerts JetStream never acknowledged").toEqual([]);
  const storedIds = new Set(stored);
  expect([...ackedIds].filter((id) => !storedIds.has(id)), "acknowledged transitions missing from the store").toEqual([]);
  for (const r of acked) {
    const row = await store.receiptById(r.alert_id);
    expect(row?.receipt.receipt_sha256, `stored receipt of ${r.alert_id}`).toBe(r.receipt_sha256);
  }
}

/**
 * The alerts a webhook must receive, by the dispatch rules (`decideDispatch`) applied to the acknowledged history
 * in stream order, as if nothing had failed: a fault may delay an event, never drop it.
 */
export function expectedWebhookAlerts(acked: readonly Receipt[], hook: Hook, catalog: Catalog): string[] {
  const asset = catalog.bySymbol(hook.asset);
  if (asset === undefined) throw new Error(`${hook.asset} is not in the catalog`);
  const sends: PriorSend[] = [];
  const out: string[] = [];
  for (const r of acked) {
    const t = { asset: r.asset, mint: r.mint, from_state: r.from_state, to_state: r.to_state, discount_bps: r.discount_bps, ts: Date.parse(r.detected_at), calibration: asset.calibration };
    if (r.mint !== asset.mint) continue;
    if (!decideDispatch(t, { threshold_bps: 10, is_active: true, asset: asset.mint }, sends).send) continue;
    sends.push({ asset: r.asset, to_state: r.to_state, ts: t.ts });
    out.push(r.alert_id);
  }
  return out;
}

/** `hook path: alert id` of every expected event the receiver has not yet accepted (answered 2xx to). */
export function undeliveredEvents(rx: Receiver, hooks: readonly Hook[], acked: readonly Receipt[], catalog: Catalog): string[] {
  const acted = new Set(rx.acted);
  const missing: string[] = [];
  for (const h of hooks) {
    for (const alertId of expectedWebhookAlerts(acked, h, catalog)) if (!acted.has(eventIdFor(h.id, alertId))) missing.push(`${h.path}: ${alertId}`);
  }
  return missing;
}

/**
 * Webhooks: each expected event was accepted at least once, every signed request verified, and every request for
 * an alert carried that alert's original event id (the same id on every retry and after every restart); no event
 * the dispatch rules did not call for was sent.
 */
export function expectWebhookEvents(rx: Receiver, hooks: readonly Hook[], acked: readonly Receipt[], catalog: Catalog): void {
  expect(undeliveredEvents(rx, hooks, acked, catalog), "webhook events never accepted").toEqual([]);
  for (const h of hooks) {
    const expected = new Set(expectedWebhookAlerts(acked, h, catalog));
    expect(expected.size, `${h.path}: events expected`).toBeGreaterThan(0);
    const requests = rx.received.filter((r) => r.path === h.path);
    expect(requests.filter((r) => !r.verified).map((r) => r.reason), `${h.path}: requests that failed verification`).toEqual([]);
    for (const r of requests) {
      const alertId = (JSON.parse(r.body) as { alert_id: string }).alert_id;
      expect(expected.has(alertId), `${h.path}: ${alertId} was not due to this webhook`).toBe(true);
      expect(r.eventId, `${h.path}: event id of ${alertId}`).toBe(eventIdFor(h.id, alertId));
    }
  }
}

/** Polls answered during [from, to] include a non-200 (0: nothing answered), and a 200 was answered after `to`. */
export function expectReadyzOutage(samples: readonly ReadyzSample[], from: number, to: number, what: string): void {
  const during = samples.filter((s) => s.at >= from && s.at <= to);
  const show = (ss: readonly ReadyzSample[]) => ss.map((s) => `${s.at - from} ms: ${s.status} ${s.message}`).join("\n");
  expect(during.some((s) => s.status !== 200), `/readyz during ${what}:\n${show(during)}`).toBe(true);
  const after = samples.filter((s) => s.at > to);
  expect(after.some((s) => s.status === 200), `/readyz after ${what}:\n${show(after.slice(0, 40))}`).toBe(true);
}

/** Every poll in [from, to] answered 200: a fault outside the service's dependencies must not make it unready. */
export function expectReadyzSteady(samples: readonly ReadyzSample[], from: number, to: number): void {
  const during = samples.filter((s) => s.at >= from && s.at <= to);
  expect(during.length).toBeGreaterThan(0);
  expect(during.filter((s) => s.status !== 200).map((s) => `${s.at - from} ms: ${s.status} ${s.message}`)).toEqual([]);
}

/**
 * "Back to its baseline", after two forced GCs in the service (started with `--expose-gc` and, as `npm start`,
 * `--max-semi-space-size=64`):
 * - the live JavaScript heap within 25 % (at least 16 MiB) of the baseline: what a leak per retry, reconnect, held
 *   transition or delivery attempt would grow;
 * - memory outside the heap (`external`: buffers, PGlite's WebAssembly memory) within 25 % (at least 16 MiB);
 * - RSS within 256 MiB of the baseline (at least 50 %): RSS also counts the young generation, which a busy spell
 *   (a catch-up after an outage) grows to up to three 64 MiB semi-spaces and which GC does not hand back, and
 *   allocator pages; so RSS only catches a gross leak, the two figures above the rest.
 */
export const MEMORY_TOLERANCE = {
  heap: { ratio: 0.25, minBytes: 16 * 2 ** 20 },
  external: { ratio: 0.25, minBytes: 16 * 2 ** 20 },
  rss: { ratio: 0.5, minBytes: 256 * 2 ** 20 },
} as const;

export function expectMemoryBack(baseline: MemoryReport, after: MemoryReport, what: string): void {
  const mib = (b: number) => `${(b / 2 ** 20).toFixed(1)} MiB`;
  const limit = (base: number, t: { ratio: number; minBytes: number }) => base + Math.max(base * t.ratio, t.minBytes);
  for (const k of ["heapUsed", "external", "rss"] as const) {
    const t = MEMORY_TOLERANCE[k === "heapUsed" ? "heap" : k];
    expect(after[k], `${k} after ${what}: ${mib(after[k])} vs baseline ${mib(baseline[k])}`).toBeLessThanOrEqual(limit(baseline[k], t));
  }
}

export function describeMemory(m: MemoryReport): string {
  const mib = (b: number) => `${(b / 2 ** 20).toFixed(1)}`;
  return `heap ${mib(m.heapUsed)} MiB, rss ${mib(m.rss)} MiB, external ${mib(m.external)} MiB`;
}
