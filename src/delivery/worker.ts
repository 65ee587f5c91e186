/**
 * The webhook delivery worker (interface 6.3, 6.4; addendum F): a durable JetStream consumer on `PEG_DELIVERIES`.
 * Each message is one attempt, due at `not_before`; an early one is handed back with a NAK delay (`m.nak(ms)`), so
 * the wait lives in JetStream, not in a process timer. A due attempt is sent once (`attemptDelivery`: SSRF re-check
 * with the pinned address, 5 s budget, no redirects), signed with the active key for `signed` webhooks or formatted
 * for `chat` ones (unsigned), and recorded on its delivery row; the webhook's outcome columns follow. On failure the
 * row gets `next_attempt_at` (from `nextAttempt`, honouring a longer 429 Retry-After, times the time scale) and the
 * next attempt is a new pending row and a new message (both ids derived from the first attempt, so a crash between
 * these steps repeats them idempotently); after the sixth failure the row is `dead_lettered`. The message is acked
 * only after all of that, so a restart resumes exactly where the schedule was.
 */
import { AckPolicy, DeliverPolicy, jetstream, type JetStreamManager, type JsMsg } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { ensureDurable } from "../streams/jetstream/consumer.ts";
import type { EpochMs } from "../methodology/index.ts";
import {
  deliveryById,
  finishDelivery,
  insertDeliveryOnce,
  notificationById,
  recordNotificationAttempt,
  recordWebhookOutcome,
  subscriptionIsActive,
  suppressNotification,
  webhookById,
  type DeliveryRecord,
  type Executor,
} from "../store/index.ts";
import { attemptDelivery, type AttemptResult } from "./attempt.ts";
import { chatMessage, type ChatMessage } from "./chat.ts";
import type { DispatchLog } from "./dispatcher.ts";
import type { KeyRing } from "./key-ring.ts";
import type { WebhookEvent } from "./payload.ts";
import { MAX_ATTEMPTS } from "./policy.ts";
import { nextAttempt } from "./schedule.ts";
import { signDelivery, unixSeconds } from "./signing.ts";
import type { Resolve } from "./ssrf.ts";
import { systemResolve } from "./pinned-request.ts";
import { sendTelegram } from "./telegram.ts";
import { attemptId, DELIVERY_SUBJECT_PREFIX, parseAnyWork, publishTelegramWork, publishWork, type DeliveryWork, type TelegramWork } from "./work.ts";

export const WORKER_DURABLE = "webhook-worker";

/**
 * 20 s (ns). An attempt takes at most 5 s plus its records; a longer one is redelivered and waits for the first
 * (`attempting`). Short because a message delivered to a process as it stops (e.g. the follow-up an in-flight attempt
 * publishes during a graceful shutdown) stays unacknowledged until this runs out: it then goes to the next process.
 */
const WORKER_ACK_WAIT_NS = 20_000_000_000;

export interface WorkerOptions {
  readonly nc: NatsConnection;
  readonly jsm: JetStreamManager;
  readonly db: Executor;
  readonly keys: KeyRing;
  /** Wall clock, epoch ms. */
  readonly now: () => EpochMs;
  /** Multiplier of the retry waits and of Retry-After. Default 1. */
  readonly timeScale?: number;
  /** Attempts in flight at once. Default 16. */
  readonly concurrency?: number;
  readonly log?: DispatchLog;
  /** Default: the system resolver. */
  readonly resolve?: Resolve;
  /** The Telegram Bot API (base URL and bot token) for `telegram` work; absent: such work is closed unsent. */
  readonly telegram?: { readonly apiUrl: string; readonly botToken: string };
  /** Destination ports allowed besides 443 (WEBHOOK_ALLOWED_PORTS), checked again before every attempt. Default none. */
  readonly allowedPorts?: readonly number[];
  /** Tests only: extra trusted CA (a test receiver's) and loopback destinations allowed. */
  readonly testOnly?: { readonly ca?: string; readonly allowLoopback?: boolean };
}

export interface DeliveryWorker {
  readonly stats: { attempts: number; delivered: number; failed: number; deadLettered: number; telegram: { attempts: number; delivered: number; deadLettered: number } };
  /** Stops taking messages and waits for the attempts in flight. Idempotent. */
  stop(): Promise<void>;
}

function outcomeFields(r: AttemptResult, headers: Readonly<Record<string, string>> | null, sentAt: EpochMs) {
  return {
    response_status: r.responseStatus,
    error: r.error,
    duration_ms: r.durationMs,
    request_headers: headers,
    response_body_excerpt: r.responseBodyExcerpt,
    sent_at: sentAt,
  };
}

export async function startDeliveryWorker(o: WorkerOptions): Promise<DeliveryWorker> {
  const scale = o.timeScale ?? 1;
  const resolve = o.resolve ?? systemResolve;
  const limit = o.concurrency ?? 16;
  const stats = { attempts: 0, delivered: 0, failed: 0, deadLettered: 0, telegram: { attempts: 0, delivered: 0, deadLettered: 0 } };
  const stream = "PEG_DELIVERIES";
  const existing = await ensureDurable(o.jsm, stream, {
    durable_name: WORKER_DURABLE,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    filter_subject: `${DELIVERY_SUBJECT_PREFIX}>`,
    // Waiting attempts sit NAK'ed with a delay and count as pending: room for many.
    max_ack_pending: 20_000,
    ack_wait: WORKER_ACK_WAIT_NS,
  });
  if (existing !== undefined && existing.config.ack_wait !== WORKER_ACK_WAIT_NS) {
    await o.jsm.consumers.update(stream, WORKER_DURABLE, { ack_wait: WORKER_ACK_WAIT_NS });
  }
  const js = jetstream(o.nc);
  const consumer = await js.consumers.get(stream, WORKER_DURABLE);
  const messages = await consumer.consume({ max_messages: limit * 2 });
  const inflight = new Set<Promise<void>>();
  // Delivery ids being attempted: a second copy of the same attempt's message (re-published after a crash outside
  // the duplicate window) waits until the first is recorded, then finds its row finished and sends nothing.
  const attempting = new Set<string>();

  /** Queues the attempt after `row` (failed, with next_attempt_at): its pending row and its message. */
  const enqueueNext = async (w: DeliveryWork, row: DeliveryRecord): Promise<void> => {
    if (row.status !== "failed" || row.next_attempt_at === null || row.attempt >= MAX_ATTEMPTS) return;
    const attempt = row.attempt + 1;
    const id = attemptId(w.root_id, attempt);
    await insertDeliveryOnce(o.db, {
      id,
      webhook_id: w.webhook_id,
      event_id: w.event_id,
      alert_id: w.alert_id,
      attempt,
      max_attempts: MAX_ATTEMPTS,
      status: "pending",
      response_status: null,
      error: null,
      duration_ms: null,
      request_headers: null,
      response_body_excerpt: null,
      scheduled_at: row.next_attempt_at,
      sent_at: null,
      next_attempt_at: null,
      test: w.test,
    });
    await publishWork(js, { ...w, delivery_id: id, attempt, not_before: row.next_attempt_at });
  };

  const perform = async (w: DeliveryWork): Promise<void> => {
    const row = await deliveryById(o.db, w.delivery_id);
    if (row === undefined) {
      o.log?.("warn", "delivery work without its record; dropped", { delivery_id: w.delivery_id });
      return;
    }
    if (row.status !== "pending") return enqueueNext(w, row); // done before a crash: only the follow-up may be missing
    const hook = await webhookById(o.db, w.webhook_id);
    const startedAt = o.now();
    // A webhook deleted (deactivated) while its delivery waited: the attempt is closed without a request.
    if (hook === undefined || (!hook.is_active && !w.test)) {
      await finishDelivery(o.db, row.id, { status: "failed", response_status: null, error: null, duration_ms: null, request_headers: null, response_body_excerpt: null, sent_at: null, next_attempt_at: null });
      return;
    }
    let url = hook.url;
    let body = w.body;
    let headers: Record<string, string>;
    if (hook.format === "chat") {
      let msg: ChatMessage;
      try {
        msg = chatMessage(hook.url, JSON.parse(w.body) as WebhookEvent);
      } catch (e) {
        await finishDelivery(o.db, row.id, { status: "dead_lettered", response_status: null, error: null, duration_ms: null, request_headers: null, response_body_excerpt: e instanceof Error ? e.message.slice(0, 1024) : null, sent_at: null, next_attempt_at: null });
        await recordWebhookOutcome(o.db, hook.id, "dead_lettered", startedAt);
        return;
      }
      url = msg.url;
      body = msg.body;
      headers = { ...msg.headers };
    } else {
      headers = signDelivery({ eventId: w.event_id, deliveryId: row.id, attempt: w.attempt, timestamp: unixSeconds(startedAt), body, key: o.keys.active() });
    }
    const result = await attemptDelivery({
      url,
      body,
      headers,
      resolve,
      now: o.now,
      ...(o.testOnly?.ca === undefined ? {} : { ca: o.testOnly.ca }),
      ...(o.testOnly?.allowLoopback === true ? { allowLoopbackForTests: true } : {}),
      ...(o.allowedPorts === undefined ? {} : { allowedPorts: o.allowedPorts }),
    });
    stats.attempts++;
    // A Telegram URL carries the bot token: the recorded headers never do, and nothing else is secret.
    const fields = outcomeFields(result, headers, startedAt);
    if (result.status === "delivered") {
      stats.delivered++;
      await finishDelivery(o.db, row.id, { status: "delivered", ...fields, next_attempt_at: null });
      await recordWebhookOutcome(o.db, hook.id, "delivered", o.now());
      return;
    }
    const step = nextAttempt(Math.min(w.attempt, MAX_ATTEMPTS), o.now(), result.retryAfterMs, scale);
    if (step === "dead_letter") {
      stats.deadLettered++;
      await finishDelivery(o.db, row.id, { status: "dead_lettered", ...fields, next_attempt_at: null });
      await recordWebhookOutcome(o.db, hook.id, "dead_lettered", o.now());
      return;
    }
    stats.failed++;
    await finishDelivery(o.db, row.id, { status: "failed", ...fields, next_attempt_at: step.at });
    await recordWebhookOutcome(o.db, hook.id, "failed", o.now());
    await enqueueNext(w, { ...row, status: "failed", next_attempt_at: step.at });
  };

  /**
   * One Telegram attempt. The notification row counts attempts: attempt n runs only while the row is pending with
   * n - 1 made, and its outcome is recorded by a conditional update, so a redelivered message never sends twice;
   * a message for an attempt already recorded only re-publishes the follow-up (idempotent by its message id).
   */
  const performTelegram = async (w: TelegramWork): Promise<void> => {
    const row = await notificationById(o.db, w.notification_id);
    if (row === undefined) {
      o.log?.("warn", "telegram work without its notification; dropped", { notification_id: w.notification_id });
      return;
    }
    if (row.status !== "pending") return;
    if (row.attempts >= w.attempt) {
      // Recorded before a crash; the follow-up's message may be missing.
      await publishTelegramWork(js, { ...w, attempt: row.attempts + 1, not_before: row.due_at });
      return;
    }
    if (row.attempts !== w.attempt - 1) return; // a stale message of an attempt that never was
    if (o.telegram === undefined) {
      await suppressNotification(o.db, row.id, "telegram_disabled");
      return;
    }
    if (!(await subscriptionIsActive(o.db, row.subscription_id))) {
      await suppressNotification(o.db, row.id, "subscription_inactive");
      return;
    }
    let event: WebhookEvent;
    try {
      event = JSON.parse(w.body) as WebhookEvent;
    } catch {
      await recordNotificationAttempt(o.db, row.id, { attempt: w.attempt, status: "dead_lettered", response_status: null, error: "malformed event", message_id: null, sent_at: o.now(), due_at: null });
      return;
    }
    const sentAt = o.now();
    const result = await sendTelegram(o.telegram.apiUrl, o.telegram.botToken, w.chat_id, event);
    stats.telegram.attempts++;
    if (result.status === "delivered") {
      stats.telegram.delivered++;
      await recordNotificationAttempt(o.db, row.id, { attempt: w.attempt, status: "delivered", response_status: 200, error: null, message_id: result.messageId, sent_at: sentAt, due_at: null });
      return;
    }
    const responseStatus = result.responseStatus;
    const step = result.permanent ? "dead_letter" : nextAttempt(Math.min(w.attempt, MAX_ATTEMPTS), o.now(), result.retryAfterMs, scale);
    if (step === "dead_letter") {
      stats.telegram.deadLettered++;
      await recordNotificationAttempt(o.db, row.id, { attempt: w.attempt, status: "dead_lettered", response_status: responseStatus, error: result.error, message_id: null, sent_at: sentAt, due_at: null });
      return;
    }
    const recorded = await recordNotificationAttempt(o.db, row.id, { attempt: w.attempt, status: "pending", response_status: responseStatus, error: result.error, message_id: null, sent_at: sentAt, due_at: step.at });
    if (recorded) await publishTelegramWork(js, { ...w, attempt: w.attempt + 1, not_before: step.at });
  };

  const handle = async (m: JsMsg): Promise<void> => {
    const parsed = parseAnyWork(m.data);
    if (parsed === null) {
      o.log?.("warn", "malformed delivery work message; terminated", { seq: m.seq });
      m.term();
      return;
    }
    const w = parsed.work;
    const wait = w.not_before - o.now();
    if (wait > 0) {
      m.nak(wait);
      return;
    }
    const key = parsed.kind === "webhook" ? parsed.work.delivery_id : `telegram:${parsed.work.notification_id}`;
    if (attempting.has(key)) {
      m.nak(1_000);
      return;
    }
    attempting.add(key);
    try {
      if (parsed.kind === "webhook") await perform(parsed.work);
      else await performTelegram(parsed.work);
      m.ack();
    } catch (e) {
      o.log?.("warn", "delivery attempt failed to record; it will be redelivered", { work: key, error: e instanceof Error ? e.message : String(e) });
      m.nak(1_000);
    } finally {
      attempting.delete(key);
    }
  };

  const loop = (async () => {
    for await (const m of messages) {
      const p = handle(m).finally(() => inflight.delete(p));
      inflight.add(p);
      if (inflight.size >= limit) await Promise.race(inflight);
    }
  })().catch((e: unknown) => o.log?.("error", "delivery worker stopped", { error: e instanceof Error ? e.message : String(e) }));

  let stopped: Promise<void> | null = null;
  return {
    stats,
    stop: () =>
      (stopped ??= (async () => {
        await messages.close();
        await loop;
        await Promise.allSettled([...inflight]);
      })()),
  };
}
