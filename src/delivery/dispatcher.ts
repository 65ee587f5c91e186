/**
 * Dispatch (interface 6.5, addendum F): turns each JetStream-acknowledged transition into delivery work for the
 * webhooks and the subscriptions of its asset. It runs as a durable consumer of `PEG_TRANSITIONS` (service.ts), one
 * transition at a time in stream order, and the message is acknowledged only after its dispatch is written, so a
 * transition acknowledged just before a crash is still dispatched after the restart.
 *
 * For each target `decideDispatch` reads the target's earlier sends from the dispatch log (not from the alert
 * projection, which may lag). A send is logged first, then queued: a webhook send becomes a pending delivery record
 * (attempt 1, event id `eventIdFor(webhook, alert)`) and a work message on `peg.delivery.<webhook id>`; a
 * subscription send stamps `last_fired_at` and, on channel `telegram`, becomes a notification (held to the end of the
 * user's quiet hours, or `suppressed` below their minimum severity) and a work message on
 * `peg.delivery.telegram.<subscription id>`. Every id is derived from (target, alert) and a send's own log entry is
 * ignored by the rules (it is not earlier than itself), so dispatching the same transition twice decides the same and
 * creates nothing new. The test and replay routes enqueue through here too.
 */
import { randomUUID } from "node:crypto";
import type { JetStreamClient } from "@nats-io/jetstream";
import type { Catalog } from "../catalog/index.ts";
import type { Receipt, EpochMs, PegState } from "../methodology/index.ts";
import {
  activeSubscriptionsForMint,
  activeWebhooksForMint,
  alertById,
  insertDeliveryOnce,
  insertNotificationOnce,
  logSend,
  loggedSends,
  markSubscriptionFired,
  subscriptionTarget,
  undeliveredEvents,
  webhookTarget,
  type Executor,
  type SubscriberOf,
  type WebhookRecord,
} from "../store/index.ts";
import { decideDispatch, type DispatchTarget, type DispatchTransition, type PriorSend } from "./dispatch.ts";
import { buildEvent, eventIdFor, serialiseEvent, type EventInput } from "./payload.ts";
import { MAX_ATTEMPTS } from "./policy.ts";
import { firstAttempt } from "./schedule.ts";
import { decideTelegram } from "./telegram.ts";
import { derivedUuid, publishTelegramWork, publishWork, type DeliveryWork } from "./work.ts";

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
  /** Whether Telegram notifications are sent (a bot token is configured). Default false: none are created. */
  readonly telegram?: boolean;
}

/** A replay window: `since` at most 7 days back (checked by the route), `until` null for open-ended. */
export interface ReplayWindow {
  readonly since: EpochMs;
  readonly until: EpochMs | null;
}

export class Dispatcher {
  readonly #o: DispatcherOptions;
  #chain: Promise<void> = Promise.resolve();
  readonly stats = { transitions: 0, sent: 0, skipped: 0, failures: 0, notifications: 0 };

  constructor(o: DispatcherOptions) {
    this.#o = o;
  }

  /** Queues one transition; dispatches run one at a time, in order. Never rejects (failures are logged). */
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

  /** Dispatches one transition to every webhook and subscription of its asset; the number of sends queued. */
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
    const input: EventInput = {
      asset: receipt.asset,
      from_state: receipt.from_state,
      to_state: receipt.to_state,
      discount_bps: receipt.discount_bps,
      ts: transition.ts,
      alert_id: receipt.alert_id,
      // Acknowledged by JetStream; the receipt becomes readable at evidence_url once projected.
      evidence_status: "pending",
      calibration: asset.calibration,
    };
    let queued = 0;
    for (const hook of await activeWebhooksForMint(this.#o.db, receipt.mint)) {
      const target = { threshold_bps: hook.threshold_bps, is_active: hook.is_active, asset: hook.mint };
      if (!(await this.#decide(webhookTarget(hook.id), target, transition, receipt.alert_id))) continue;
      await this.#queue(hook, derivedUuid("first", hook.id, receipt.alert_id), input);
      queued++;
    }
    for (const sub of await activeSubscriptionsForMint(this.#o.db, receipt.mint)) {
      const s = sub.subscription;
      const target = { threshold_bps: s.threshold_bps, is_active: s.is_active, asset: s.mint };
      if (!(await this.#decide(subscriptionTarget(s.id), target, transition, receipt.alert_id))) continue;
      await markSubscriptionFired(this.#o.db, s.id, transition.ts);
      if (s.channel === "telegram" && this.#o.telegram === true) await this.#notify(sub, input);
      queued++;
    }
    return queued;
  }

  /** Applies the addendum F rules against the target's logged sends; a send is logged before it is queued. */
  async #decide(key: string, target: DispatchTarget, transition: DispatchTransition, alertId: string): Promise<boolean> {
    const prior = (await loggedSends(this.#o.db, key)).map((s): PriorSend => ({ asset: s.asset, to_state: s.to_state as PegState, ts: s.ts }));
    const decision = decideDispatch(transition, target, prior);
    if (!decision.send) {
      this.stats.skipped++;
      return false;
    }
    await logSend(this.#o.db, key, { alert_id: alertId, asset: transition.asset, to_state: transition.to_state, ts: transition.ts });
    this.stats.sent++;
    return true;
  }

  /** A Telegram notification of a fired subscription: suppressed below the user's minimum severity, else queued. */
  async #notify(sub: SubscriberOf, input: EventInput): Promise<void> {
    const now = this.#o.now();
    const decision = decideTelegram(input, sub.user.preferences, now);
    const id = derivedUuid("telegram", String(sub.subscription.id), input.alert_id);
    const held = decision.send && "heldForQuietHours" in decision;
    const due = decision.send ? decision.at : now;
    await insertNotificationOnce(this.#o.db, {
      id,
      subscription_id: sub.subscription.id,
      user_id: sub.user.id,
      alert_id: input.alert_id,
      status: decision.send ? "pending" : "suppressed",
      due_at: due,
      held_for_quiet_hours: held,
      error: decision.send ? null : decision.reason,
      created_at: now,
    });
    if (!decision.send) return;
    await publishTelegramWork(this.#o.js, {
      v: 1,
      kind: "telegram",
      notification_id: id,
      subscription_id: sub.subscription.id,
      chat_id: sub.user.telegram_id,
      alert_id: input.alert_id,
      attempt: 1,
      not_before: due,
      body: serialiseEvent(buildEvent(input, this.#o.baseUrl)),
    });
    this.stats.notifications++;
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

/** One transition message of `PEG_TRANSITIONS` as the dispatch consumer hands it over. */
export interface TransitionMessage {
  readonly seq: number;
  readonly data: Uint8Array;
}

const decoder = new TextDecoder();

/**
 * The batch handler of the durable dispatch consumer: dispatches each transition in stream order and resolves only
 * when all are written (the batch is then acknowledged; a failure rejects, and the batch is redelivered and
 * dispatched again, to the same ids). A message that is not a receipt is reported and skipped. Once dispatched, the
 * alert's `dispatched_at` is stamped by `markDispatched`, retried for a few seconds in the background because the
 * projection may not have written the alert yet.
 */
export function dispatchHandler(
  dispatcher: Dispatcher,
  markDispatched: (alertId: string) => Promise<boolean>,
  onReject?: (why: string) => void,
): (batch: readonly TransitionMessage[]) => Promise<void> {
  const mark = (alertId: string, tries: number): void => {
    void markDispatched(alertId).then(
      (done) => {
        if (!done && tries > 1) setTimeout(() => mark(alertId, tries - 1), 250).unref();
      },
      () => undefined,
    );
  };
  return async (batch) => {
    for (const m of batch) {
      let receipt: Receipt;
      try {
        receipt = JSON.parse(decoder.decode(m.data)) as Receipt;
      } catch {
        onReject?.(`transition seq ${m.seq}: not JSON`);
        continue;
      }
      if (typeof receipt !== "object" || receipt === null || typeof receipt.alert_id !== "string" || typeof receipt.mint !== "string") {
        onReject?.(`transition seq ${m.seq}: not a receipt`);
        continue;
      }
      await dispatcher.dispatch(receipt);
      mark(receipt.alert_id, 20);
    }
  };
}
