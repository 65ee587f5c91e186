/**
 * Cursors are opaque and tamper-evident (issue 23, item 4): `next_before` is signed (HMAC-SHA256, truncated, under a
 * key derived from the secrets key, src/http/cursor.ts), so a cursor with any one character changed is a 400
 * `invalid_cursor`, never another page; a cursor pages only the listing that issued it; and every process of a
 * deployment (the same SECRETS_KEY) accepts the cursors of the others. Before, a cursor was plain base64url of the
 * position, and a changed character paged from wherever the new position pointed.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CURSOR_KEY_PURPOSE, cursorCodec } from "../../src/http/cursor.ts";
import { Router } from "../../src/http/router.ts";
import { publicRoutes } from "../../src/http/routes/index.ts";
import { generateSecretsKey, parseSecretsKey, secretBox } from "../../src/secret-box.ts";
import { insertDelivery, type NewDelivery } from "../../src/store/index.ts";
import { TEST_SECRETS_KEY } from "../support/secrets.ts";
import { fakeReadModel, NOW } from "./fixtures.ts";
import { accountsHarness, harness, type AccountsHarness, type Answer } from "./helpers.ts";

const B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

type Page = { data: { id: string }[]; next_before: string | null };

/** Every text one character away from `cursor`: each position replaced by each other base64url character. */
function* oneCharacterChanged(cursor: string, alphabet = B64URL): Generator<string> {
  for (let i = 0; i < cursor.length; i++) {
    for (const ch of alphabet) if (ch !== cursor[i]) yield cursor.slice(0, i) + ch + cursor.slice(i + 1);
  }
}

const expectInvalidCursor = (a: Answer, what: string) => expect([a.status, (a.body as { error?: string }).error], what).toEqual([400, "invalid_cursor"]);

describe("GET /v1/audit", () => {
  const h = harness();

  it("a valid cursor pages on; every cursor with one character changed is 400 invalid_cursor, never a page", async () => {
    const all = ((await h.get("/v1/audit?limit=100")).body as Page).data.map((r) => r.id);
    expect(all.length).toBeGreaterThanOrEqual(3);
    const first = (await h.get("/v1/audit?limit=1")).body as Page;
    const cursor = first.next_before!;
    expect(cursor).toMatch(/^[A-Za-z0-9_-]{56}$/);
    const second = (await h.get(`/v1/audit?limit=1&before=${cursor}`)).body as Page;
    expect([...first.data, ...second.data].map((r) => r.id)).toEqual(all.slice(0, 2));
    let tried = 0;
    for (const text of oneCharacterChanged(cursor)) {
      expectInvalidCursor(await h.call(`/v1/audit?limit=1&before=${text}`), text);
      tried++;
    }
    expect(tried).toBe(56 * 63);
    // The CSV export takes the same cursor, and refuses the same changes.
    expect((await h.call(`/v1/audit.csv?before=${cursor}`)).status).toBe(200);
    expectInvalidCursor(await h.call(`/v1/audit.csv?before=${cursor.slice(0, -1)}${cursor.endsWith("A") ? "B" : "A"}`), "csv");
  });

  it("truncated, extended, re-cased or empty: 400 invalid_cursor", async () => {
    const cursor = ((await h.get("/v1/audit?limit=1")).body as Page).next_before!;
    for (const text of [cursor.slice(0, -1), `${cursor}A`, cursor.slice(0, 32), cursor.toLowerCase(), cursor.toUpperCase(), "", "%00"]) {
      expectInvalidCursor(await h.call(`/v1/audit?before=${text}`), text);
    }
  });

  it("every process of a deployment takes the others' cursors (the same SECRETS_KEY); another key's are invalid", async () => {
    const key = parseSecretsKey(TEST_SECRETS_KEY)!;
    const rm = fakeReadModel();
    // Two processes: each opens its own box over the deployment's key and derives the cursor key from it.
    const a = new Router(publicRoutes(rm, { cursors: cursorCodec(secretBox(key).derive(CURSOR_KEY_PURPOSE)) }));
    const b = new Router(publicRoutes(rm, { cursors: cursorCodec(secretBox(Buffer.from(key)).derive(CURSOR_KEY_PURPOSE)) }));
    const other = new Router(publicRoutes(rm, { cursors: cursorCodec(secretBox(generateSecretsKey()).derive(CURSOR_KEY_PURPOSE)) }));
    const get = (r: Router, path: string) => {
      const [p, q] = path.split("?");
      return r.handle({ method: "GET", path: p!, query: new URLSearchParams(q ?? ""), headers: {}, ip: "127.0.0.1", requestId: "t", body: null });
    };
    const page1 = (await get(a, "/v1/audit?limit=1")).json as Page;
    const onB = (await get(b, `/v1/audit?limit=1&before=${page1.next_before}`)).json as Page;
    const onA = (await get(a, `/v1/audit?limit=1&before=${page1.next_before}`)).json as Page;
    expect(onB.data.map((r) => r.id)).toEqual(onA.data.map((r) => r.id));
    await expect(get(other, `/v1/audit?limit=1&before=${page1.next_before}`)).rejects.toMatchObject({ code: "invalid_cursor", status: 400 });
  });

  it("the cursor key is derived for its purpose: not the secrets key, and not another purpose's key", () => {
    const key = parseSecretsKey(TEST_SECRETS_KEY)!;
    const box = secretBox(key);
    const k = box.derive(CURSOR_KEY_PURPOSE);
    expect(k.length).toBe(32);
    expect(Buffer.from(k).equals(key)).toBe(false);
    expect(Buffer.from(k).equals(Buffer.from(box.derive("something-else")))).toBe(false);
    expect(Buffer.from(k).equals(Buffer.from(secretBox(key).derive(CURSOR_KEY_PURPOSE)))).toBe(true);
  });
});

describe("GET /v1/me/webhooks/{id}/deliveries", () => {
  let ah: AccountsHarness;
  beforeAll(async () => {
    ah = await accountsHarness();
  });
  afterAll(async () => {
    await ah.close();
  });

  it("pages with its cursor; a changed character, another webhook's cursor or an audit cursor is 400 invalid_cursor", async () => {
    const { token } = await ah.login(1001);
    const hook = { url: "https://hooks.example.com/peg", asset: "USDC", threshold_bps: 25 };
    const w1 = (await ah.send("POST", "/v1/me/webhooks", token, hook)).body as { id: string };
    const w2 = (await ah.send("POST", "/v1/me/webhooks", token, { ...hook, asset: "USDT" })).body as { id: string };
    const base: Omit<NewDelivery, "webhook_id" | "attempt" | "scheduled_at"> = {
      event_id: "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b",
      alert_id: null,
      max_attempts: 6,
      status: "failed",
      response_status: 500,
      error: "http_status",
      duration_ms: 31,
      request_headers: {},
      response_body_excerpt: "oops",
      sent_at: NOW + 3,
      next_attempt_at: NOW + 5_000,
    };
    for (const w of [w1, w2]) {
      for (let i = 0; i < 4; i++) await insertDelivery(ah.store.db, { ...base, webhook_id: w.id, attempt: i + 1, scheduled_at: NOW + i * 1000 });
    }
    const list = (id: string, q: string) => ah.send("GET", `/v1/me/webhooks/${id}/deliveries?limit=2${q}`, token);
    const page1 = (await list(w1.id, "")).body as Page & { data: { attempt: number }[] };
    const cursor = page1.next_before!;
    const page2 = (await list(w1.id, `&before=${cursor}`)).body as Page & { data: { attempt: number }[] };
    expect([...page1.data, ...page2.data].map((d) => d.attempt)).toEqual([4, 3, 2, 1]);
    // Every position, three replacements each (the audit test above tries all 63).
    for (let i = 0; i < cursor.length; i++) {
      for (const ch of ["A", "g", "_", "0"].filter((c) => c !== cursor[i]).slice(0, 3)) {
        const text = cursor.slice(0, i) + ch + cursor.slice(i + 1);
        expectInvalidCursor(await list(w1.id, `&before=${text}`), text);
      }
    }
    expectInvalidCursor(await list(w2.id, `&before=${cursor}`), "another webhook's cursor");
    const audit = ((await ah.h.get("/v1/audit?limit=1")).body as Page).next_before!;
    expectInvalidCursor(await list(w1.id, `&before=${audit}`), "an audit cursor");
  });
});
