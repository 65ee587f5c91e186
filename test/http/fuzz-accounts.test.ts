/**
 * Fuzzing the account routes (/v1/auth/*, /v1/me/*) over the real accounts model on PGlite: any method, path
 * parameter, body (JSON of any shape, broken JSON, other content types) and Authorization header (none, garbage,
 * forged, expired, another user's) never gives a 500; every answer is documented in the OpenAPI document and every
 * error is an ApiError (the harness checks both on each call).
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintSession } from "../../src/auth/index.ts";
import { DAY, NOW } from "./fixtures.ts";
import { accountsHarness, JWT_SECRET, type AccountsHarness } from "./helpers.ts";

fc.configureGlobal({ seed: Number(process.env["FUZZ_SEED"] ?? 20261121) });

let ah: AccountsHarness;
let alice: { token: string; userId: number };
let bob: { token: string; userId: number };
let bobWebhook = "";
let expiredToken = "";
let forgedToken = "";
const statuses = new Map<string, Set<number>>();

beforeAll(async () => {
  ah = await accountsHarness();
  alice = await ah.login(1001, "Alice");
  expiredToken = (await mintSession({ userId: alice.userId, now: NOW - 8 * DAY, secret: JWT_SECRET })).token;
  forgedToken = (await mintSession({ userId: alice.userId, now: NOW, secret: "another-secret-that-is-at-least-32-bytes!" })).token;
  bob = await ah.login(1002, "Bob");
  const w = await ah.send("POST", "/v1/me/webhooks", bob.token, { url: "https://hooks.example.com/peg", asset: "USDC", threshold_bps: 50 });
  expect(w.status, JSON.stringify(w.body)).toBe(201);
  bobWebhook = (w.body as { id: string }).id;
  expect((await ah.send("POST", "/v1/me/subs", alice.token, { asset: "USDC", channel: "webhook", threshold_bps: 25 })).status).toBe(201);
}, 60_000);

afterAll(async () => {
  await ah?.close();
});

const TEMPLATES = [
  "/v1/auth/messenger",
  "/v1/auth/magic/mint",
  "/v1/auth/magic/consume",
  "/v1/auth/logout",
  "/v1/me",
  "/v1/me/preferences",
  "/v1/me/subs",
  "/v1/me/subs/{asset}",
  "/v1/me/alerts",
  "/v1/me/webhooks",
  "/v1/me/webhooks/{id}",
  "/v1/me/webhooks/{id}/deliveries",
];

const segment = fc.oneof(
  fc.constantFrom("USDC", "USD%2A", "hyloSOL%2B", "usdc", "NOPE", "", "%", "%E0%A4%A", "..", "0", "-1", "9".repeat(30)),
  fc.constant("BOB_WEBHOOK"),
  fc.uuid(),
  fc.string({ maxLength: 20 }).map(encodeURIComponent),
);

const bodyArb = fc.oneof(
  fc.constant(undefined),
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
  fc.record(
    {
      asset: fc.constantFrom("USDC", "USDT", "NOPE", ""),
      channel: fc.constantFrom("telegram", "webhook", "dashboard", "fax"),
      threshold_bps: fc.oneof(fc.integer({ min: -5, max: 10_005 }), fc.constant(1.5)),
      url: fc.constantFrom("https://hooks.example.com/x", "http://hooks.example.com/x", "https://127.0.0.1/x", "https://u:p@hooks.example.com/", "notaurl"),
      is_active: fc.boolean(),
      token: fc.string({ maxLength: 50 }),
      since: fc.constantFrom("2026-11-20T00:00:00.000Z", "yesterday"),
      locale: fc.constantFrom("en", "de-DE", "x".repeat(100)),
      min_severity: fc.constantFrom("DRIFT", "BLACK_SWAN", "LOW"),
      extra: fc.string(),
    },
    { requiredKeys: [] },
  ).map((v) => JSON.stringify(v)),
  fc.string({ maxLength: 200 }),
);

const authArb = fc.constantFrom<"none" | "alice" | "bob" | "garbage" | "expired" | "forged" | "basic">("none", "alice", "bob", "garbage", "expired", "forged", "basic");

function authHeader(kind: string): Record<string, string> {
  switch (kind) {
    case "alice":
      return { authorization: `Bearer ${alice.token}` };
    case "bob":
      return { authorization: `Bearer ${bob.token}` };
    case "garbage":
      return { authorization: "Bearer x.y.z" };
    case "expired":
      return { authorization: `Bearer ${expiredToken}` };
    case "forged":
      return { authorization: `Bearer ${forgedToken}` };
    case "basic":
      return { authorization: "Basic YWxpY2U6c2VjcmV0" };
    default:
      return {};
  }
}

describe("fuzzing the account routes", () => {
  it("never answers 500, and every answer is documented", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...TEMPLATES),
        segment,
        fc.constantFrom("GET", "POST", "PATCH", "DELETE", "PUT"),
        bodyArb,
        authArb,
        fc.constantFrom("application/json", "application/json; charset=utf-8", "text/plain", undefined),
        async (template, seg, method, body, auth, contentType) => {
          const value = seg === "BOB_WEBHOOK" ? bobWebhook : seg;
          const path = template.replace("{asset}", value).replace("{id}", value);
          const headers: Record<string, string> = { ...authHeader(auth), ...(contentType === undefined || body === undefined ? {} : { "content-type": contentType }) };
          const a = await ah.h.call(path, { method, headers, ...(body === undefined ? {} : { body }) });
          expect(a.status, `${method} ${path} -> ${a.status} ${JSON.stringify(a.body)}`).toBeLessThan(500);
          let s = statuses.get(template);
          if (s === undefined) statuses.set(template, (s = new Set()));
          s.add(a.status);
        },
      ),
      { numRuns: 400 },
    );
    // Someone else's webhook is a 404 (a fresh session: the fuzzer may well have logged Alice out).
    const again = await ah.login(1001, "Alice");
    const bobs = await ah.send("GET", `/v1/me/webhooks/${bobWebhook}/deliveries`, again.token);
    expect(bobs.status).toBe(404);
    // The fuzzer reached both refusals and successes.
    const all = new Set([...statuses.values()].flatMap((s) => [...s]));
    for (const code of [200, 400, 401, 404]) expect(all.has(code), `saw ${[...all].join(", ")}`).toBe(true);
  }, 120_000);
});
