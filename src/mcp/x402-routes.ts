/**
 * The paid data over plain HTTP, as x402's HTTP transport (specs/transports-v2/http.md) and interface 1.8 / 5.7 put
 * it: an HTTP 402 challenge, a signed transfer, a replayed request. Outside the REST contract (not in /openapi.json).
 *
 * - `GET /x402/peg-feed` (price of get_peg_feed): the /v1/peg/feed body;
 * - `GET /x402/events?after=<cursor>&wait=<secs>&limit=<n>` (price of subscribe_peg_events): transitions after the
 *   cursor, waiting up to `wait` seconds for a first one, and the next cursor.
 *
 * Without `PAYMENT-SIGNATURE`: 402 with the base64 PaymentRequired in `PAYMENT-REQUIRED`. With one: read (a header
 * that is not a payment is 400 `invalid_payment`), verified and claimed (a refusal is 402 again, its PaymentRequired
 * `error` saying why, the JSON body naming the `reason`), the data is read, the payment settled, and only then 200
 * with the data and the base64 SettleResponse in `PAYMENT-RESPONSE` (a failed settlement: 402 `settlement_failed`
 * with the failed SettleResponse in `PAYMENT-RESPONSE`, no data).
 * The Solana RPC or the facilitator unreachable: 503 `payment_unavailable` with Retry-After, nothing charged. Query
 * errors are 400 `invalid_query` before any payment is looked at. A payment already settled for the same route and
 * query (its answer lost to a crash or a dropped connection), sent again within the answer window: 200 with the same
 * data and the same `PAYMENT-RESPONSE`.
 */
import { encodePaymentRequiredHeader, encodePaymentResponseHeader } from "@x402/core/http";
import { ApiError, invalidQuery } from "../http/errors.ts";
import type { Route } from "../http/router.ts";
import type { HttpRequest, HttpResult } from "../http/types.ts";
import { readPaymentHeader, type PaidTool, type PaymentGate, type PaymentRequired, type Refused, type ResourceInfo, type SettleResponse, type Unavailable } from "../x402/index.ts";
import { okBody, type ApiCaller } from "./api.ts";
import { EVENTS_LIMIT, EVENTS_WAIT_SECS, type TransitionEvents } from "./events.ts";
import { ToolError } from "./errors.ts";

export interface X402RouteDeps {
  readonly gate: PaymentGate;
  readonly api: ApiCaller;
  readonly events: TransitionEvents;
  /** Public base URL of this API (the `resource.url` of each challenge). */
  readonly baseUrl: string;
}

const NO_STORE = { "cache-control": "no-store" };

function challengeResult(pr: PaymentRequired, body: Record<string, unknown>): HttpResult {
  return { status: 402, headers: { ...NO_STORE, "PAYMENT-REQUIRED": encodePaymentRequiredHeader(pr) }, json: { ...body, x402: pr } };
}

function unavailableResult(u: Unavailable): HttpResult {
  return {
    status: 503,
    headers: { ...NO_STORE, "retry-after": "5" },
    json: { error: "payment_unavailable", message: `${u.message}; nothing was charged: send the same request again later` },
  };
}

/**
 * A refused payment, by the status table of x402's HTTP transport (Error Handling): a payload that cannot be read is
 * 400 Invalid Payment (no challenge: the client must fix its payment, not pay again); a settlement that failed is 402
 * with the failed SettleResponse in `PAYMENT-RESPONSE` (the work was done, the payment not taken); any other refusal
 * is 402 with the challenge again, its `error` saying why.
 */
function refusedResult(r: Refused): HttpResult {
  const body = { reason: r.reason, message: r.message };
  if (r.settlement !== undefined) return { status: 402, headers: { ...NO_STORE, "PAYMENT-RESPONSE": encodePaymentResponseHeader(r.settlement) }, json: { error: "settlement_failed", ...body } };
  if (r.reason === "malformed") return { status: 400, headers: NO_STORE, json: { error: "invalid_payment", ...body } };
  return challengeResult(r.paymentRequired, { error: "payment_refused", ...body });
}

/** Parses an optional integer query parameter within bounds. */
function intParam(q: URLSearchParams, name: string, min: number, max: number): number | undefined {
  const raw = q.get(name);
  if (raw === null) return undefined;
  if (!/^\d{1,15}$/.test(raw)) throw invalidQuery(`${name} must be an integer`);
  const n = Number(raw);
  if (n < min || n > max) throw invalidQuery(`${name} must be between ${min} and ${max}`);
  return n;
}

/** What a paid request asks, as the gate binds a payment to it: the route and its query, parameters sorted. */
function routeRequest(req: HttpRequest): string {
  const q = [...req.query.entries()].sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0));
  return `GET ${req.path}?${new URLSearchParams(q).toString()}`;
}

const paidResult = (data: unknown, settlement: SettleResponse): HttpResult => ({ status: 200, headers: { ...NO_STORE, "PAYMENT-RESPONSE": encodePaymentResponseHeader(settlement) }, json: data });

/** One paid answer: challenge, verify and claim (or the answer already owed), `work`, settle, deliver. */
async function paid(gate: PaymentGate, tool: PaidTool, resource: ResourceInfo, req: HttpRequest, work: () => Promise<unknown>): Promise<HttpResult> {
  const header = req.headers["payment-signature"];
  if (header === undefined) {
    const pr = await gate.required(tool, resource, "PAYMENT-SIGNATURE header is required");
    return "kind" in pr ? unavailableResult(pr) : challengeResult(pr, { error: "payment_required", message: pr.error ?? "payment required" });
  }
  const read = readPaymentHeader(header);
  const verified = read.ok ? await gate.verify(tool, resource, read.payload, routeRequest(req)) : await gate.refuse(tool, resource, read.reason, read.message);
  if (verified.kind === "unavailable") return unavailableResult(verified);
  if (verified.kind === "refused") return refusedResult(verified);
  if (verified.kind === "owed") {
    await gate.delivered(verified);
    return paidResult(verified.answer, verified.settlement);
  }
  let data: unknown;
  try {
    data = await work();
  } catch (e) {
    await gate.release(verified);
    if (e instanceof ToolError) throw new ApiError(e.code === "not_ready" ? "not_ready" : e.code === "invalid_input" ? "invalid_query" : "internal", e.message);
    throw e;
  }
  const settled = await gate.settle(verified, resource, data);
  if (settled.kind === "unavailable") return unavailableResult(settled);
  if (settled.kind === "refused") return refusedResult(settled);
  await gate.delivered(verified);
  return paidResult(data, settled.settlement);
}

export function x402Routes(deps: X402RouteDeps): Route[] {
  const { gate, api, events } = deps;
  const resource = (path: string, description: string): ResourceInfo => ({ url: `${deps.baseUrl}${path}`, description, mimeType: "application/json" });
  const feed = resource("/x402/peg-feed", "Peg feed of every asset (the /v1/peg/feed signals with the systemic block)");
  const transitions = resource("/x402/events", "Peg-state transitions after a cursor");
  return [
    {
      method: "GET",
      path: "/x402/peg-feed",
      handler: (req) => paid(gate, "get_peg_feed", feed, req, async () => okBody(await api.get("/v1/peg/feed"))),
    },
    {
      method: "GET",
      path: "/x402/events",
      handler: (req) => {
        const after = intParam(req.query, "after", 0, Number.MAX_SAFE_INTEGER);
        const wait = intParam(req.query, "wait", EVENTS_WAIT_SECS.min, EVENTS_WAIT_SECS.max) ?? EVENTS_WAIT_SECS.default;
        const limit = intParam(req.query, "limit", EVENTS_LIMIT.min, EVENTS_LIMIT.max) ?? EVENTS_LIMIT.default;
        return paid(gate, "subscribe_peg_events", transitions, req, async () => {
          const page = await events.after(after ?? (await events.latest()), { limit, waitMs: wait * 1000 });
          return { events: page.events, next_cursor: page.next_cursor };
        });
      },
    },
  ];
}
