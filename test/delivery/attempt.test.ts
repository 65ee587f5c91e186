/**
 * One delivery attempt against a real HTTPS receiver on loopback (certificate from a CA generated in the test), and
 * the whole retry schedule run under a time scale of 1/1000 against it.
 */
import { randomUUID } from "node:crypto";
import { createServer } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { attemptDelivery, parseRetryAfter, utf8Excerpt, type AttemptInput, type AttemptResult } from "../../src/delivery/attempt.ts";
import { generateSigningKey, publicKeyList, signDelivery, unixSeconds, type Resolve, type WebhookSigningKey } from "../../src/delivery/index.ts";
import { buildEvent, eventIdFor, serialiseEvent } from "../../src/delivery/payload.ts";
import { firstAttempt, nextAttempt } from "../../src/delivery/schedule.ts";
import { NAME, OTHER_NAME, startReceiver, type Receiver } from "./receiver.ts";

let rx: Receiver;
let key: WebhookSigningKey;
const toLoopback: Resolve = async () => ["127.0.0.1"];
const now = (): number => Date.now();

beforeAll(async () => {
  rx = await startReceiver();
  key = generateSigningKey(Date.now());
  rx.keys = [...publicKeyList([key], Date.now()).keys];
});
afterAll(async () => {
  await rx.close();
});

const url = (path: string, name = NAME): string => `https://${name}:${rx.port}${path}`;

function eventBody(alertId = randomUUID()): string {
  return serialiseEvent(
    buildEvent(
      { asset: "USDC", from_state: "PEGGED", to_state: "DEPEG", discount_bps: -212, ts: Date.UTC(2026, 5, 12, 10), alert_id: alertId, evidence_status: "ready", calibration: "calibrated" },
      "https://oracle.example.com",
    ),
  );
}

/** A signed attempt of `eventId` to `path`, as the worker will make it. */
function signedAttempt(path: string, eventId: string, body: string, attempt = 1, over: Partial<AttemptInput> = {}): Promise<AttemptResult> {
  const headers = signDelivery({ eventId, deliveryId: randomUUID(), attempt, timestamp: unixSeconds(Date.now()), body, key });
  return attemptDelivery({ url: url(path), body, headers, resolve: toLoopback, now, ca: rx.ca, allowLoopbackForTests: true, allowedPorts: [rx.port], timeoutMs: 2_000, ...over });
}

const plain = (path: string, over: Partial<AttemptInput> = {}): Promise<AttemptResult> =>
  attemptDelivery({ url: url(path), body: "{}", headers: { "content-type": "application/json" }, resolve: toLoopback, now, ca: rx.ca, allowLoopbackForTests: true, allowedPorts: [rx.port], timeoutMs: 2_000, ...over });

describe("attemptDelivery: success", () => {
  it("delivers a signed event that the receiver verifies with node:crypto, and the receiver de-duplicates a re-send", async () => {
    const body = eventBody();
    const eventId = eventIdFor("wh_1", (JSON.parse(body) as { alert_id: string }).alert_id);
    const first = await signedAttempt("/hook", eventId, body);
    expect(first).toMatchObject({ status: "delivered", responseStatus: 200, error: null, retryAfterMs: null, address: "127.0.0.1" });
    expect(JSON.parse(first.responseBodyExcerpt!)).toEqual({ ok: true, duplicate: false });
    expect(first.durationMs).toBeGreaterThanOrEqual(0);
    const again = await signedAttempt("/hook", eventId, body, 2);
    expect(again.status).toBe("delivered");
    expect(JSON.parse(again.responseBodyExcerpt!)).toEqual({ ok: true, duplicate: true });
    const mine = rx.received.filter((r) => r.eventId === eventId);
    expect(mine.map((r) => [r.verified, r.duplicate, r.headers["x-svc-attempt"]])).toEqual([[true, false, "1/6"], [true, true, "2/6"]]);
    expect(mine[0]!.body).toBe(body); // the signed bytes are the bytes sent
    expect(mine[0]!.headers["host"]).toBe(`${NAME}:${rx.port}`);
    expect(mine[0]!.headers["content-length"]).toBe(String(Buffer.byteLength(body)));
    expect(rx.acted.filter((id) => id === eventId)).toHaveLength(1);
  });

  it("a body altered after signing is refused by the receiver (401 -> http_status)", async () => {
    const body = eventBody();
    const eventId = randomUUID();
    const headers = signDelivery({ eventId, deliveryId: randomUUID(), attempt: 1, timestamp: unixSeconds(Date.now()), body, key });
    const res = await attemptDelivery({ url: url("/hook"), body: body.replace("-212", "-213"), headers, resolve: toLoopback, now, ca: rx.ca, allowLoopbackForTests: true, allowedPorts: [rx.port] });
    expect(res).toMatchObject({ status: "failed", responseStatus: 401, error: "http_status" });
    expect(rx.received.find((r) => r.headers["x-svc-event-id"] === eventId)).toMatchObject({ verified: false, reason: "bad_signature" });
  });

  it("any 2xx is delivered (202 here)", async () => {
    expect(await plain("/accepted")).toMatchObject({ status: "delivered", responseStatus: 202, error: null, responseBodyExcerpt: "queued" });
  });

  it("keeps at most 1 KiB of a large body, cut at a character boundary", async () => {
    const res = await plain("/big");
    expect(res.status).toBe("delivered");
    expect(Buffer.byteLength(res.responseBodyExcerpt!)).toBe(1024);
    expect(res.responseBodyExcerpt).toBe("é".repeat(512));
  });
});

describe("attemptDelivery: failures", () => {
  it("times out when the receiver never answers (timeout, within the budget)", async () => {
    const res = await plain("/slow", { timeoutMs: 300 });
    expect(res).toMatchObject({ status: "failed", responseStatus: null, error: "timeout", responseBodyExcerpt: null });
    expect(res.durationMs).toBeGreaterThanOrEqual(290);
    expect(res.durationMs).toBeLessThan(1_500);
  });

  it("a resolver that hangs also runs out of the budget", async () => {
    const hang: Resolve = () => new Promise(() => {});
    expect(await plain("/hook", { resolve: hang, timeoutMs: 200 })).toMatchObject({ status: "failed", error: "timeout", address: null });
  });

  it("500 is http_status, with the body excerpt", async () => {
    expect(await plain("/500")).toMatchObject({ status: "failed", responseStatus: 500, error: "http_status", responseBodyExcerpt: "internal error at the receiver", retryAfterMs: null });
  });

  it("429 with Retry-After in seconds or as an HTTP date", async () => {
    expect(await plain("/429")).toMatchObject({ status: "failed", responseStatus: 429, error: "http_status", retryAfterMs: 120_000 });
    const dated = await plain("/429-date");
    expect(dated).toMatchObject({ status: "failed", responseStatus: 429, error: "http_status" });
    expect(dated.retryAfterMs).toBeGreaterThan(85_000);
    expect(dated.retryAfterMs).toBeLessThanOrEqual(90_000);
  });

  it("a 302 is a failure (redirect), whether it points to a public or a private address, and is not followed", async () => {
    const before = rx.received.length;
    expect(await plain("/302-public")).toMatchObject({ status: "failed", responseStatus: 302, error: "redirect" });
    expect(await plain("/302-private")).toMatchObject({ status: "failed", responseStatus: 302, error: "redirect" });
    expect(rx.received.slice(before).map((r) => r.path)).toEqual(["/302-public", "/302-private"]);
  });

  it("a connection reset by the receiver (TCP RST), or closed without an answer, is refused", async () => {
    expect(await plain("/reset")).toMatchObject({ status: "failed", responseStatus: null, error: "refused" });
    expect(await plain("/close")).toMatchObject({ status: "failed", responseStatus: null, error: "refused" });
  });

  it("nothing listening is refused", async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const port = (probe.address() as { port: number }).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const res = await attemptDelivery({ url: `https://${NAME}:${port}/hook`, body: "{}", headers: {}, resolve: toLoopback, now, ca: rx.ca, allowLoopbackForTests: true, allowedPorts: [port] });
    expect(res).toMatchObject({ status: "failed", error: "refused", address: "127.0.0.1" });
  });

  it("a certificate for another name is tls, and so is a certificate from an untrusted CA", async () => {
    expect(await plain("/hook", { url: url("/hook", OTHER_NAME) })).toMatchObject({ status: "failed", responseStatus: null, error: "tls" });
    const { ca: _ca, ...noCa } = { url: url("/hook"), body: "{}", headers: {}, resolve: toLoopback, now, ca: rx.ca, allowLoopbackForTests: true, allowedPorts: [rx.port] };
    expect(await attemptDelivery(noCa)).toMatchObject({ status: "failed", error: "tls" });
  });

  it("re-checks the destination at delivery time: a name now resolving to a private address is ssrf_blocked, never contacted", async () => {
    const before = rx.received.length;
    const rebound: Resolve = async () => ["10.0.0.7"];
    expect(await plain("/hook", { resolve: rebound })).toMatchObject({ status: "failed", error: "ssrf_blocked", responseStatus: null, address: null });
    const mixed: Resolve = async () => ["93.184.215.14", "169.254.169.254"];
    expect(await plain("/hook", { resolve: mixed })).toMatchObject({ error: "ssrf_blocked" });
    // Loopback itself is refused unless the test switch is on.
    expect(await plain("/hook", { allowLoopbackForTests: false })).toMatchObject({ error: "ssrf_blocked" });
    expect(await plain("/hook", { url: `http://${NAME}:${rx.port}/hook` })).toMatchObject({ error: "ssrf_blocked" });
    expect(rx.received.length).toBe(before);
  });

  it("a name that does not resolve is dns", async () => {
    const nx: Resolve = async () => {
      throw Object.assign(new Error("getaddrinfo ENOTFOUND"), { code: "ENOTFOUND" });
    };
    expect(await plain("/hook", { resolve: nx })).toMatchObject({ status: "failed", error: "dns", address: null });
  });

  it("the resolver is asked once per attempt (no second lookup before connecting)", async () => {
    let calls = 0;
    const counting: Resolve = async () => {
      calls++;
      return ["127.0.0.1"];
    };
    expect(await plain("/accepted", { resolve: counting })).toMatchObject({ status: "delivered" });
    expect(calls).toBe(1);
  });
});

describe("the retry schedule against the receiver, time scale 1/1000", () => {
  const SCALE = 1 / 1000;

  /** The worker loop in miniature: attempt, then wait for `nextAttempt`, until delivered or dead-lettered. */
  async function deliver(path: string, eventId: string, body: string): Promise<{ outcome: "delivered" | "dead_letter"; results: AttemptResult[]; starts: number[] }> {
    const results: AttemptResult[] = [];
    const starts: number[] = [];
    let next = firstAttempt(Date.now(), SCALE);
    for (;;) {
      const delay = next.at - Date.now();
      if (delay > 0) await sleep(delay);
      starts.push(Date.now());
      const res = await signedAttempt(path, eventId, body, next.attempt);
      results.push(res);
      if (res.status === "delivered") return { outcome: "delivered", results, starts };
      const step = nextAttempt(next.attempt, Date.now(), res.retryAfterMs, SCALE);
      if (step === "dead_letter") return { outcome: "dead_letter", results, starts };
      next = step;
    }
  }

  it("retries after 5, 30 and 300 ms and succeeds on the fourth attempt, with the same event id", async () => {
    const eventId = randomUUID();
    const { outcome, results, starts } = await deliver("/flaky/3", eventId, eventBody());
    expect(outcome).toBe("delivered");
    expect(results.map((r) => r.responseStatus)).toEqual([500, 500, 500, 200]);
    const gaps = starts.slice(1).map((t, i) => t - starts[i]!);
    expect(gaps[0]).toBeGreaterThanOrEqual(5);
    expect(gaps[1]).toBeGreaterThanOrEqual(30);
    expect(gaps[2]).toBeGreaterThanOrEqual(300);
    const seen = rx.received.filter((r) => r.eventId === eventId);
    expect(seen.map((r) => r.headers["x-svc-attempt"])).toEqual(["1/6", "2/6", "3/6", "4/6"]);
    expect(new Set(seen.map((r) => r.headers["x-svc-delivery-id"])).size).toBe(4);
    expect(seen.every((r) => r.verified)).toBe(true);
    expect(rx.acted.filter((id) => id === eventId)).toHaveLength(1);
  });

  it("honours a longer 429 Retry-After (60 s -> 60 ms) instead of the 5 s (5 ms) wait", async () => {
    const { outcome, results, starts } = await deliver("/429-once", randomUUID(), eventBody());
    expect(outcome).toBe("delivered");
    expect(results.map((r) => r.responseStatus)).toEqual([429, 204]);
    expect(starts[1]! - starts[0]!).toBeGreaterThanOrEqual(60);
  });

  it("dead-letters after the sixth failure, having waited the whole scaled schedule (about 9.3 s)", async () => {
    const eventId = randomUUID();
    const t0 = Date.now();
    const { outcome, results } = await deliver("/flaky/6", eventId, eventBody());
    expect(outcome).toBe("dead_letter");
    expect(results).toHaveLength(6);
    expect(results.every((r) => r.error === "http_status")).toBe(true);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(9_335);
    expect(rx.received.filter((r) => r.eventId === eventId).map((r) => r.headers["x-svc-attempt"])).toEqual(["1/6", "2/6", "3/6", "4/6", "5/6", "6/6"]);
    expect(rx.acted).not.toContain(eventId);
  }, 30_000);
});

describe("parseRetryAfter / utf8Excerpt", () => {
  const T = Date.UTC(2026, 5, 12, 10);
  it("reads delay-seconds and HTTP dates, and ignores anything else", () => {
    expect(parseRetryAfter("0", T)).toBe(0);
    expect(parseRetryAfter(" 30 ", T)).toBe(30_000);
    expect(parseRetryAfter(new Date(T + 45_000).toUTCString(), T)).toBe(45_000);
    expect(parseRetryAfter(new Date(T - 45_000).toUTCString(), T)).toBe(0);
    for (const bad of [undefined, "", "-5", "1.5", "soon", "2026-06-12T10:00:00Z", "Fri, 99 Foo 2026 GMT"]) expect(parseRetryAfter(bad, T)).toBeNull();
  });

  it("never splits a multi-byte character", () => {
    expect(utf8Excerpt(Buffer.from("aé"), 2)).toBe("a");
    expect(utf8Excerpt(Buffer.from("a€b"), 3)).toBe("a");
    expect(utf8Excerpt(Buffer.from("a€b"), 4)).toBe("a€");
    expect(utf8Excerpt(Buffer.from("abc"), 10)).toBe("abc");
  });
});
