/**
 * Webhook dispatch (interface 6.5, addendum F): turns each JetStream-acknowledged transition into delivery work.
 * For every active webhook of the transition's asset, `decideDispatch` (with the webhook's earlier sends) says
 * whether it goes out; each send becomes a pending delivery record (attempt 1, event id `eventIdFor(webhook,
 * alert)`) and a work message on `peg.delivery.<webhook id>` with `Nats-Msg-Id` = the record's id. The record id of
 * a transition's first attempt is derived from (webhook, alert), so dispatching the same transition twice (a
 * restart, a re-emitted ack) creates nothing new. Transitions are handled one at a time, in ack order, so each
 * decision sees the sends decided before it. The test and replay routes enqueue through here too.
 */
import { randomUUID } from "node:crypto";
import type { JetStreamClient } from "@nats-io/jetstream";
import type { Catalog } from "../catalog/index.ts";
import type { Receipt, EpochMs, PegState } from "../methodology/index.ts";
import {
  activeWebhooksForMint,
  alertById,
  insertDeliveryOnce,
  sentTransitions,
  undeliveredEvents,
  type Executor,
  type WebhookRecord,
} from "../store/index.ts";
import { decideDispatch, type DispatchTransition, type PriorSend } from "./dispatch.ts";
import { buildEvent, eventIdFor, serialiseEvent, type EventInput } from "./payload.ts";
import { MAX_ATTEMPTS } from "./policy.ts";
import { firstAttempt } from "./schedule.ts";
import { derivedUuid, publishWork, type DeliveryWork } from "./work.ts";

export type DispatchLog = (level: "debug" | "info" | "warn" | "error", msg: string, fields?: Record<string, unknown>) => void;

export interface DispatcherOptions {
  readonly db: Executor;
  readonly js: JetStreamClient;
  readonly catalog: Catalog;
  /** Wall clock (epoch ms): delivery records are scheduled in real time, whatever clock the engine runs on. */
  readonly now: () => EpochMs;
  /** Public base URL for `evidence_url`. */
  readonly baseUrl: string;
  /** Multiplier of the retry waits (the first wait is 0 s, so it only matters for consistency). Default 1. */
  readonly timeScale?: number;
  readonly log?: DispatchLog;
}

/** A replay window: `since` at most 7 days back (checked by the route), `until` null for open-ended. */
export interface ReplayWindow {
  readonly since: EpochMs;
  readonly until: EpochMs | null;
}

const RECENT_SENDS_KEPT = 200;

export class Dispatcher {
  readonly #o: DispatcherOptions;
  #chain: Promise<void> = Promise.resolve();
  /** Sends decided by this process, per webhook (the store's history may lag: the alert is projected later). */
  readonly #recent = new Map<string, PriorSend[]>();
  readonly stats = { transitions: 0, sent: 0, skipped: 0, failures: 0 };

  constructor(o: DispatcherOptions) {
    this.#o = o;
  }

  /** Queues one acknowledged transition; dispatches run one at a time, in order. Never rejects. */
  enqueue(receipt: Receipt): Promise<void> {
    const run = this.#chain.then(() => this.dispatch(receipt)).then(
      () => undefined,
      (e: unknown) => {
        this.stats.failures++;
        this.#o.log?.("error", "webhook dispatch failed", { alert_id: receipt.alert_id, error: e instanceof Error ? e.message : String(e) });
      },
    );
    this.#chain = run;
    return run;
  }

  /** Resolves when every queued transition is dispatched. */
  idle(): Promise<void> {
    return this.#chain;
  }

  /** Dispatches one transition to every webhook of its asset; the number of deliveries queued. */
  async dispatch(receipt: Receipt): Promise<number> {
    this.stats.transitions++;
    const asset = this.#o.catalog.byMint(receipt.mint);
    if (asset === undefined) return 0;
    const transition: DispatchTransition = {
      asset: receipt.asset,
      mint: receipt.mint,
      from_state: receipt.from_state,
      to_state: receipt.to_state,
      discount_bps: receipt.discount_bps,
      ts: Date.parse(receipt.detected_at),
      calibration: asset.calibration,
    };
    let queued = 0;
    for (const hook of await activeWebhooksForMint(this.#o.db, receipt.mint)) {
      const stored = (await sentTransitions(this.#o.db, hook.id)).map((s): PriorSend => ({ asset: s.asset, to_state: s.to_state as PegState, ts: s.ts }));
      const decision = decideDispatch(transition, { threshold_bps: hook.threshold_bps, is_active: hook.is_active, asset: hook.mint }, [
        ...stored,
        ...(this.#recent.get(hook.id) ?? []),
      ]);
      if (!decision.send) {
        this.stats.skipped++;
        continue;
      }
      const recent = this.#recent.get(hook.id) ?? [];
      recent.push({ asset: receipt.asset, to_state: receipt.to_state, ts: transition.ts });
      if (recent.length > RECENT_SENDS_KEPT) recent.shift();
      this.#recent.set(hook.id, recent);
      await this.#queue(hook, derivedUuid("first", hook.id, receipt.alert_id), {
        asset: receipt.asset,
        from_state: receipt.from_state,
        to_state: receipt.to_state,
        discount_bps: receipt.discount_bps,
        ts: transition.ts,
        alert_id: receipt.alert_id,
        // Acknowledged by JetStream; the receipt becomes readable at evidence_url once projected.
        evidence_status: "pending",
        calibration: asset.calibration,
      });
      this.stats.sent++;
      queued++;
    }
    return queued;
  }

  /** A synthetic transition (`test: true`) to one webhook, through the same worker and signing; the delivery id. */
  async test(hook: WebhookRecord): Promise<string> {
    const asset = this.#o.catalog.bySymbol(hook.asset) ?? this.#o.catalog.byMint(hook.mint);
    const id = randomUUID();
    await this.#queue(
      hook,
      id,
      {
        asset: hook.asset,
        from_state: "PEGGED",
        to_state: "DEPEG",
        discount_bps: -Math.max(hook.threshold_bps, 1),
        ts: this.#o.now(),
        alert_id: randomUUID(),
        evidence_status: "unknown",
        calibration: asset?.calibration ?? "provisional",
        test: true,
      },
      true,
    );
    return id;
  }

  /**
   * Re-sends every event of the webhook in the window that no attempt delivered (and none is still pending), each
   * with its original event id, as a new delivery starting at attempt 1. The number queued.
   */
  async replay(hook: WebhookRecord, window: ReplayWindow): Promise<number> {
    let queued = 0;
    for (const e of await undeliveredEvents(this.#o.db, hook.id, window.since, window.until)) {
      const alert = await alertById(this.#o.db, e.alert_id);
      if (alert === undefined) continue;
      const calibration = alert.calibration === "calibrated" ? "calibrated" : "provisional";
      await this.#queue(hook, randomUUID(), {
        asset: alert.asset,
        from_state: alert.from_state,
        to_state: alert.to_state,
        discount_bps: alert.discount_bps,
        ts: alert.detected_at,
        alert_id: alert.id,
        evidence_status: "ready",
        calibration,
      });
      queued++;
    }
    return queued;
  }

  async #queue(hook: WebhookRecord, deliveryId: string, input: EventInput, test = false): Promise<void> {
    const event = buildEvent(input, this.#o.baseUrl);
    const eventId = eventIdFor(hook.id, input.alert_id);
    const due = firstAttempt(this.#o.now(), this.#o.timeScale ?? 1).at;
    await insertDeliveryOnce(this.#o.db, {
      id: deliveryId,
      webhook_id: hook.id,
      event_id: eventId,
      alert_id: test ? null : input.alert_id,
      attempt: 1,
      max_attempts: MAX_ATTEMPTS,
      status: "pending",
      response_status: null,
      error: null,
      duration_ms: null,
      request_headers: null,
      response_body_excerpt: null,
      scheduled_at: due,
      sent_at: null,
      next_attempt_at: null,
      test,
    });
    const work: DeliveryWork = {
      v: 1,
      delivery_id: deliveryId,
      root_id: deliveryId,
      webhook_id: hook.id,
      event_id: eventId,
      alert_id: test ? null : input.alert_id,
      attempt: 1,
      not_before: due,
      body: serialiseEvent(event),
      test,
    };
    await publishWork(this.#o.js, work);
  }
}
