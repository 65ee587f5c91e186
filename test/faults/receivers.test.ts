/**
 * Webhook receivers that misbehave (issue 8): one USDC webhook per way of failing an event's first attempts: no
 * answer within the 5 s budget, 500, 503, 429 with `Retry-After`, a redirect (never followed), plus one that answers
 * at once. Each event still reaches each receiver with its original event id, and the service stays ready
 * throughout: a receiver's failure is not the service's.
 */
import { expect, it } from "vitest";
import { faultSuite } from "./fault-run.ts";
import { HOOK_PATHS } from "./harness.ts";

const suite = faultSuite("rx");

it("delivers every event through timeouts, 5xx, 429 and redirects, and stays ready", async () => {
  await suite.run({
    name: "receivers",
    hookPaths: Object.values(HOOK_PATHS),
    inject: async () => [],
  });
  // The failures really happened: each misbehaving path failed each of its events as many times as it was told to.
  for (const [path, n] of [[HOOK_PATHS.timeout, 1], [HOOK_PATHS.status500, 2], [HOOK_PATHS.status503, 2], [HOOK_PATHS.tooMany, 2], [HOOK_PATHS.redirect, 2]] as const) {
    const events = new Map<string, number>();
    for (const r of suite.rx.received.filter((x) => x.path === path)) events.set(r.eventId!, (events.get(r.eventId!) ?? 0) + 1);
    expect(events.size, path).toBeGreaterThan(0);
    for (const [id, count] of events) expect(count, `${path} ${id}: failed attempts + the accepted one`).toBeGreaterThanOrEqual(n + 1);
  }
}, 400_000);
