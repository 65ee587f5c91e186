/**
 * The wire bodies of the signed-in user's resources (interface 4.7): a user, a subscription, a webhook and one
 * delivery record, with instants as RFC 3339 strings.
 */
import { timestampToWire, type EpochMs } from "../../methodology/index.ts";
import type { DeliveryRecord, SubscriptionRecord, UserRecord, WebhookRecord } from "../../store/index.ts";

const ts = (ms: EpochMs): string => timestampToWire(ms);
const tsOrNull = (ms: EpochMs | null): string | null => (ms === null ? null : timestampToWire(ms));

export function userBody(u: UserRecord) {
  return {
    id: u.id,
    telegram_id: u.telegram_id,
    username: u.username ?? "",
    first_name: u.first_name,
    locale: u.locale,
    created_at: ts(u.created_at),
    preferences: u.preferences,
  };
}

export function subscriptionBody(s: SubscriptionRecord) {
  return {
    id: s.id,
    asset: s.asset,
    channel: s.channel,
    created_at: ts(s.created_at),
    is_active: s.is_active,
    threshold_bps: s.threshold_bps,
    ...(s.last_fired_at === null ? {} : { last_fired_at: ts(s.last_fired_at) }),
  };
}

export function webhookBody(w: WebhookRecord) {
  return {
    id: w.id,
    url: w.url,
    asset: w.asset,
    threshold_bps: w.threshold_bps,
    is_active: w.is_active,
    created_at: ts(w.created_at),
    updated_at: ts(w.updated_at),
    last_delivery_at: tsOrNull(w.last_delivery_at),
    last_status: w.last_status,
    consecutive_failures: w.consecutive_failures,
    format: w.format,
  };
}

export function deliveryBody(d: DeliveryRecord) {
  return {
    id: d.id,
    event_id: d.event_id,
    alert_id: d.alert_id,
    attempt: d.attempt,
    max_attempts: d.max_attempts,
    status: d.status,
    response_status: d.response_status,
    error: d.error,
    duration_ms: d.duration_ms,
    request_headers: d.request_headers,
    response_body_excerpt: d.response_body_excerpt,
    scheduled_at: ts(d.scheduled_at),
    sent_at: tsOrNull(d.sent_at),
    next_attempt_at: tsOrNull(d.next_attempt_at),
  };
}
