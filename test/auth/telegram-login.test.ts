import { createHash, createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { AuthError, checkTelegramLogin, type TelegramLoginUser } from "../../src/auth/index.ts";

const BOT_TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw";
const NOW = Date.UTC(2026, 5, 12, 10, 0, 0);
const NOW_S = NOW / 1000;

/** Addendum C, computed here independently: sorted `key=value` lines without `hash`, HMAC keyed by SHA-256(token). */
function widgetHash(fields: Record<string, string | number>, botToken = BOT_TOKEN): string {
  const dataCheckString = Object.keys(fields)
    .filter((k) => k !== "hash")
    .sort()
    .map((k) => `${k}=${fields[k]}`)
    .join("\n");
  const secret = createHash("sha256").update(botToken).digest();
  return createHmac("sha256", secret).update(dataCheckString).digest("hex");
}

function signed(fields: Record<string, string | number>): Record<string, string | number> {
  return { ...fields, hash: widgetHash(fields) };
}

const FIELDS = { id: 987654321, first_name: "Ada", last_name: "Lovelace", username: "ada", photo_url: "https://t.me/i/userpic/320/ada.jpg", auth_date: NOW_S - 30 };
const valid = signed(FIELDS);

function outcome(payload: unknown, now = NOW, botToken = BOT_TOKEN): string {
  try {
    checkTelegramLogin(payload, { botToken, now });
  } catch (err) {
    if (err instanceof AuthError) return err.code;
    throw err;
  }
  return "accepted";
}

describe("login widget check (addendum C)", () => {
  it("accepts a correctly signed payload and returns the normalised user", () => {
    const user: TelegramLoginUser = checkTelegramLogin(valid, { botToken: BOT_TOKEN, now: NOW });
    expect(user).toEqual({
      telegram_id: 987654321,
      first_name: "Ada",
      last_name: "Lovelace",
      username: "ada",
      photo_url: "https://t.me/i/userpic/320/ada.jpg",
      auth_date: NOW_S - 30,
    });
  });

  it("accepts the minimal payload (no username: null) and integer fields sent as strings", () => {
    const minimal = signed({ id: 5, first_name: "Bo", auth_date: NOW_S });
    expect(checkTelegramLogin(minimal, { botToken: BOT_TOKEN, now: NOW })).toMatchObject({ telegram_id: 5, username: null, last_name: null, photo_url: null });
    const asStrings = signed({ id: "5", first_name: "Bo", auth_date: String(NOW_S) });
    expect(checkTelegramLogin(asStrings, { botToken: BOT_TOKEN, now: NOW }).telegram_id).toBe(5);
  });

  it("signs and accepts fields it does not know (every received field is in the check string)", () => {
    expect(outcome(signed({ ...FIELDS, allows_write_to_pm: "true" }))).toBe("accepted");
  });

  it("refuses a wrong hash", () => {
    const last = valid["hash"] as string;
    expect(outcome({ ...valid, hash: `${last.slice(0, -1)}${last.endsWith("0") ? "1" : "0"}` })).toBe("invalid_token");
    expect(outcome({ ...valid, hash: "0".repeat(64) })).toBe("invalid_token");
    expect(outcome(valid, NOW, "987654321:another-bot-token")).toBe("invalid_token");
  });

  it("refuses a hash keyed the wrong way (by the raw bot token, or the Mini App derivation)", () => {
    const dcs = Object.keys(FIELDS).sort().map((k) => `${k}=${FIELDS[k as keyof typeof FIELDS]}`).join("\n");
    const raw = createHmac("sha256", BOT_TOKEN).update(dcs).digest("hex");
    const webApp = createHmac("sha256", createHmac("sha256", "WebAppData").update(BOT_TOKEN).digest()).update(dcs).digest("hex");
    expect(outcome({ ...FIELDS, hash: raw })).toBe("invalid_token");
    expect(outcome({ ...FIELDS, hash: webApp })).toBe("invalid_token");
  });

  it("refuses a malformed hash with invalid_token", () => {
    for (const hash of ["", "abc", (valid["hash"] as string).toUpperCase(), `${valid["hash"] as string}00`, "g".repeat(64)]) {
      expect(outcome({ ...valid, hash }), hash).toBe("invalid_token");
    }
  });

  it("refuses a field added after signing", () => {
    expect(outcome({ ...valid, is_admin: "true" })).toBe("invalid_token");
    expect(outcome({ ...valid, last_name: "Byron" })).toBe("invalid_token");
  });

  it("refuses a field removed or changed after signing", () => {
    const { photo_url: _dropped, ...withoutPhoto } = valid;
    expect(outcome(withoutPhoto)).toBe("invalid_token");
    expect(outcome({ ...valid, id: 1 })).toBe("invalid_token");
    expect(outcome({ ...valid, username: "admin" })).toBe("invalid_token");
  });

  it("refuses a field smuggled into another field's value (newline) as a malformed body", () => {
    // The check string of {first_name: "Ada\nid=1"} would read like two fields; values must be single-line.
    const smuggled = signed({ first_name: "Ada\nid=1", auth_date: NOW_S, id: 987654321 });
    expect(outcome(smuggled)).toBe("invalid_body");
  });

  it("keeps auth_date within 86,400 s in the past and 60 s in the future, edges included", () => {
    const at = (authDate: number, now: number) => outcome(signed({ ...FIELDS, auth_date: authDate }), now);
    expect(at(NOW_S - 86_400, NOW)).toBe("accepted");
    expect(at(NOW_S - 86_400, NOW + 1)).toBe("token_expired");
    expect(at(NOW_S - 86_401, NOW)).toBe("token_expired");
    expect(at(NOW_S - 30 * 86_400, NOW)).toBe("token_expired");
    expect(at(NOW_S + 60, NOW)).toBe("accepted");
    expect(at(NOW_S + 60, NOW - 1)).toBe("invalid_token");
    expect(at(NOW_S + 61, NOW)).toBe("invalid_token");
    expect(at(NOW_S + 86_400, NOW)).toBe("invalid_token");
  });

  it("checks the hash before the date, so an old forged payload says invalid_token", () => {
    expect(outcome({ ...FIELDS, auth_date: NOW_S - 90_000, hash: "0".repeat(64) })).toBe("invalid_token");
  });

  it("refuses values that are not strings (or positive integers for id and auth_date) as invalid_body", () => {
    const cases: Array<Record<string, unknown>> = [
      { ...valid, first_name: 7 },
      { ...valid, username: null },
      { ...valid, username: ["ada"] },
      { ...valid, username: { x: 1 } },
      { ...valid, username: true },
      { ...valid, id: 1.5 },
      { ...valid, id: -3 },
      { ...valid, id: 0 },
      { ...valid, id: "007" },
      { ...valid, id: "9999999999999999" },
      { ...valid, id: 2 ** 53 },
      { ...valid, auth_date: "yesterday" },
      { ...valid, auth_date: NOW_S + 0.5 },
      { ...valid, hash: 123 },
    ];
    for (const payload of cases) expect(outcome(payload), JSON.stringify(payload)).toBe("invalid_body");
  });

  it("refuses a payload missing id, first_name, auth_date or hash as invalid_body", () => {
    for (const key of ["id", "first_name", "auth_date"] as const) {
      const rest = Object.fromEntries(Object.entries(FIELDS).filter(([k]) => k !== key));
      expect(outcome(signed(rest)), key).toBe("invalid_body");
    }
    expect(outcome({ ...FIELDS })).toBe("invalid_body");
  });

  it("refuses oversize or odd input as invalid_body", () => {
    expect(outcome(signed({ ...FIELDS, username: "a".repeat(1025) }))).toBe("invalid_body");
    expect(outcome(signed({ ...FIELDS, username: "a".repeat(1024) }))).toBe("accepted");
    const many = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`extra_${i}`, "x"]));
    expect(outcome(signed({ ...FIELDS, ...many }))).toBe("invalid_body");
    expect(outcome(signed({ ...FIELDS, "Bad-Key": "x" }))).toBe("invalid_body");
    expect(outcome(signed({ ...FIELDS, "a=b": "x" }))).toBe("invalid_body");
    expect(outcome(JSON.parse(`{"__proto__":"x",${JSON.stringify(valid).slice(1)}`))).toBe("invalid_body");
    for (const payload of [null, undefined, "id=1", 42, [valid]]) expect(outcome(payload)).toBe("invalid_body");
  });
});
