/**
 * Team-chat destinations (interface 6.3.5, addendum F): a webhook whose host belongs to a known chat service gets a
 * chat-formatted, unsigned message instead of the signed generic JSON (a chat service cannot verify our signature,
 * and would show raw JSON). Detection is by host name (and, where a host serves more than webhooks, by path), on the
 * WHATWG-normalised URL, so case, trailing dots and default ports do not matter.
 *
 * | service | hosts | body |
 * |---|---|---|
 * | Slack incoming webhook | `hooks.slack.com` | `{text}` |
 * | Discord webhook | `discord.com`, `discordapp.com` (+ `ptb.`/`canary.`), path `/api[/vN]/webhooks/...` | `{content, allowed_mentions}` |
 * | Microsoft Teams, Office 365 connector | `*.webhook.office.com` | MessageCard `{@type, @context, summary, themeColor, title, text}` |
 * | Microsoft Teams, Workflows (Power Automate) | `*.logic.azure.com`, `*.api.powerplatform.com` | `{type: "message", attachments: [Adaptive Card]}` |
 * | Google Chat | `chat.googleapis.com` | `{text}` |
 * | Telegram Bot API | `api.telegram.org`, path `/bot<token>/...` | `sendMessage` `{chat_id, text}` |
 *
 * Teams Workflows webhooks (the replacement of the retired connectors) reject a bare `{text}`: their "post to a
 * channel when a webhook request is received" template reads `attachments[].content` as an Adaptive Card, so that is
 * what they get. Telegram: the chat id comes from the URL's `chat_id` query parameter (the Bot API reads parameters
 * from the query string as well as the body), or from a last path segment after the token
 * (`/bot<token>/<chat_id>` or `/bot<token>/sendMessage/<chat_id>`); the message always goes to
 * `/bot<token>/sendMessage` with `chat_id` in the JSON body and no longer in the query.
 */
import type { WebhookEvent } from "./payload.ts";

export type ChatHost = "slack" | "discord" | "teams" | "teams_workflows" | "google_chat" | "telegram";

/** A chat message ready to POST: where to, and the body (unsigned, sent as `application/json`). */
export interface ChatMessage {
  readonly host: ChatHost;
  /** The URL to POST to (the registered URL, except for Telegram: see the module comment). */
  readonly url: string;
  readonly body: string;
  readonly headers: Readonly<Record<string, string>>;
}

export class ChatFormatError extends Error {
  override readonly name = "ChatFormatError";
  readonly code = "chat_url_incomplete";
}

const DISCORD_HOSTS = new Set(["discord.com", "discordapp.com", "ptb.discord.com", "canary.discord.com", "ptb.discordapp.com", "canary.discordapp.com"]);
const TELEGRAM_BOT_PATH = /^\/bot([0-9]+:[A-Za-z0-9_-]+)(?:\/(.*))?$/;
const TELEGRAM_CHAT_ID = /^(-?[0-9]{1,20}|@[A-Za-z][A-Za-z0-9_]{3,31})$/;

function parse(url: string): URL | null {
  try {
    const u = new URL(url);
    return u.protocol === "https:" ? u : null;
  } catch {
    return null;
  }
}

function hostOf(u: URL): string {
  return u.hostname.replace(/\.+$/, "");
}

/** The chat service a webhook URL belongs to, or null for a generic (signed JSON) destination. */
export function detectChatHost(url: string): ChatHost | null {
  const u = parse(url);
  if (u === null) return null;
  const host = hostOf(u);
  if (host === "hooks.slack.com") return "slack";
  if (DISCORD_HOSTS.has(host) && /^\/api\/(v[0-9]+\/)?webhooks\//.test(u.pathname)) return "discord";
  if (host.endsWith(".webhook.office.com")) return "teams";
  if (host.endsWith(".logic.azure.com") || host.endsWith(".api.powerplatform.com")) return "teams_workflows";
  if (host === "chat.googleapis.com") return "google_chat";
  if (host === "api.telegram.org" && TELEGRAM_BOT_PATH.test(u.pathname)) return "telegram";
  return null;
}

const STATE_EMOJI: Readonly<Record<string, string>> = {
  PEGGED: "🟢",
  DRIFT: "🟡",
  DEPEG: "🟠",
  CRITICAL: "🔴",
  BLACK_SWAN: "⚫",
  UNKNOWN: "⚪",
};

/** Teams MessageCard theme colours per target state (hex without `#`). */
const STATE_COLOUR: Readonly<Record<string, string>> = {
  PEGGED: "2EB67D",
  DRIFT: "ECB22E",
  DEPEG: "F2711C",
  CRITICAL: "E01E5A",
  BLACK_SWAN: "000000",
  UNKNOWN: "9E9E9E",
};

/** One-line title, e.g. `🟠 USDC PEGGED → DEPEG (-212 bps)`. */
export function chatTitle(event: WebhookEvent): string {
  const sign = event.discount_bps > 0 ? "+" : "";
  const test = event.test === true ? "[TEST] " : "";
  return `${test}${STATE_EMOJI[event.to_state] ?? ""} ${event.asset} ${event.from_state} → ${event.to_state} (${sign}${event.discount_bps} bps)`.trim();
}

/** The plain-text message body shared by every service. */
export function chatText(event: WebhookEvent): string {
  const lines = [chatTitle(event), `at ${event.ts}`];
  if (event.calibration === "provisional") lines.push("Provisional (beta) asset: thresholds not yet validated.");
  lines.push(`Evidence (${event.evidence_status}): ${event.evidence_url}`);
  return lines.join("\n");
}

/** Slack's mrkdwn control characters (https://api.slack.com/reference/surfaces/formatting#escaping). */
function slackEscape(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

function telegramTarget(u: URL): { url: string; chatId: string | number } {
  const m = TELEGRAM_BOT_PATH.exec(u.pathname);
  if (m === null) throw new ChatFormatError("a Telegram URL must look like https://api.telegram.org/bot<token>/sendMessage?chat_id=<id>");
  const token = m[1]!;
  const rest = (m[2] ?? "").split("/").filter((s) => s !== "");
  let chatId = u.searchParams.get("chat_id");
  if (chatId === null && rest.length > 0) {
    const last = decodeURIComponent(rest[rest.length - 1]!);
    if (TELEGRAM_CHAT_ID.test(last)) chatId = last;
  }
  if (chatId === null || !TELEGRAM_CHAT_ID.test(chatId)) throw new ChatFormatError("the Telegram URL has no valid chat_id (query ?chat_id=<id> or a last path segment)");
  const target = new URL(u.href);
  target.pathname = `/bot${token}/sendMessage`;
  target.searchParams.delete("chat_id");
  target.hash = "";
  // Numeric ids go out as JSON numbers (the Bot API's Integer); Telegram ids fit in 52 bits, so they are exact.
  return { url: target.href, chatId: /^-?[0-9]+$/.test(chatId) && Number.isSafeInteger(Number(chatId)) ? Number(chatId) : chatId };
}

const JSON_HEADERS = { "content-type": "application/json" } as const;

/**
 * The chat message for `event` to the chat destination `url` (one `detectChatHost` recognises). Throws
 * `ChatFormatError` for a URL that is not a chat destination or lacks what the service needs (a Telegram chat id).
 */
export function chatMessage(url: string, event: WebhookEvent): ChatMessage {
  const u = parse(url);
  const host = detectChatHost(url);
  if (u === null || host === null) throw new ChatFormatError(`${url} is not a known chat destination`);
  const text = chatText(event);
  let body: unknown;
  let target = u.href;
  switch (host) {
    case "slack":
      body = { text: slackEscape(text) };
      break;
    case "discord":
      // No @everyone / role / user pings from alert text, and within Discord's 2000-character limit.
      body = { content: text.slice(0, 2000), allowed_mentions: { parse: [] } };
      break;
    case "teams":
      body = {
        "@type": "MessageCard",
        "@context": "https://schema.org/extensions",
        summary: chatTitle(event),
        themeColor: STATE_COLOUR[event.to_state] ?? "9E9E9E",
        title: chatTitle(event),
        text: text.split("\n").slice(1).join("\n\n"),
      };
      break;
    case "teams_workflows":
      body = {
        type: "message",
        attachments: [
          {
            contentType: "application/vnd.microsoft.card.adaptive",
            contentUrl: null,
            content: {
              $schema: "http://adaptivecards.io/schemas/adaptive-card.json",
              type: "AdaptiveCard",
              version: "1.4",
              body: text.split("\n").map((line, i) => (i === 0 ? { type: "TextBlock", text: line, weight: "Bolder", size: "Medium", wrap: true } : { type: "TextBlock", text: line, wrap: true })),
            },
          },
        ],
      };
      break;
    case "google_chat":
      body = { text };
      break;
    case "telegram": {
      const t = telegramTarget(u);
      target = t.url;
      body = { chat_id: t.chatId, text };
      break;
    }
  }
  return { host, url: target, body: JSON.stringify(body), headers: JSON_HEADERS };
}
