/**
 * The webhook event body of interface 6.1: every field always present, in a fixed order, serialised once. The string
 * this module returns is the exact byte sequence that is signed and sent (`signDelivery` signs it, the request writes
 * it unchanged), so there is no second `JSON.stringify` that could reorder or re-encode anything.
 *
 * Event ids are deterministic: `eventIdFor(webhookId, alertId)` is a UUIDv8 (RFC 9562 section 5.8, the
 * vendor-specific version) whose 122 free bits are the first bits of
 * `SHA-256("peg-oracle/webhook-event/v1" 0x00 webhookId 0x00 alertId)`, with the version nibble set to 8 and the
 * variant bits to 10. It is the UUIDv5 construction with SHA-256 instead of SHA-1 (RFC 9562 section 6.5 recommends
 * exactly this for name-based ids). The alert id must be a UUID: being fixed-length and last, it keeps the hash input
 * unambiguous. The same (webhook, alert) pair therefore always gets the same event id: every
 * retry and every replay re-sends the original id, and receivers de-duplicate on it (interface 6.3.4).
 */
import { createHash } from "node:crypto";
import type { Calibration } from "../catalog/index.ts";
import { timestampToWire, type EpochMs, type PegState } from "../methodology/index.ts";

export const EVIDENCE_STATUSES = ["ready", "pending", "failed_permanent", "unknown"] as const;
/** Whether the alert's receipt can be fetched from `evidence_url` yet (addendum A, audit lookups). */
export type EvidenceStatus = (typeof EVIDENCE_STATUSES)[number];

/** The webhook event of interface 6.1, field names as on the wire. */
export interface WebhookEvent {
  readonly asset: string;
  readonly from_state: PegState;
  readonly to_state: PegState;
  /** Signed spread at trigger, integer basis points. */
  readonly discount_bps: number;
  /** RFC 3339 UTC with milliseconds, the instant of the state change. */
  readonly ts: string;
  /** UUID of the alert; the receipt is at `evidence_url`. */
  readonly alert_id: string;
  /** Absolute URL of the alert's public receipt: `<base URL>/v1/audit/<alert_id>`. */
  readonly evidence_url: string;
  readonly evidence_status: EvidenceStatus;
  readonly calibration: Calibration;
  /** Present (and true) only on events sent by `POST /v1/me/webhooks/{id}/test`. */
  readonly test?: true;
}

/** What an event is built from. */
export interface EventInput {
  readonly asset: string;
  readonly from_state: PegState;
  readonly to_state: PegState;
  readonly discount_bps: number;
  /** Epoch ms of the state change. */
  readonly ts: EpochMs;
  readonly alert_id: string;
  readonly evidence_status: EvidenceStatus;
  readonly calibration: Calibration;
  /** A synthetic event from the webhook test route. Default false. */
  readonly test?: boolean;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const EVENT_ID_DOMAIN = "peg-oracle/webhook-event/v1";

/** The absolute receipt URL of an alert: `baseUrl` (http or https, any trailing slash dropped) + `/v1/audit/<id>`. */
export function evidenceUrl(baseUrl: string, alertId: string): string {
  if (!UUID.test(alertId)) throw new TypeError(`alert id must be a UUID, got ${JSON.stringify(alertId)}`);
  let base: URL;
  try {
    base = new URL(baseUrl);
  } catch {
    throw new TypeError(`public base URL must be absolute, got ${JSON.stringify(baseUrl)}`);
  }
  if (base.protocol !== "https:" && base.protocol !== "http:") throw new TypeError(`public base URL must be http(s), got ${base.protocol}`);
  if (base.search !== "" || base.hash !== "") throw new TypeError("public base URL must not have a query or fragment");
  return `${base.origin}${base.pathname.replace(/\/+$/, "")}/v1/audit/${alertId.toLowerCase()}`;
}

/** Builds the event of interface 6.1, checking every field; throws TypeError/RangeError on a bad input. */
export function buildEvent(input: EventInput, baseUrl: string): WebhookEvent {
  if (!Number.isSafeInteger(input.discount_bps)) throw new RangeError(`discount_bps must be an integer, got ${input.discount_bps}`);
  if (!(EVIDENCE_STATUSES as readonly string[]).includes(input.evidence_status)) throw new TypeError(`bad evidence_status ${input.evidence_status}`);
  if (input.calibration !== "calibrated" && input.calibration !== "provisional") throw new TypeError(`bad calibration ${String(input.calibration)}`);
  // Fixed key order: the serialisation below is the signed body.
  const event: WebhookEvent = {
    asset: input.asset,
    from_state: input.from_state,
    to_state: input.to_state,
    discount_bps: input.discount_bps,
    ts: timestampToWire(input.ts),
    alert_id: input.alert_id.toLowerCase(),
    evidence_url: evidenceUrl(baseUrl, input.alert_id),
    evidence_status: input.evidence_status,
    calibration: input.calibration,
  };
  return input.test === true ? { ...event, test: true } : event;
}

/** The body bytes of an event (UTF-8 JSON, no whitespace). Sign and send exactly this string. */
export function serialiseEvent(event: WebhookEvent): string {
  return JSON.stringify(event);
}

/**
 * The event id of alert `alertId` for webhook `webhookId`: a deterministic UUIDv8 (see the module comment). Stable
 * across retries, restarts and replays; different per webhook, so two webhooks of one user are not de-duplicated
 * against each other by a receiver they share.
 */
export function eventIdFor(webhookId: string, alertId: string): string {
  if (webhookId === "") throw new TypeError("webhook id must be non-empty");
  // A fixed-length alert id last makes the hash input unambiguous, whatever the webhook id contains.
  if (!UUID.test(alertId)) throw new TypeError(`alert id must be a UUID, got ${JSON.stringify(alertId)}`);
  const bytes = createHash("sha256").update(`${EVENT_ID_DOMAIN}\u0000${webhookId}\u0000${alertId.toLowerCase()}`, "utf8").digest().subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x80; // version 8
  bytes[8] = (bytes[8]! & 0x3f) | 0x80; // variant 10
  const hex = bytes.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
