/** Liveness and readiness probes (interface 4.1, addendum A). Exempt from rate limiting. */
import type { z } from "zod";
import type { ReadModel, Readiness as ReadinessCounts } from "../read-model.ts";
import { Health, Readiness } from "../schemas/index.ts";
import { STALE_AFTER_MS } from "./asset-card.ts";
import { jsonResult, type DocumentedRoute } from "./spec.ts";

type ReadinessBody = z.output<typeof Readiness>;

/** Not ready when a dependency is down, or the newest snapshot is missing or older than the staleness bound. */
export function readinessBody(r: ReadinessCounts): ReadinessBody {
  const checks = { database: r.database, nats: r.nats, snapshot_age_secs: r.snapshot_age_secs, engine: r.engine };
  const failing: string[] = [];
  if (!r.database) failing.push(r.reasons?.database ?? "database is down");
  if (!r.nats) failing.push(r.reasons?.nats ?? "nats is down");
  if (!r.engine) failing.push(r.reasons?.engine ?? "engine is not running");
  if (r.overloaded !== undefined) failing.push(r.overloaded);
  if (r.snapshot_age_secs === null) failing.push("no asset snapshot yet");
  else if (r.snapshot_age_secs * 1000 > STALE_AFTER_MS) failing.push(`newest snapshot is ${r.snapshot_age_secs} s old`);
  return failing.length === 0 ? { ok: true, checks } : { ok: false, checks, error: "not_ready", message: failing.join("; ") };
}

export function healthRoutes(rm: ReadModel): DocumentedRoute[] {
  const live = (): ReturnType<typeof jsonResult> => jsonResult(200, { ok: true });
  const liveSpec = (summary: string) => ({
    summary,
    tags: ["health"],
    responses: { 200: Health },
    errors: [],
  });
  return [
    { method: "GET", path: "/healthz", unlimited: true, handler: live, spec: liveSpec("Liveness probe") },
    { method: "GET", path: "/health", unlimited: true, handler: live, spec: liveSpec("Liveness probe (alias of /healthz)") },
    {
      method: "GET",
      path: "/readyz",
      unlimited: true,
      handler: async () => {
        let counts: ReadinessCounts;
        try {
          counts = await rm.readiness();
        } catch {
          counts = { database: false, nats: false, engine: false, snapshot_age_secs: null };
        }
        const body = readinessBody(counts);
        return jsonResult(body.ok ? 200 : 503, body, { "cache-control": "no-store" });
      },
      spec: {
        summary: "Readiness probe",
        description: "200 when the database, NATS and the engine are up and the newest snapshot is at most 15 minutes old; 503 otherwise, with the same body plus `error: not_ready`.",
        tags: ["health"],
        responses: { 200: Readiness, 503: { schema: Readiness, description: "Not ready." } },
        errors: [],
      },
    },
  ];
}
