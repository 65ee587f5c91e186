import { randomUUID } from "node:crypto";
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import { ApiError } from "./errors.ts";
import type { Handled, HandledResult, RawRequest } from "./pipeline.ts";
import { Router, type Route } from "./router.ts";
import type { HttpResult } from "./types.ts";
import { serveUws, type UwsServer } from "./uws-adapter.ts";

/** The service's Prometheus metrics (Prometheus naming: base units, `_total` counters). */
export interface Metrics {
  readonly registry: Registry;
  readonly httpDuration: Histogram<"route" | "method" | "status">;
  readonly samples: Counter<"result">;
  readonly transitions: Counter<"to_state">;
  readonly wsClients: Gauge;
  readonly sampleQueue: Gauge;
  readonly samplesDropped: Counter;
  readonly ticksSkipped: Counter;
  readonly wsBackpressureCloses: Counter;
  readonly up: Gauge<"dependency">;
}

export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: "peg_oracle_" });
  return {
    registry,
    httpDuration: new Histogram({
      name: "peg_oracle_http_request_duration_seconds",
      help: "HTTP request duration by route template, method and status",
      labelNames: ["route", "method", "status"],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    }),
    samples: new Counter({ name: "peg_oracle_samples_total", help: "Samples ingested by the engine, by result", labelNames: ["result"], registers: [registry] }),
    transitions: new Counter({
      name: "peg_oracle_transitions_total",
      help: "Transitions acknowledged by JetStream, by target state",
      labelNames: ["to_state"],
      registers: [registry],
    }),
    wsClients: new Gauge({ name: "peg_oracle_websocket_clients", help: "Connected WebSocket clients", registers: [registry] }),
    sampleQueue: new Gauge({
      name: "peg_oracle_sample_publish_queue",
      help: "Evaluated samples waiting for a JetStream publish slot (the engine link's queue)",
      registers: [registry],
    }),
    samplesDropped: new Counter({
      name: "peg_oracle_samples_dropped_total",
      help: "Evaluated samples not recorded in PEG_SAMPLES because the publish queue was full (overload) or the publish failed",
      registers: [registry],
    }),
    ticksSkipped: new Counter({
      name: "peg_oracle_feed_ticks_skipped_total",
      help: "Ticks the simulated market skipped because the pipeline was behind (backpressure: those samples were never produced)",
      registers: [registry],
    }),
    wsBackpressureCloses: new Counter({
      name: "peg_oracle_websocket_backpressure_closes_total",
      help: "WebSocket clients closed (1013) for more than 1 MiB of queued messages",
      registers: [registry],
    }),
    up: new Gauge({ name: "peg_oracle_dependency_up", help: "1 when a dependency (store, nats) answers, else 0", labelNames: ["dependency"], registers: [registry] }),
  };
}

/**
 * GET /metrics in the Prometheus text format: an operator route, served only by the metrics listener (`serveMetrics`),
 * never on the public port, and not in the public document.
 */
export function metricsRoute(metrics: Metrics, refresh?: () => Promise<void>): Route {
  return {
    method: "GET",
    path: "/metrics",
    unlimited: true,
    handler: async () => {
      await refresh?.();
      return { status: 200, text: await metrics.registry.metrics(), contentType: metrics.registry.contentType };
    },
  };
}

/**
 * The metrics listener (issue 14): `/metrics` on its own uWebSockets.js listener at `METRICS_HOST:METRICS_PORT`
 * (default 127.0.0.1:9464; port 0 picks a free one, `UwsServer.port` tells which). A scrape is expensive (~9 ms,
 * growing with label cardinality), so it is never served on the public port outside the rate limits, and nobody on
 * the network reaches it unless an operator binds METRICS_HOST elsewhere. Other paths answer 404 and other methods
 * 405, in the API's error shape.
 */
export function serveMetrics(
  metrics: Metrics,
  refresh: (() => Promise<void>) | undefined,
  opts: { readonly host: string; readonly port: number; readonly onError?: (e: unknown) => void },
): Promise<UwsServer> {
  const router = new Router([metricsRoute(metrics, refresh)]);
  const handle = (raw: RawRequest): Handled => {
    const requestId = randomUUID();
    const done = (r: HttpResult): HandledResult => ({ ...r, headers: { "x-request-id": requestId, ...r.headers } });
    const failed = (e: unknown): HandledResult => {
      if (e instanceof ApiError) return done({ status: e.status, json: e.toBody(), ...(e.extra.headers === undefined ? {} : { headers: e.extra.headers }) });
      opts.onError?.(e);
      return done({ status: 500, json: { error: "internal", message: "internal error" } });
    };
    try {
      const r = router.run(router.match(raw.method, raw.path), raw, requestId);
      return r instanceof Promise ? r.then(done, failed) : done(r);
    } catch (e) {
      return failed(e);
    }
  };
  return serveUws(handle, { host: opts.host, port: opts.port, trustProxy: false, ...(opts.onError === undefined ? {} : { onError: opts.onError }) });
}
