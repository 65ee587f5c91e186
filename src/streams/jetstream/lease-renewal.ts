import type { Clock } from "../../clock.ts";
import type { LogFn } from "./engine-link.ts";
import { LeaseConflictError, type LeaseStore } from "./lease-store.ts";

/** A renewal waits this long for its answer at most, then tries again (while its fencing deadline allows). */
const RENEW_TIMEOUT_MS = 750;
/** A renewal is not sent with less time than this before its fencing deadline (it could not be answered in time). */
const RENEW_MIN_TIMEOUT_MS = 150;
/** Between a failed renewal and the next try. */
const RENEW_RETRY_PAUSE_MS = 50;

/** A held unit's lease as its holder knows it. */
export interface HeldLease {
  revision: number;
  /** When the write that produced `revision` was sent: the lease is valid until sentAt + ttl. */
  sentAt: number;
  /** Being handed back: not renewed any more (a renewal racing the delete would keep the key alive). */
  releasing?: boolean;
}

/** What a renewal needs of its lease manager (leases.ts). */
export interface RenewalContext {
  readonly store: Pick<LeaseStore, "update" | "get">;
  readonly clock: Clock;
  readonly self: string;
  readonly ttl: number;
  readonly fenceAfter: number;
  readonly log: LogFn;
  /** The manager stopped: no more tries. */
  stopped(): boolean;
}

/**
 * Renews one held lease (`key`, of `unit`), tried again until its fencing deadline: "renewed" (`held` has the new
 * revision and send instant), "taken" (another engine holds the key now), or "gone" (given up at the deadline, or
 * `current()` is no longer `held`: fenced, handed back or stopped meanwhile).
 */
export async function renewLease(c: RenewalContext, key: string, unit: string, held: HeldLease, current: () => HeldLease | undefined): Promise<"renewed" | "taken" | "gone"> {
  for (let attempt = 1; ; attempt++) {
    if (current() !== held || held.releasing === true) return "gone";
    const sentAt = c.clock.now();
    // Only an answer before the fencing deadline keeps the asset: wait no longer than that, and try again at once
    // after a failure (a request lost with a connection to a dead nats-server, a slow answer under load) instead of
    // a period later, when the deadline has passed (issue 26: one unanswered renewal used to stop the partition).
    const left = held.sentAt + c.fenceAfter - sentAt;
    if (attempt > 1 && left < RENEW_MIN_TIMEOUT_MS) return "gone";
    // Half of what is left, so an unanswered try leaves time for another.
    const timeout = Math.max(RENEW_MIN_TIMEOUT_MS, Math.min(RENEW_TIMEOUT_MS, left / 2));
    try {
      const revision = await c.store.update(key, { owner: c.self, expires_at: sentAt + c.ttl }, held.revision, timeout);
      if (current() !== held) return "gone"; // fenced meanwhile: the actor is stopped; the lease expires on its own
      held.revision = revision;
      held.sentAt = sentAt;
      return "renewed";
    } catch (e) {
      if (!(e instanceof LeaseConflictError)) {
        c.log("warn", "lease renewal failed", { mint: unit, attempt, error: e instanceof Error ? e.message : String(e) });
        if (c.stopped() || current() !== held) return "gone";
        // Unknown outcome: keep trying until the fencing deadline (a short pause: a refusal can come at once).
        await new Promise<void>((r) => c.clock.setTimeout(r, RENEW_RETRY_PAUSE_MS));
        continue;
      }
      if (current() !== held) return "gone";
      // A renewal whose reply was lost may have landed: the key then still names us, at a newer revision.
      const now = await c.store.get(key).catch(() => null);
      if (current() !== held) return "gone";
      if (now !== null && now.value.owner === c.self && now.value.expires_at > c.clock.now()) {
        held.revision = now.revision;
        held.sentAt = now.value.expires_at - c.ttl;
        return "renewed";
      }
      return "taken";
    }
  }
}
