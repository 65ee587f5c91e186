/**
 * The delivery side of resolution pinning: `https.request` options that connect to the address `checkDestination`
 * approved, while TLS (SNI and certificate check) and the `Host` header still use the name from the URL. Node's
 * `https.request` never follows redirects, so a 3xx comes back as a response and the caller counts it as a failure
 * (interface 6.3.3).
 */
import { lookup as dnsLookup } from "node:dns/promises";
import type { LookupFunction } from "node:net";
import type { RequestOptions } from "node:https";
import type { DestinationAccepted, Resolve } from "./ssrf.ts";

export interface PinnedRequestOptions {
  /** Request headers (the signed delivery headers); any `Host` given here is replaced by the checked one. */
  readonly headers?: Readonly<Record<string, string>>;
  /** Default `POST`. */
  readonly method?: string;
  /** Aborts the whole request; pass `AbortSignal.timeout(5000)` for the 5 s total budget (interface 6.3.3). */
  readonly signal?: AbortSignal;
  /** Extra trusted CA certificates (PEM), e.g. the self-signed CA of a test receiver. */
  readonly ca?: string | Buffer | ReadonlyArray<string | Buffer>;
}

/**
 * A `lookup` that answers with the pinned address whatever it is asked. Node skips lookup when `host` is already an
 * IP address; this is the backstop, so no code path can resolve the name again.
 */
export function pinnedLookup(address: string, family: 4 | 6): LookupFunction {
  return (_hostname, options, callback) => {
    if (options.all === true) {
      (callback as (err: null, addresses: { address: string; family: number }[]) => void)(null, [{ address, family }]);
    } else {
      (callback as (err: null, address: string, family: number) => void)(null, address, family);
    }
  };
}

/** `https.request` options for one delivery attempt to a checked destination. */
export function pinnedRequestOptions(checked: DestinationAccepted, opts: PinnedRequestOptions = {}): RequestOptions {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(opts.headers ?? {})) {
    if (k.toLowerCase() !== "host") headers[k] = v;
  }
  headers["host"] = checked.hostHeader;
  const options: RequestOptions = {
    protocol: "https:",
    host: checked.pinnedAddress,
    family: checked.family,
    port: checked.port,
    path: checked.path,
    method: opts.method ?? "POST",
    headers,
    lookup: pinnedLookup(checked.pinnedAddress, checked.family),
    // A fresh connection per attempt: no pooled socket opened for another destination is ever reused.
    agent: false,
  };
  // An IP literal has no SNI; otherwise SNI and the certificate check use the name, not the pinned address.
  if (checked.servername !== undefined) options.servername = checked.servername;
  if (opts.signal !== undefined) options.signal = opts.signal;
  if (opts.ca !== undefined) options.ca = typeof opts.ca === "string" || Buffer.isBuffer(opts.ca) ? opts.ca : [...opts.ca];
  return options;
}

/**
 * The production resolver for `checkDestination`: the system resolver (A and AAAA, as getaddrinfo answers, in its
 * order). Tests inject their own.
 */
export const systemResolve: Resolve = async (hostname) => {
  const answers = await dnsLookup(hostname, { all: true, verbatim: true });
  return answers.map((a) => a.address);
};
