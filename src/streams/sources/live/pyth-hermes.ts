/**
 * Pyth Hermes price stream: `GET {base}/v2/updates/price/stream?ids[]=<id>…&parsed=true` (Server-Sent Events). Each
 * event's `parsed[]` items become `pyth` legs: price = price × 10^expo and conf = conf × 10^expo, exactly (built
 * from the integer strings), observed_at = publish_time × 1000.
 *
 * Backpressure policy: lossless per event. Events are parsed synchronously as their bytes arrive and every leg is
 * emitted before the next chunk is read, so a slow synchronous consumer slows the socket read (TCP flow control
 * pushes back on Hermes) rather than growing a buffer here. Only the unfinished event is buffered, capped by
 * `maxEventBytes`.
 *
 * Liveness: a connection that delivers no event for `idleMs` (default 30 s, also counting the wait for the first
 * event) is treated as dead and aborted. Any ended, failed or refused connection is reopened after a capped
 * exponential backoff with jitter (reset once a connection delivers a leg); a 429 waits its Retry-After (Hermes
 * blocks an IP for 60 s, the default when the header is missing).
 */
import { Observable, type SchedulerAction } from "rxjs";
import type { Catalog, CatalogAsset } from "../../../catalog/index.ts";
import { D, type Decimal } from "../../../methodology/index.ts";
import type { Leg } from "../legs.ts";
import { HttpStatusError, IdleTimeoutError, MalformedPayloadError, describeError } from "./errors.ts";
import { endpointUrl, parseRetryAfter } from "./http.ts";
import { backoffDelay, resolveOptions, sleep, type LiveAdapterOptions, type ResolvedOptions } from "./source.ts";
import { SseDecoder } from "./sse.ts";

/** Options of `pythHermesStream`. */
export interface PythHermesOptions extends LiveAdapterOptions {
  /** Hermes base URL (`https://hermes.pyth.network`); a query string on it (a provider token) is kept. */
  readonly baseUrl: string;
  /** Feed name -> feed id (`0x` + 64 hex, or bare hex). Names sharing an id each get their own leg. Not empty. */
  readonly feeds: ReadonlyMap<string, string>;
  /** Milliseconds without an event after which the connection counts as dead. Default 30 000. */
  readonly idleMs?: number;
  /** Largest SSE event accepted, in characters. Default 1 MiB. */
  readonly maxEventBytes?: number;
  /** Wait after a 429 without Retry-After, ms. Default 60 000. */
  readonly rateLimitedMs?: number;
}

const MAX_RETRY_AFTER_MS = 120_000;
const FEED_ID = /^(?:0x)?([0-9a-fA-F]{64})$/;
const INT = /^-?\d{1,30}$/;
const UINT = /^\d{1,30}$/;

/** Lower-case hex without `0x` (Hermes' form in `parsed[].id`), or null when `id` is not 32 bytes of hex. */
export function normalizeFeedId(id: string): string | null {
  const m = FEED_ID.exec(id);
  return m === null ? null : m[1]!.toLowerCase();
}

/**
 * The feeds to subscribe: every `pyth_feeds` entry, plus `<SYMBOL>/USD` -> `oracle_feed_id` for each asset that has
 * one (the cross-check feed). A name already in `pyth_feeds` keeps its catalog id.
 */
export function pythFeedsOf(catalog: Catalog, assets: readonly CatalogAsset[] = catalog.active): Map<string, string> {
  const feeds = new Map(catalog.pythFeeds);
  for (const a of assets) {
    const name = `${a.symbol}/USD`;
    if (a.oracleFeedId !== null && !feeds.has(name)) feeds.set(name, a.oracleFeedId);
  }
  return feeds;
}

/** Feed id (normalized) -> the names it is published under. */
export function feedNamesById(feeds: ReadonlyMap<string, string>): Map<string, string[]> {
  const byId = new Map<string, string[]>();
  for (const [name, id] of feeds) {
    const norm = normalizeFeedId(id);
    if (norm === null) throw new RangeError(`pyth feed ${JSON.stringify(name)}: ${JSON.stringify(id)} is not a 32-byte hex id`);
    const names = byId.get(norm);
    if (names === undefined) byId.set(norm, [name]);
    else names.push(name);
  }
  return byId;
}

/** `mantissa × 10^expo`, exactly. */
function scaled(mantissa: string, expo: number): Decimal {
  return new D(`${mantissa}e${expo}`);
}

function isObject(v: unknown): v is Readonly<Record<string, unknown>> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * Parses one event's `data`. Throws MalformedPayloadError when the event as a whole is unreadable (not JSON, no
 * `parsed` array); an unreadable or unknown item is reported in `problems` and the other items still count.
 */
export function parseHermesEvent(data: string, namesById: ReadonlyMap<string, readonly string[]>): { legs: Leg[]; problems: string[] } {
  let doc: unknown;
  try {
    doc = JSON.parse(data);
  } catch {
    throw new MalformedPayloadError("event data is not JSON");
  }
  if (!isObject(doc) || !Array.isArray(doc["parsed"])) throw new MalformedPayloadError("event has no parsed[] array");
  const legs: Leg[] = [];
  const problems: string[] = [];
  for (const [i, item] of (doc["parsed"] as unknown[]).entries()) {
    const where = `parsed[${i}]`;
    if (!isObject(item) || typeof item["id"] !== "string") {
      problems.push(`${where}: no id`);
      continue;
    }
    const id = normalizeFeedId(item["id"]);
    const names = id === null ? undefined : namesById.get(id);
    if (names === undefined) {
      problems.push(`${where}: unknown feed id ${JSON.stringify(item["id"].slice(0, 80))}`);
      continue;
    }
    const p = item["price"];
    if (!isObject(p)) {
      problems.push(`${where} (${names[0]}): no price object`);
      continue;
    }
    const { price, conf, expo, publish_time: publishTime } = p;
    if (typeof price !== "string" || !INT.test(price)) problems.push(`${where} (${names[0]}): price ${JSON.stringify(price)} is not an integer string`);
    else if (typeof conf !== "string" || !UINT.test(conf)) problems.push(`${where} (${names[0]}): conf ${JSON.stringify(conf)} is not a non-negative integer string`);
    else if (typeof expo !== "number" || !Number.isInteger(expo) || expo < -30 || expo > 30) problems.push(`${where} (${names[0]}): expo ${JSON.stringify(expo)} is not an integer in [-30, 30]`);
    else if (typeof publishTime !== "number" || !Number.isSafeInteger(publishTime) || publishTime <= 0 || publishTime > 8_640_000_000_000) {
      problems.push(`${where} (${names[0]}): publish_time ${JSON.stringify(publishTime)} is not a positive unix time`);
    } else {
      const value = scaled(price, expo);
      const confidence = scaled(conf, expo);
      for (const feed of names) legs.push({ kind: "pyth", feed, price: value, conf: confidence, observed_at: publishTime * 1000 });
    }
  }
  return { legs, problems };
}

/** Everything one connection needs. */
interface Connection {
  readonly url: string;
  readonly namesById: ReadonlyMap<string, readonly string[]>;
  readonly idleMs: number;
  readonly maxEventBytes: number;
  readonly rateLimitedMs: number;
  readonly o: ResolvedOptions;
  readonly life: AbortSignal;
  readonly emit: (leg: Leg) => void;
}

/** Runs one connection to its end. Returns how many legs it delivered and how long the server asked us to wait. */
async function runConnection(c: Connection): Promise<{ delivered: number; waitMs: number | null }> {
  const { o } = c;
  const conn = new AbortController();
  let delivered = 0;
  let idled = false;
  let lastEventAt = o.scheduler.now();
  const watchdog = o.scheduler.schedule(function (this: SchedulerAction<undefined>) {
    const quiet = o.scheduler.now() - lastEventAt;
    if (quiet >= c.idleMs) {
      idled = true;
      conn.abort(new IdleTimeoutError(c.idleMs));
    } else this.schedule(undefined, c.idleMs - quiet);
  }, c.idleMs);
  try {
    const res = await fetch(c.url, {
      headers: { accept: "text/event-stream", "cache-control": "no-cache" },
      signal: AbortSignal.any([c.life, conn.signal]),
    });
    if (!res.ok) {
      await res.body?.cancel();
      const retryAfter = parseRetryAfter(res.headers.get("retry-after"), o.clock.now());
      const wait = res.status === 429 ? (retryAfter ?? c.rateLimitedMs) : retryAfter;
      // A Retry-After beyond the cap is cut: a misconfigured proxy must not park the stream for hours.
      throw new HttpStatusError(res.status, wait === null ? null : Math.min(wait, MAX_RETRY_AFTER_MS));
    }
    if (res.body === null) throw new MalformedPayloadError("event stream without a body");
    o.log("info", "connected", { feeds: c.namesById.size });
    const reader = res.body.getReader();
    const text = new TextDecoder();
    const sse = new SseDecoder(c.maxEventBytes);
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      for (const data of sse.push(text.decode(value, { stream: true }))) {
        lastEventAt = o.scheduler.now();
        delivered += handleEvent(data, c);
      }
    }
    o.counters.errors++;
    o.log("warn", "event stream ended by the server", { delivered });
    return { delivered, waitMs: null };
  } catch (e) {
    if (c.life.aborted) return { delivered, waitMs: null };
    o.counters.errors++;
    if (idled) o.log("warn", "event stream idle, treating it as dead", { idleMs: c.idleMs, delivered });
    else o.log("warn", "event stream failed", { error: describeError(e), delivered });
    return { delivered, waitMs: e instanceof HttpStatusError ? e.retryAfterMs : null };
  } finally {
    watchdog.unsubscribe();
    conn.abort();
  }
}

/** Parses and emits one event; returns the number of legs emitted. */
function handleEvent(data: string, c: Connection): number {
  const { o } = c;
  let parsed: { legs: Leg[]; problems: string[] };
  try {
    parsed = parseHermesEvent(data, c.namesById);
  } catch (e) {
    o.counters.malformed++;
    o.log("warn", "malformed event dropped", { error: describeError(e), sample: data.slice(0, 120) });
    return 0;
  }
  for (const problem of parsed.problems) {
    o.counters.malformed++;
    o.log("warn", "malformed price item dropped", { problem });
  }
  if (parsed.legs.length > 0) o.counters.received++;
  for (const leg of parsed.legs) c.emit(leg);
  return parsed.legs.length;
}

/**
 * A cold Observable of `pyth` legs from the Hermes SSE stream. Each subscription holds one connection (reopened as
 * described above) until unsubscribed; it never errors and never completes. Options are checked eagerly.
 */
export function pythHermesStream(options: PythHermesOptions): Observable<Leg> {
  const o = resolveOptions("pyth", options);
  const namesById = feedNamesById(options.feeds);
  if (namesById.size === 0) throw new RangeError("pythHermesStream needs at least one feed");
  const idleMs = options.idleMs ?? 30_000;
  if (!(idleMs > 0)) throw new RangeError("idleMs must be > 0");
  const query: [string, string][] = [...namesById.keys()].map((id) => ["ids[]", `0x${id}`]);
  // base64 keeps the (unused, always sent) binary update smaller than hex; unknown ids must not fail the stream.
  query.push(["parsed", "true"], ["encoding", "base64"], ["ignore_invalid_price_ids", "true"]);
  const url = endpointUrl(options.baseUrl, "/v2/updates/price/stream", query);

  return new Observable<Leg>((subscriber) => {
    const life = new AbortController();
    const c: Connection = {
      url,
      namesById,
      idleMs,
      maxEventBytes: options.maxEventBytes ?? 1 << 20,
      rateLimitedMs: options.rateLimitedMs ?? 60_000,
      o,
      life: life.signal,
      emit: (leg) => {
        if (!life.signal.aborted) subscriber.next(leg);
      },
    };
    void (async () => {
      let attempt = 0;
      while (!life.signal.aborted) {
        const { delivered, waitMs } = await runConnection(c);
        if (life.signal.aborted) break;
        if (delivered > 0) attempt = 0;
        const delay = waitMs ?? backoffDelay(attempt++, o.backoff, o.random);
        o.counters.retries++;
        o.log("info", "reconnecting", { delayMs: delay });
        await sleep(delay, o.scheduler, life.signal);
      }
    })().catch((e: unknown) => o.log("error", "stream loop stopped unexpectedly", { error: describeError(e) }));
    return () => life.abort();
  });
}
