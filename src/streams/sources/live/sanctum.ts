/**
 * Sanctum LST SOL value: `GET {base}/v1/sol-value/current?lst=<mint>&lst=<mint>…`, answered with
 * `{"solValues": {"<lst>": "<lamports>"}, "errs": {"<lst>": …}}`, where the value is the lamports one whole LST
 * (10^9 base units) is worth, as an integer string. SOL per LST = lamports / 10^9, exactly. LSTs are asked for by
 * mint (unambiguous, unlike symbols) and the answer is keyed the same way. An `errs` entry or a missing LST yields no
 * leg this cycle (counted in `omitted`). The Sanctum API wants an API key as a query parameter: put it on the base
 * URL (`SANCTUM_API_URL=https://sanctum-api.ironforge.network?apiKey=…`); it is kept on every request, never logged.
 *
 * Backpressure policy: polling (`pollingSource`): one request in flight, batches one after another through a
 * request budget, latest wins. Sanctum values move once per epoch (about two days), so the default cadence is 60 s.
 */
import type { Observable } from "rxjs";
import type { CatalogAsset } from "../../../catalog/index.ts";
import { D, type Decimal } from "../../../methodology/index.ts";
import type { Leg } from "../legs.ts";
import { MalformedPayloadError, describeError } from "./errors.ts";
import { RequestBudget, endpointUrl, fetchText, type RetryLimits } from "./http.ts";
import { batches, pollingSource, resolveOptions, type LiveAdapterOptions } from "./source.ts";

/** Options of `sanctumSolValues`. */
export interface SanctumOptions extends LiveAdapterOptions {
  /** API base URL, with its `?apiKey=` when the deployment needs one. */
  readonly baseUrl: string;
  /** LST mints to value (duplicates ignored). Not empty. */
  readonly mints: readonly string[];
  /** Milliseconds between cycles. Default 60 000. */
  readonly intervalMs?: number;
  /** LSTs per request. Default 20. */
  readonly batchSize?: number;
  /** Request budget. Default 30 per minute. */
  readonly requestsPerMinute?: number;
  readonly retry?: RetryLimits;
}

/** Mints of the assets whose intrinsic value is Sanctum's SOL value (`intrinsic.kind` `sanctum_lst`). */
export function sanctumMintsOf(assets: readonly CatalogAsset[]): string[] {
  return assets.filter((a) => a.intrinsic.kind === "sanctum_lst").map((a) => a.mint);
}

/** What one answer says about the LSTs asked for. */
export interface SanctumAnswer {
  /** SOL per whole LST. */
  readonly values: ReadonlyMap<string, Decimal>;
  /** Asked for and answered in `errs`, or not answered at all. */
  readonly omitted: readonly string[];
  /** Values that break the wire format, or LSTs never asked for: each counts as malformed. */
  readonly problems: readonly string[];
}

const LAMPORTS = /^\d{1,30}$/;

function isObject(v: unknown): v is Readonly<Record<string, unknown>> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Parses a sol-value body. Throws MalformedPayloadError when it has no `solValues` object. */
export function parseSanctumSolValues(text: string, requested: readonly string[]): SanctumAnswer {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new MalformedPayloadError("sol-value answer is not JSON");
  }
  if (!isObject(doc) || !isObject(doc["solValues"])) throw new MalformedPayloadError("sol-value answer has no solValues object");
  const solValues = doc["solValues"];
  const errs = isObject(doc["errs"]) ? doc["errs"] : {};
  const asked = new Set(requested);
  const values = new Map<string, Decimal>();
  const omitted: string[] = [];
  const problems: string[] = [];
  for (const lst of requested) {
    const raw = solValues[lst];
    if (raw === undefined || raw === null) {
      omitted.push(lst);
      continue;
    }
    if (typeof raw !== "string" || !LAMPORTS.test(raw) || /^0+$/.test(raw)) {
      problems.push(`${lst}: sol value ${JSON.stringify(raw)} is not a positive integer string of lamports`);
      continue;
    }
    values.set(lst, new D(`${raw}e-9`));
  }
  for (const key of Object.keys(solValues)) if (!asked.has(key)) problems.push(`unexpected LST ${JSON.stringify(key.slice(0, 60))}`);
  for (const key of Object.keys(errs)) if (!asked.has(key)) problems.push(`errs names an LST never asked for: ${JSON.stringify(key.slice(0, 60))}`);
  return { values, omitted, problems };
}

/**
 * A cold Observable of `sol_per_lst` legs (`source: "sanctum"`, observed_at = clock time of the answer), polling
 * every `intervalMs`. Never errors.
 */
export function sanctumSolValues(options: SanctumOptions): Observable<Leg> {
  const o = resolveOptions("sanctum", options);
  const mints = [...new Set(options.mints)];
  if (mints.length === 0) throw new RangeError("sanctumSolValues needs at least one LST");
  const batchSize = options.batchSize ?? 20;
  if (!Number.isInteger(batchSize) || batchSize < 1) throw new RangeError("batchSize must be a positive integer");
  const budget = new RequestBudget({ perMinute: options.requestsPerMinute ?? 30 }, o.scheduler);
  const groups = batches(mints, batchSize);

  return pollingSource(options.intervalMs ?? 60_000, o, async ({ signal, emit }) => {
    for (const [i, group] of groups.entries()) {
      const what = `sol-value batch ${i + 1}/${groups.length}`;
      const url = endpointUrl(options.baseUrl, "/v1/sol-value/current", group.map((m) => ["lst", m] as const));
      const text = await fetchText({ url, what }, o, budget, signal, options.retry);
      if (text === null || signal.aborted) continue;
      let answer: SanctumAnswer;
      try {
        answer = parseSanctumSolValues(text, group);
      } catch (e) {
        o.counters.malformed++;
        o.log("warn", "malformed sol-value answer dropped", { what, error: describeError(e), sample: text.slice(0, 120) });
        continue;
      }
      for (const problem of answer.problems) {
        o.counters.malformed++;
        o.log("warn", "malformed sol-value entry dropped", { what, problem });
      }
      o.counters.omitted += answer.omitted.length;
      if (answer.omitted.length > 0) o.log("warn", "LSTs without a SOL value", { what, lsts: answer.omitted });
      o.counters.received++;
      const observedAt = o.clock.now();
      for (const [mint, sol] of answer.values) emit({ kind: "sol_per_lst", mint, sol, source: "sanctum", observed_at: observedAt });
    }
  });
}
