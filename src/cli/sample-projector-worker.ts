/**
 * The sample projector on its own thread (`sample-projector-thread.ts` is the other side): its own NATS connection,
 * its own PostgreSQL pool, the same durable consumer and projector as in the engine's thread. Spawned early (its
 * modules load while the service opens its store and NATS), it starts on `start`. Messages in: `start` (where NATS and
 * PostgreSQL are), `supplies` (the latest circulating supply of some mints), `stop`. Messages out: `started`, `stats`
 * (after every batch), `log`, `stopped`, `failed`.
 */
import { parentPort } from "node:worker_threads";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { systemClock } from "../clock.ts";
import { sampleProjector, type ProjectorStats } from "../streams/projector/projector.ts";
import { startSampleConsumers } from "../streams/projector/sample-consumers.ts";
import { openStore, retentionFromDays } from "../store/index.ts";
import type { ToThread, FromThread, ThreadData } from "./sample-projector-thread.ts";

const port = parentPort!;
const post = (m: FromThread) => port.postMessage(m);
const log = (level: "warn" | "error", msg: string, fields?: Record<string, unknown>) => post({ type: "log", level, msg, ...(fields === undefined ? {} : { fields }) });

const supplies = new Map<string, string | null>();
const stats: ProjectorStats = { projected: 0, duplicates: 0, rejected: 0, stale: 0 };

const data = await new Promise<ThreadData>((resolve) => {
  port.on("message", function start(m: ToThread) {
    if (m.type !== "start") return;
    port.off("message", start);
    resolve(m.data);
  });
});

try {
  const nc = await connect({ servers: [...data.servers], name: "peg-oracle-projector", maxReconnectAttempts: -1, reconnectTimeWait: 250, noAsyncTraces: true });
  const store = await openStore({ kind: "postgres", url: data.databaseUrl, max: 4 }, systemClock, retentionFromDays(data.history));
  const project = sampleProjector(store, stats, (why) => log("warn", "projector rejected a message", { why }), (mint) => supplies.get(mint) ?? null);
  const consumer = await startSampleConsumers(
    nc,
    await jetstreamManager(nc),
    async (batch) => {
      await project(batch);
      post({ type: "stats", stats: { ...stats } });
    },
    (e) => log("warn", "projector batch failed; it will be redelivered", { error: e instanceof Error ? e.message : String(e) }),
  );
  port.on("message", (m: ToThread) => {
    if (m.type === "supplies") for (const [mint, wire] of m.supplies) supplies.set(mint, wire);
    else if (m.type === "stop")
      void (async () => {
        try {
          await consumer.stop();
          await store.close();
          await nc.close();
        } catch (e) {
          log("warn", "the sample projector's thread stopped with an error", { error: e instanceof Error ? e.message : String(e) });
        }
        post({ type: "stopped", stats: { ...stats } });
        port.close();
      })();
  });
  post({ type: "started" });
} catch (e) {
  post({ type: "failed", error: e instanceof Error ? e.message : String(e) });
  port.close();
}
