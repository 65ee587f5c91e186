import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { Route } from "./router.ts";

/** The service's Prometheus metrics (Prometheus naming: base units, `_total` counters). */
export interface Metrics {
  readonly registry: Registry;
  readonly httpDuration: Histogram<"route" | "method" | "status">;
  readonly samples: Counter<"result">;
  readonly transitions: Counter<"to_state">;
  readonly wsClients: Gauge;
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
    wsBackpressureCloses: new Counter({
      name: "peg_oracle_websocket_backpressure_closes_total",
      help: "WebSocket clients closed (1013) for more than 1 MiB of queued messages",
      registers: [registry],
    }),
    up: new Gauge({ name: "peg_oracle_dependency_up", help: "1 when a dependency (store, nats) answers, else 0", labelNames: ["dependency"], registers: [registry] }),
  };
}

/** GET /metrics in the Prometheus text format (operator route: not rate limited, not in the public document). */
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
