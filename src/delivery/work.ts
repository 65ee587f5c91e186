/**
 * The work message of stream `PEG_DELIVERIES` (subject `peg.delivery.<webhook id>`): one attempt of one delivery,
 * due at `not_before`. Each attempt is its own message with `Nats-Msg-Id` = the attempt's delivery-record id, and
 * the ids of later attempts are derived from the first one, so a worker that crashes between recording an attempt
 * and acknowledging its message publishes the very same follow-up again (the server drops the duplicate).
 */
import { createHash } from "node:crypto";
import type { JetStreamClient } from "@nats-io/jetstream";
import type { EpochMs } from "../methodology/index.ts";

export const DELIVERY_SUBJECT_PREFIX = "peg.delivery.";

export interface DeliveryWork {
  readonly v: 1;
  /** The delivery record of this attempt (`x-svc-delivery-id`). */
  readonly delivery_id: string;
  /** The delivery record of attempt 1 of this chain; later attempts' ids derive from it. */
  readonly root_id: string;
  readonly webhook_id: string;
  readonly event_id: string;
  /** Null for a test event. */
  readonly alert_id: string | null;
  /** 1-based. */
  readonly attempt: number;
  /** Epoch ms before which the attempt must not run. */
  readonly not_before: EpochMs;
  /** The serialised event (interface 6.1): signed and sent as is, or formatted for a chat host. */
  readonly body: string;
  readonly test: boolean;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A name-based UUIDv8 (SHA-256), as `eventIdFor` builds event ids; parts are length-prefixed, so unambiguous. */
export function derivedUuid(...parts: string[]): string {
  const input = ["peg-oracle/delivery/v1", ...parts].map((p) => `${Buffer.byteLength(p, "utf8")}:${p}`).join("");
  const bytes = createHash("sha256").update(input, "utf8").digest().subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x80;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const h = bytes.toString("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** The delivery-record id of attempt `attempt` of the chain whose first attempt is `rootId`. */
export function attemptId(rootId: string, attempt: number): string {
  return attempt === 1 ? rootId : derivedUuid("attempt", rootId, String(attempt));
}

/** A message's JSON object; null when it is not JSON or not an object. */
function jsonObject(data: Uint8Array): Record<string, unknown> | null {
  let m: unknown;
  try {
    m = JSON.parse(new TextDecoder().decode(data));
  } catch {
    return null;
  }
  return typeof m === "object" && m !== null && !Array.isArray(m) ? (m as Record<string, unknown>) : null;
}

/** Parses a work message; null for anything malformed (it is terminated, never retried). */
export function parseWork(data: Uint8Array): DeliveryWork | null {
  const w = jsonObject(data);
  if (w === null) return null;
  return webhookWork(w);
}

function webhookWork(w: Record<string, unknown>): DeliveryWork | null {
  const ok =
    w["v"] === 1 &&
    typeof w["delivery_id"] === "string" && UUID.test(w["delivery_id"]) &&
    typeof w["root_id"] === "string" && UUID.test(w["root_id"]) &&
    typeof w["webhook_id"] === "string" && UUID.test(w["webhook_id"]) &&
    typeof w["event_id"] === "string" && UUID.test(w["event_id"]) &&
    (w["alert_id"] === null || typeof w["alert_id"] === "string") &&
    Number.isInteger(w["attempt"]) && (w["attempt"] as number) >= 1 &&
    Number.isSafeInteger(w["not_before"]) &&
    typeof w["body"] === "string" &&
    typeof w["test"] === "boolean";
  return ok ? (w as unknown as DeliveryWork) : null;
}

/**
 * One attempt of one Telegram notification (subject `peg.delivery.telegram.<subscription id>`, same stream and
 * worker): the notification row counts the attempts, so attempt `n`'s message is de-duplicated by (row, n).
 */
export interface TelegramWork {
  readonly v: 1;
  readonly kind: "telegram";
  readonly notification_id: string;
  readonly subscription_id: number;
  /** The user's Telegram id: a private chat with the bot. */
  readonly chat_id: number;
  readonly alert_id: string;
  /** 1-based. */
  readonly attempt: number;
  readonly not_before: EpochMs;
  /** The serialised event (interface 6.1), formatted as a chat message when sent. */
  readonly body: string;
}

export const TELEGRAM_SUBJECT_PREFIX = `${DELIVERY_SUBJECT_PREFIX}telegram.`;

/** Any work message of the stream: a webhook attempt (no `kind`, as first shipped) or a Telegram attempt. */
export type AnyWork = { readonly kind: "webhook"; readonly work: DeliveryWork } | { readonly kind: "telegram"; readonly work: TelegramWork };

function parseTelegramWork(w: Record<string, unknown>): TelegramWork | null {
  const ok =
    w["v"] === 1 &&
    typeof w["notification_id"] === "string" && UUID.test(w["notification_id"]) &&
    Number.isSafeInteger(w["subscription_id"]) &&
    Number.isSafeInteger(w["chat_id"]) &&
    typeof w["alert_id"] === "string" && UUID.test(w["alert_id"]) &&
    Number.isInteger(w["attempt"]) && (w["attempt"] as number) >= 1 &&
    Number.isSafeInteger(w["not_before"]) &&
    typeof w["body"] === "string";
  return ok ? (w as unknown as TelegramWork) : null;
}

/** Parses a work message of either kind; null for anything malformed (terminated, never retried). */
export function parseAnyWork(data: Uint8Array): AnyWork | null {
  const m = jsonObject(data);
  if (m === null) return null;
  if (m["kind"] === "telegram") {
    const work = parseTelegramWork(m);
    return work === null ? null : { kind: "telegram", work };
  }
  const work = webhookWork(m);
  return work === null ? null : { kind: "webhook", work };
}

/** Publishes one Telegram attempt's work message, de-duplicated by (notification, attempt). */
export async function publishTelegramWork(js: JetStreamClient, work: TelegramWork): Promise<void> {
  await js.publish(`${TELEGRAM_SUBJECT_PREFIX}${work.subscription_id}`, JSON.stringify(work), { msgID: `telegram:${work.notification_id}:${work.attempt}` });
}

/** Publishes one attempt's work message, de-duplicated by its delivery id. */
export async function publishWork(js: JetStreamClient, work: DeliveryWork): Promise<void> {
  await js.publish(`${DELIVERY_SUBJECT_PREFIX}${work.webhook_id}`, JSON.stringify(work), { msgID: work.delivery_id });
}
