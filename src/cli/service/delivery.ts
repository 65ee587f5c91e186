import { jetstream } from "@nats-io/jetstream";
import type { Catalog } from "../../catalog/index.ts";
import type { Clock } from "../../clock.ts";
import type { Config } from "../../config.ts";
import { Dispatcher, dispatchHandler, serveKeyAdmin, startDeliveryWorker, type DeliveryWorker, type KeyRing, type Resolve } from "../../delivery/index.ts";
import type { Store } from "../../store/index.ts";
import { startBatchConsumer, TOPOLOGY, type LogFn } from "../../streams/jetstream/index.ts";
import type { NatsLink } from "./nats.ts";
import { consumerLogs } from "./projectors.ts";
import type { UndoStack } from "./undo.ts";

/**
 * Tests only: webhook destinations on this machine. `resolve` replaces DNS (registration check and delivery), `ca` is
 * trusted in addition to the system CAs, `allowLoopback` lets loopback addresses through the SSRF guard.
 */
export interface WebhookTestOnly {
  readonly resolve?: Resolve;
  readonly ca?: string;
  readonly allowLoopback?: boolean;
}

/**
 * The dispatcher serves the API's webhook test and replay routes (their work goes through JetStream, so it waits
 * there until the worker starts); delivery timing is wall-clock time (`clock`), whatever the feed's clock.
 */
export function webhookDispatcher(config: Config, catalog: Catalog, store: Store, nats: NatsLink, clock: Clock, log: LogFn): Dispatcher {
  return new Dispatcher({
    db: store.db,
    js: jetstream(nats.nc),
    catalog,
    now: () => clock.now(),
    baseUrl: config.webhookBaseUrl,
    timeScale: config.webhookTimeScale,
    log,
    telegram: config.telegramBotToken !== null,
  });
}

export interface DeliveryParts {
  readonly config: Config;
  readonly nats: NatsLink;
  readonly store: Store;
  readonly keyRing: KeyRing;
  readonly dispatcher: Dispatcher;
  readonly clock: Clock;
  readonly log: LogFn;
  readonly testOnly: WebhookTestOnly | undefined;
  readonly undo: UndoStack;
}

/** Webhook delivery once running: the worker (null in an API process) and its stop (dispatch, key admin, worker). */
export interface Delivery {
  readonly worker: DeliveryWorker | null;
  stop(): Promise<void>;
}

/**
 * Starts webhook delivery: each acked transition is dispatched to the webhooks of its asset, and the worker runs the
 * attempts from PEG_DELIVERIES (engines only). Both consumers are created now, while recovery runs; `running()` awaits
 * them, before intake (the dispatch consumer, when first created, starts from the next transition). Key rotation
 * requests (`peg-oracle webhook-keys rotate`) and re-reads after another process rotated are served at once.
 */
export function startDelivery(p: DeliveryParts): { running(): Promise<Delivery> } {
  const { config, nats, store, clock, log, testOnly, undo } = p;
  const runsEngine = config.role !== "api";
  const { onReject, onError } = consumerLogs(log);
  const workerStarting = !runsEngine ? null : startDeliveryWorker({
    nc: nats.nc,
    jsm: nats.topology.jsm,
    db: store.db,
    keys: p.keyRing,
    now: () => clock.now(),
    timeScale: config.webhookTimeScale,
    log,
    ...(config.telegramBotToken === null ? {} : { telegram: { apiUrl: config.telegramApiUrl, botToken: config.telegramBotToken } }),
    allowedPorts: config.webhookAllowedPorts,
    ...(testOnly?.resolve === undefined ? {} : { resolve: testOnly.resolve }),
    ...(testOnly === undefined ? {} : { testOnly: { ...(testOnly.ca === undefined ? {} : { ca: testOnly.ca }), allowLoopback: testOnly.allowLoopback === true } }),
  });
  // Dispatch is a durable consumer of the transitions (from the next one, when first created): a transition
  // acknowledged just before a crash is dispatched after the restart, and one dispatched twice changes nothing.
  const dispatchStarting = !runsEngine
    ? null
    : startBatchConsumer(
        nats.nc,
        nats.topology.jsm,
        {
          stream: TOPOLOGY.transitions.stream,
          durable: "delivery-dispatch",
          filterSubject: TOPOLOGY.transitions.subjects,
          startAt: "new",
          // Each decision reads the sends decided before it: one transition at a time, in stream order, even when
          // a crash left one unacknowledged or several engines share the consumer.
          inOrder: { ackWaitMs: 10_000 },
          onError,
        },
        dispatchHandler(p.dispatcher, (id) => store.markDispatched(id, clock.now()), onReject),
      );
  const starting = Promise.allSettled([workerStarting, dispatchStarting]);
  const keyAdmin = serveKeyAdmin(nats.nc, p.keyRing, () => clock.now(), { log });
  undo.push(() => keyAdmin.stop());
  let awaited = false;
  undo.push(async () => {
    // A start that fails before the consumers were awaited stops them once they have started.
    if (awaited) return;
    for (const r of await starting) if (r.status === "fulfilled") await r.value?.stop();
  });
  return {
    running: async () => {
      const [workerStarted, dispatchStarted] = await starting;
      awaited = true;
      if (workerStarted.status === "fulfilled") undo.push(async () => workerStarted.value?.stop());
      if (dispatchStarted.status === "fulfilled") undo.push(async () => dispatchStarted.value?.stop());
      if (workerStarted.status === "rejected") throw workerStarted.reason;
      if (dispatchStarted.status === "rejected") throw dispatchStarted.reason;
      const worker = workerStarted.value;
      const dispatching = dispatchStarted.value;
      return {
        worker,
        stop: async () => {
          await keyAdmin.stop();
          await dispatching?.stop();
          await p.dispatcher.idle();
          await worker?.stop();
        },
      };
    },
  };
}
