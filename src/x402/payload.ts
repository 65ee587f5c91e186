/**
 * Reading a payment: the `PAYMENT-SIGNATURE` header (base64 of the PaymentPayload JSON, x402 HTTP transport v2) or
 * the `_meta["x402/payment"]` value of an MCP call, checked against the x402 project's own schema of a v2 payload
 * before anything else looks at it. Bounded: a header over 8 KiB is refused unread.
 */
import { parsePaymentPayload } from "@x402/core/schemas";
import type { PaymentPayload } from "@x402/core/types";

/** The longest PAYMENT-SIGNATURE accepted (a Solana `exact` payment is about 1.5 KiB). */
export const MAX_PAYMENT_HEADER_BYTES = 8 * 1024;

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

export type PayloadRead = { readonly ok: true; readonly payload: PaymentPayload } | { readonly ok: false; readonly reason: "malformed" | "unsupported"; readonly message: string };

/** Checks a payment value (the parsed JSON). Only x402 v2 payloads are accepted. */
export function readPayment(value: unknown): PayloadRead {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return { ok: false, reason: "malformed", message: "the payment is not a JSON object (an x402 PaymentPayload)" };
  const version = (value as Record<string, unknown>)["x402Version"];
  if (version === undefined) return { ok: false, reason: "malformed", message: "not an x402 PaymentPayload (no x402Version)" };
  if (version !== 2) return { ok: false, reason: "unsupported", message: `x402Version ${JSON.stringify(version) ?? "undefined"} is not supported: this server speaks x402 v2` };
  const parsed = parsePaymentPayload(value);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    return { ok: false, reason: "malformed", message: `not an x402 v2 PaymentPayload${first === undefined ? "" : `: ${first.path.join(".")} ${first.message}`}` };
  }
  // Version 2 was checked above; the schema's v2 branch is the core PaymentPayload (extra defaults to {}).
  return { ok: true, payload: { ...parsed.data, accepted: { ...(parsed.data as PaymentPayload).accepted, extra: (parsed.data as PaymentPayload).accepted.extra ?? {} } } as PaymentPayload };
}

/** Decodes a PAYMENT-SIGNATURE header value. */
export function readPaymentHeader(header: string): PayloadRead {
  const text = header.trim();
  if (text.length > MAX_PAYMENT_HEADER_BYTES) return { ok: false, reason: "malformed", message: `the PAYMENT-SIGNATURE header is over ${MAX_PAYMENT_HEADER_BYTES} bytes` };
  if (text === "" || !(BASE64.test(text) || BASE64URL.test(text))) return { ok: false, reason: "malformed", message: "the PAYMENT-SIGNATURE header is not base64" };
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(text, BASE64.test(text) ? "base64" : "base64url").toString("utf8"));
  } catch {
    return { ok: false, reason: "malformed", message: "the PAYMENT-SIGNATURE header is not base64-encoded JSON" };
  }
  return readPayment(value);
}
