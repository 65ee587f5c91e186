/**
 * The lease keeper's thread (`lease-keeper.ts` is the other side): its own NATS connection, the engine's renewals and
 * heartbeat (`Renewals`), every tick while the engine's event loop has beaten within `maxStallMs`. Messages in:
 * `start`, `hold`, `let-go`, `drop`, `stop`. Messages out: `started` or `failed`, `taken`, `let-go` (the answer),
 * `log`, `stopped`. A renewal's send instant goes to the unit's slot in shared memory, where the engine reads it.
 */
import { parentPort } from "node:worker_threads";
import { connect } from "@nats-io/transport-node";
import { systemClock } from "../../clock.ts";
import { Heartbeat } from "./lease-heartbeat.ts";
import type { FromKeeper, KeeperData, ToKeeper } from "./lease-keeper.ts";
import type { HeldLease, RenewalContext } from "./lease-renewal.ts";
import { Renewals } from "./lease-renewals.ts";
import { natsLeaseStore } from "./lease-store.ts";

const port = parentPort!;
const post = (m: FromKeeper) => port.postMessage(m);
const log = (level: "debug" | "info" | "warn" | "error", msg: string, fields?: Record<string, unknown>) => post({ type: "log", level, msg, ...(fields === undefined ? {} : { fields }) });

const data = await new Promise<KeeperData>((resolve) => {
  port.on("message", function start(m: ToKeeper) {
    if (m.type !== "start") return;
    port.off("message", start);
    resolve(m.data);
  });
});

/** A hold as the thread keeps it: the lease, and the term the engine gave it. */
interface Kept extends HeldLease {
  readonly term: number;
}

try {
  const nc = await connect({ servers: [...data.servers], name: "peg-oracle-leases", maxReconnectAttempts: -1, reconnectTimeWait: 250, noAsyncTraces: true });
  const store = await natsLeaseStore(nc, "open");
  const slots = new BigInt64Array(data.shared);
  const slotOf = new Map(data.keys.map((k, i) => [k, i + 1]));
  const held = new Map<string, Kept>();
  let stopped = false;
  const context: RenewalContext = { store, clock: systemClock, self: data.self, ttl: data.ttlMs, fenceAfter: data.fenceAfterMs, log, stopped: () => stopped };
  const renewals = new Renewals({
    context,
    held,
    key: (key) => key,
    everyMs: data.everyMs,
    tickMs: data.tickMs,
    heartbeat: new Heartbeat(store, data.self, data.ttlMs, log),
    settled: (key, lease, outcome) => {
      if (outcome === "renewed") Atomics.store(slots, slotOf.get(key)!, BigInt(Math.floor(lease.sentAt)));
      // Renewed, or handed back (the engine's `let-go` takes it from here).
      if (outcome === "renewed" || lease.releasing === true) return;
      held.delete(key);
      // "gone": given up at its fencing deadline, which the engine keeps on its own clock.
      if (outcome === "taken") post({ type: "taken", key, term: (lease as Kept).term });
    },
  });
  // Renewals only while the engine's loop beats: a wedged engine must lose its leases.
  let wedged = false;
  const tick = setInterval(() => {
    const silent = systemClock.now() - Number(Atomics.load(slots, 0));
    if (silent <= data.maxStallMs) {
      wedged = false;
      void renewals.due();
    } else if (!wedged) {
      wedged = true;
      log("error", "the engine's event loop has not run for too long: its leases are left to lapse", { silent_ms: silent, max_stall_ms: data.maxStallMs });
    }
  }, data.tickMs);
  const letGo = async (key: string, id: number) => {
    const lease = held.get(key);
    if (lease === undefined) return post({ type: "let-go", id, lease: null });
    lease.releasing = true;
    await renewals.of(key);
    const still = held.get(key) === lease;
    if (still) held.delete(key);
    post({ type: "let-go", id, lease: still ? { revision: lease.revision, sentAt: lease.sentAt } : null });
  };
  port.on("message", (m: ToKeeper) => {
    if (m.type === "hold") held.set(m.key, { revision: m.revision, sentAt: m.sentAt, term: m.term });
    else if (m.type === "drop") held.delete(m.key);
    else if (m.type === "let-go") void letGo(m.key, m.id);
    else if (m.type === "stop")
      void (async () => {
        stopped = true;
        clearInterval(tick);
        await Promise.allSettled(renewals.inFlight);
        await renewals.removeHeartbeat();
        await nc.close().catch(() => {});
        post({ type: "stopped" });
        port.close();
      })();
  });
  // The first beat at once: the other engines count this one from it.
  void renewals.due(true);
  post({ type: "started" });
} catch (e) {
  post({ type: "failed", error: e instanceof Error ? e.message : String(e) });
  port.close();
}
