import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import type { ActorHost, MachineView } from "../../actors/index.ts";
import { subjects } from "./topology.ts";

/**
 * The engine answers `peg.machine.<mint>` requests with the live view of that asset's actor (src/actors/inspect.ts),
 * so any API process can show any actor. Unknown mints get `{"error":"unknown_asset"}`. With `partitioned` (several
 * engines, each running the assets it leases) an engine answers only for the assets it runs, so the requester gets
 * the owner's reply and never another engine's `unknown_asset`.
 */
export function serveMachineInspection(nc: NatsConnection, host: ActorHost, options: { partitioned?: boolean } = {}): Subscription {
  const prefix = subjects.machine("");
  return nc.subscribe(subjects.machine("*"), {
    callback: (err, msg) => {
      if (err !== null) return;
      const mint = msg.subject.slice(prefix.length);
      const view = host.inspect(mint);
      if (view === undefined && options.partitioned === true) return;
      msg.respond(JSON.stringify(view === undefined ? { error: "unknown_asset" } : view));
    },
  });
}

/** Thrown when no engine answered within the deadline. */
export class InspectionUnavailableError extends Error {
  constructor(cause: unknown) {
    super(`no engine answered the machine inspection: ${cause instanceof Error ? cause.message : String(cause)}`);
    this.name = "InspectionUnavailableError";
  }
}

/** Asks the engine for one actor's view: null for an asset the engine does not run. */
export async function requestMachineView(nc: NatsConnection, mint: string, timeoutMs = 2_000): Promise<MachineView | null> {
  let reply;
  try {
    reply = await nc.request(subjects.machine(mint), "", { timeout: timeoutMs });
  } catch (e) {
    throw new InspectionUnavailableError(e);
  }
  const body = reply.json<MachineView | { error: string }>();
  return "error" in body ? null : body;
}
