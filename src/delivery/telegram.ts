/**
 * The `telegram` subscription channel (issue 6): an alert to a subscriber goes through the Bot API `sendMessage` to
 * the user's own chat (their telegram_id), honouring their preferences: a transition below their minimum severity is
 * not sent (a recovery to PEGGED from one that was is), and during their quiet hours (in their time zone) it is held
 * until the quiet hours end. The Bot API base URL is configurable so tests speak to a local Bot API server.
 */
import { chatText } from "./chat.ts";
import type { WebhookEvent } from "./payload.ts";

export const SEVERITY_ORDER = ["PEGGED", "DRIFT", "DEPEG", "CRITICAL", "BLACK_SWAN"] as const;
export type MinSeverity = "DRIFT" | "DEPEG" | "CRITICAL" | "BLACK_SWAN";

export interface TelegramPreferences {
  /** IANA time zone of the quiet hours, e.g. `Europe/Berlin`. */
  readonly timezone: string;
  /** Local wall-clock window `HH:MM`-`HH:MM` (may wrap midnight); null for none. */
  readonly quiet_hours: { readonly start: string; readonly end: string } | null;
  readonly min_severity: MinSeverity;
}

export type TelegramDecision =
  | { readonly send: true; readonly at: number }
  | { readonly send: true; readonly at: number; readonly heldForQuietHours: true }
  | { readonly send: false; readonly reason: "below_min_severity" };

const rank = (s: string): number => {
  const i = (SEVERITY_ORDER as readonly string[]).indexOf(s);
  return i === -1 ? -1 : i; // UNKNOWN ranks below everything: never on its own a reason to wake anyone
};

const HHMM = /^([01]\d|2[0-3]):([0-5]\d)$/;

/** Minutes since local midnight of `at` in `timezone`. */
function localMinutes(at: number, timezone: string): number {
  const parts = new Intl.DateTimeFormat("en-GB", { timeZone: timezone, hour: "2-digit", minute: "2-digit", hourCycle: "h23" }).formatToParts(new Date(at));
  const h = Number(parts.find((p) => p.type === "hour")?.value ?? "0");
  const m = Number(parts.find((p) => p.type === "minute")?.value ?? "0");
  return h * 60 + m;
}

function minutesOf(hhmm: string): number {
  const m = HHMM.exec(hhmm);
  if (m === null) throw new RangeError(`quiet hours must be HH:MM, got ${JSON.stringify(hhmm)}`);
  return Number(m[1]) * 60 + Number(m[2]);
}

/** Whether local minute `t` falls in [start, end), a window that may wrap midnight (start == end: none). */
function inWindow(t: number, start: number, end: number): boolean {
  if (start === end) return false;
  return start < end ? t >= start && t < end : t >= start || t < end;
}

/**
 * Whether and when to send `event` (a transition `from_state` -> `to_state`) to a subscriber with `prefs` at `now`.
 * During quiet hours the message is held to the first minute after they end (found minute by minute, so daylight
 * saving changes are handled by the time zone database, not by arithmetic).
 */
export function decideTelegram(event: Pick<WebhookEvent, "from_state" | "to_state">, prefs: TelegramPreferences, now: number): TelegramDecision {
  const min = rank(prefs.min_severity);
  const recovery = event.to_state === "PEGGED" && rank(event.from_state) >= min;
  if (!recovery && rank(event.to_state) < min) return { send: false, reason: "below_min_severity" };
  if (prefs.quiet_hours === null) return { send: true, at: now };
  const start = minutesOf(prefs.quiet_hours.start);
  const end = minutesOf(prefs.quiet_hours.end);
  if (!inWindow(localMinutes(now, prefs.timezone), start, end)) return { send: true, at: now };
  let t = now - (now % 60_000) + 60_000;
  for (let i = 0; i < 26 * 60; i++, t += 60_000) {
    if (!inWindow(localMinutes(t, prefs.timezone), start, end)) return { send: true, at: t, heldForQuietHours: true };
  }
  return { send: true, at: now }; // unreachable for a window shorter than a day; never hold forever
}

/** The Bot API call for one alert: POST `<base>/bot<token>/sendMessage`. */
export function telegramRequest(baseUrl: string, botToken: string, chatId: number, event: WebhookEvent): { url: string; body: string } {
  const url = `${baseUrl.replace(/\/+$/, "")}/bot${botToken}/sendMessage`;
  return { url, body: JSON.stringify({ chat_id: chatId, text: chatText(event), disable_web_page_preview: true }) };
}

export type TelegramResult =
  | { readonly status: "delivered"; readonly messageId: number }
  | {
      readonly status: "failed";
      readonly retryAfterMs: number | null;
      readonly error: string;
      readonly permanent: boolean;
      /** The Bot API's HTTP status; null when no answer came (timeout, refused). */
      readonly responseStatus: number | null;
    };

/**
 * Sends one alert. The Bot API answers `{ok, result}` or `{ok: false, error_code, description, parameters?}`; a 429
 * carries `parameters.retry_after` (seconds). 4xx other than 429 are permanent (a blocked bot, a deleted chat).
 */
export async function sendTelegram(
  baseUrl: string,
  botToken: string,
  chatId: number,
  event: WebhookEvent,
  opts: { timeoutMs?: number; fetch?: typeof fetch } = {},
): Promise<TelegramResult> {
  const { url, body } = telegramRequest(baseUrl, botToken, chatId, event);
  const doFetch = opts.fetch ?? fetch;
  let res: Response;
  try {
    res = await doFetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
      redirect: "manual",
      signal: AbortSignal.timeout(opts.timeoutMs ?? 5_000),
    });
  } catch (e) {
    const timeout = e instanceof Error && (e.name === "TimeoutError" || e.name === "AbortError");
    return { status: "failed", retryAfterMs: null, error: timeout ? "timeout" : "refused", permanent: false, responseStatus: null };
  }
  let json: { ok?: unknown; result?: { message_id?: unknown }; error_code?: unknown; description?: unknown; parameters?: { retry_after?: unknown } } = {};
  try {
    json = (await res.json()) as typeof json;
  } catch {
    // not JSON: judged by the status below
  }
  if (res.ok && json.ok === true && typeof json.result?.message_id === "number") return { status: "delivered", messageId: json.result.message_id };
  const retryAfter = typeof json.parameters?.retry_after === "number" ? json.parameters.retry_after * 1000 : null;
  const description = typeof json.description === "string" ? json.description.slice(0, 200) : `HTTP ${res.status}`;
  const permanent = res.status >= 400 && res.status < 500 && res.status !== 429;
  return { status: "failed", retryAfterMs: res.status === 429 ? retryAfter : null, error: `http_status: ${description}`, permanent, responseStatus: res.status };
}
