import { describe, expect, it } from "vitest";
import { ChatFormatError, chatMessage, chatText, detectChatHost } from "../../src/delivery/chat.ts";
import { buildEvent, type WebhookEvent } from "../../src/delivery/payload.ts";

const ALERT = "0b9f4a52-6d0e-4c1e-9a8f-3d2b1c0e9f7a";
const event: WebhookEvent = buildEvent(
  { asset: "USDC", from_state: "PEGGED", to_state: "DEPEG", discount_bps: -212, ts: Date.UTC(2026, 5, 12, 10), alert_id: ALERT, evidence_status: "pending", calibration: "calibrated" },
  "https://oracle.example.com",
);
const EVIDENCE = `https://oracle.example.com/v1/audit/${ALERT}`;
const TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw";

const body = (url: string, e: WebhookEvent = event): Record<string, unknown> => JSON.parse(chatMessage(url, e).body) as Record<string, unknown>;

describe("detectChatHost", () => {
  it.each([
    ["https://hooks.slack.com/services/T000/B000/XXXX", "slack"],
    ["https://HOOKS.SLACK.COM./services/T000/B000/XXXX", "slack"],
    ["https://discord.com/api/webhooks/123/abc", "discord"],
    ["https://discordapp.com/api/webhooks/123/abc", "discord"],
    ["https://ptb.discord.com/api/v10/webhooks/123/abc", "discord"],
    ["https://contoso.webhook.office.com/webhookb2/abc@def/IncomingWebhook/x/y", "teams"],
    ["https://prod-12.westus.logic.azure.com:443/workflows/abc/triggers/manual/paths/invoke?api-version=2016-06-01&sig=x", "teams_workflows"],
    ["https://default1234.56.environment.api.powerplatform.com/powerautomate/automations/direct/workflows/abc/triggers/manual/paths/invoke", "teams_workflows"],
    ["https://chat.googleapis.com/v1/spaces/AAAA/messages?key=k&token=t", "google_chat"],
    [`https://api.telegram.org/bot${TOKEN}/sendMessage?chat_id=-1001234567890`, "telegram"],
  ])("%s is %s", (url, host) => {
    expect(detectChatHost(url)).toBe(host);
  });

  it.each([
    "https://example.com/hooks/slack",
    "https://hooks.slack.com.evil.example/services/x",
    "https://notslack.com/services/x",
    "https://discord.com/channels/123/456",
    "https://evil-discord.com/api/webhooks/1/a",
    "https://webhook.office.com.evil.example/x",
    "https://evilwebhook.office.com/x",
    "https://chat.googleapis.com.evil.example/v1/spaces/x/messages",
    "https://api.telegram.org/file/bot123:abc/x",
    "http://hooks.slack.com/services/T000/B000/XXXX",
    "not a url",
  ])("%s is a generic destination", (url) => {
    expect(detectChatHost(url)).toBeNull();
  });
});

describe("chatMessage", () => {
  it("Slack: {text}, with &, < and > escaped", () => {
    const m = chatMessage("https://hooks.slack.com/services/T000/B000/XXXX", event);
    expect(m).toMatchObject({ host: "slack", url: "https://hooks.slack.com/services/T000/B000/XXXX", headers: { "content-type": "application/json" } });
    expect(Object.keys(body(m.url))).toEqual(["text"]);
    expect(body(m.url)["text"]).toContain("USDC PEGGED → DEPEG (-212 bps)");
    expect(body(m.url)["text"]).toContain(EVIDENCE);
    const odd = { ...event, asset: "<!channel>&co" };
    expect(body(m.url, odd)["text"]).toContain("&lt;!channel&gt;&amp;co");
  });

  it("Discord: {content} without mentions", () => {
    const b = body("https://discord.com/api/webhooks/123/abc");
    expect(b).toEqual({ content: chatText(event), allowed_mentions: { parse: [] } });
    expect((b["content"] as string).length).toBeLessThanOrEqual(2000);
  });

  it("Teams connector: a MessageCard with summary, title, colour and the details", () => {
    const b = body("https://contoso.webhook.office.com/webhookb2/abc/IncomingWebhook/x/y");
    expect(b).toMatchObject({ "@type": "MessageCard", "@context": "https://schema.org/extensions", themeColor: "F2711C" });
    expect(b["summary"]).toContain("USDC PEGGED → DEPEG");
    expect(b["title"]).toBe(b["summary"]);
    expect(b["text"]).toContain(EVIDENCE);
  });

  it("Teams Workflows: a message with one Adaptive Card attachment", () => {
    const b = body("https://prod-12.westus.logic.azure.com/workflows/abc/triggers/manual/paths/invoke?sig=x");
    expect(b["type"]).toBe("message");
    const [att] = b["attachments"] as { contentType: string; content: { type: string; version: string; body: { text: string }[] } }[];
    expect(att!.contentType).toBe("application/vnd.microsoft.card.adaptive");
    expect(att!.content.type).toBe("AdaptiveCard");
    expect(att!.content.body.map((t) => t.text).join("\n")).toBe(chatText(event));
  });

  it("Google Chat: {text}", () => {
    expect(body("https://chat.googleapis.com/v1/spaces/AAAA/messages?key=k&token=t")).toEqual({ text: chatText(event) });
  });

  it("Telegram: sendMessage {chat_id, text} with the chat id from the query", () => {
    const m = chatMessage(`https://api.telegram.org/bot${TOKEN}/sendMessage?chat_id=-1001234567890`, event);
    expect(m.url).toBe(`https://api.telegram.org/bot${TOKEN}/sendMessage`);
    expect(JSON.parse(m.body)).toEqual({ chat_id: -1001234567890, text: chatText(event) });
  });

  it("Telegram: the chat id from the path, numeric or @channel, always posted to sendMessage", () => {
    const a = chatMessage(`https://api.telegram.org/bot${TOKEN}/-1001234567890`, event);
    expect(a.url).toBe(`https://api.telegram.org/bot${TOKEN}/sendMessage`);
    expect(JSON.parse(a.body)).toMatchObject({ chat_id: -1001234567890 });
    const b = chatMessage(`https://api.telegram.org/bot${TOKEN}/sendMessage/@peg_alerts`, event);
    expect(b.url).toBe(`https://api.telegram.org/bot${TOKEN}/sendMessage`);
    expect(JSON.parse(b.body)).toMatchObject({ chat_id: "@peg_alerts" });
    const c = chatMessage(`https://api.telegram.org/bot${TOKEN}/sendMessage?chat_id=%40peg_alerts&disable_notification=true`, event);
    expect(c.url).toBe(`https://api.telegram.org/bot${TOKEN}/sendMessage?disable_notification=true`);
    expect(JSON.parse(c.body)).toMatchObject({ chat_id: "@peg_alerts" });
  });

  it("Telegram without a chat id is refused with a named error", () => {
    expect(() => chatMessage(`https://api.telegram.org/bot${TOKEN}/sendMessage`, event)).toThrow(ChatFormatError);
    expect(() => chatMessage(`https://api.telegram.org/bot${TOKEN}/sendMessage?chat_id=1;drop`, event)).toThrow(ChatFormatError);
  });

  it("a generic destination is not a chat message", () => {
    expect(() => chatMessage("https://example.com/hook", event)).toThrow(ChatFormatError);
  });

  it("the text marks test events and provisional assets, and shows positive discounts with a sign", () => {
    const t = chatText({ ...event, test: true, calibration: "provisional", discount_bps: 35 });
    expect(t.startsWith("[TEST] ")).toBe(true);
    expect(t).toContain("(+35 bps)");
    expect(t).toContain("Provisional (beta)");
  });

  it("chat bodies carry no signature headers", () => {
    for (const url of ["https://hooks.slack.com/services/a/b/c", "https://chat.googleapis.com/v1/spaces/A/messages"]) {
      expect(Object.keys(chatMessage(url, event).headers)).toEqual(["content-type"]);
    }
  });
});
