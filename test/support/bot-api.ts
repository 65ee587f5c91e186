/**
 * A local server that speaks the Telegram Bot API's `sendMessage` as the real one does: `POST /bot<token>/sendMessage`
 * with a JSON body, answered `{ok: true, result: Message}` or `{ok: false, error_code, description, parameters?}`
 * (401 for a wrong token, 400 for a malformed request, 429 with `parameters.retry_after`, 403 when the user blocked
 * the bot). Per chat, a test can script failures before the first success.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";

export interface BotMessage {
  readonly chat_id: number;
  readonly text: string;
  readonly message_id: number;
  readonly at: number;
}

/** `rateLimitedFirst`: each distinct message (by text) to the chat is answered 429 that many times, then accepted. */
export type ChatScript = "ok" | "blocked" | { readonly rateLimitedFirst: number; readonly retryAfterSecs: number };

export interface BotApi {
  readonly url: string;
  /** Messages accepted (answered ok), in order. */
  readonly messages: BotMessage[];
  /** Every sendMessage call, accepted or not: chat id and the HTTP status answered. */
  readonly calls: { chat_id: number; status: number; at: number }[];
  /** How a chat behaves (default `ok`). */
  script(chatId: number, s: ChatScript): void;
  close(): Promise<void>;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => (body += c));
    req.on("end", () => resolve(body));
  });
}

export async function startBotApi(token: string): Promise<BotApi> {
  const messages: BotMessage[] = [];
  const calls: { chat_id: number; status: number; at: number }[] = [];
  const scripts = new Map<number, ChatScript>();
  const seen = new Map<string, number>();
  let nextId = 1;
  const server: Server = createServer((req, res) => {
    void readBody(req).then((raw) => {
      const reply = (status: number, body: unknown): void => {
        res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
      };
      if (req.method !== "POST" || req.url !== `/bot${token}/sendMessage`) {
        return reply(req.url?.startsWith(`/bot${token}/`) === true ? 404 : 401, { ok: false, error_code: 401, description: "Unauthorized" });
      }
      let body: { chat_id?: unknown; text?: unknown };
      try {
        body = JSON.parse(raw) as typeof body;
      } catch {
        return reply(400, { ok: false, error_code: 400, description: "Bad Request: can't parse JSON" });
      }
      if (typeof body.chat_id !== "number" || typeof body.text !== "string" || body.text.length === 0 || body.text.length > 4096) {
        return reply(400, { ok: false, error_code: 400, description: "Bad Request: message text is empty or chat_id is missing" });
      }
      const chat = body.chat_id;
      const key = `${chat}\n${body.text}`;
      const n = (seen.get(key) ?? 0) + 1;
      seen.set(key, n);
      const s = scripts.get(chat) ?? "ok";
      if (s === "blocked") {
        calls.push({ chat_id: chat, status: 403, at: Date.now() });
        return reply(403, { ok: false, error_code: 403, description: "Forbidden: bot was blocked by the user" });
      }
      if (s !== "ok" && n <= s.rateLimitedFirst) {
        calls.push({ chat_id: chat, status: 429, at: Date.now() });
        return reply(429, { ok: false, error_code: 429, description: `Too Many Requests: retry after ${s.retryAfterSecs}`, parameters: { retry_after: s.retryAfterSecs } });
      }
      const message_id = nextId++;
      calls.push({ chat_id: chat, status: 200, at: Date.now() });
      messages.push({ chat_id: chat, text: body.text, message_id, at: Date.now() });
      return reply(200, { ok: true, result: { message_id, date: Math.floor(Date.now() / 1000), chat: { id: chat, type: "private" }, text: body.text } });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    messages,
    calls,
    script: (chatId, s) => scripts.set(chatId, s),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
