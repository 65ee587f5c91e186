/**
 * Webhook signing-key administration over NATS (issue 6), so an operator rotates the key of a running deployment
 * without a restart and without a second process opening the database (an embedded PGlite has one owner):
 *
 * - `peg.admin.webhook-keys.rotate` (request/reply, queue group `webhook-key-admin`, so exactly one process of the
 *   deployment handles a request): rotates the stored set under its lock and replies `{ok: true, kid, keys}` (the
 *   public list) or `{ok: false, error}`;
 * - `peg.admin.webhook-keys.changed` (published after a rotation): every process re-reads the stored set, so all
 *   of them sign with the new key at once and list the old one as retiring. A periodic re-read covers a missed
 *   notice (and a rotation done while a process was away).
 *
 * `peg-oracle webhook-keys rotate` (src/cli/webhook-keys.ts) is the client.
 */
import type { NatsConnection } from "@nats-io/transport-node";
import type { EpochMs } from "../methodology/index.ts";
import type { DispatchLog } from "./dispatcher.ts";
import type { KeyRing } from "./key-ring.ts";
import type { WebhookKeyWire } from "./signing-keys.ts";

export const KEY_ADMIN_SUBJECTS = {
  rotate: "peg.admin.webhook-keys.rotate",
  changed: "peg.admin.webhook-keys.changed",
} as const;

export type RotateReply = { readonly ok: true; readonly kid: string; readonly keys: readonly WebhookKeyWire[] } | { readonly ok: false; readonly error: string };

export interface KeyAdmin {
  stop(): Promise<void>;
}

export function serveKeyAdmin(nc: NatsConnection, ring: KeyRing, now: () => EpochMs, opts: { log?: DispatchLog; refreshEveryMs?: number } = {}): KeyAdmin {
  const refresh = (why: string): Promise<void> =>
    ring.refresh(now()).then(
      (changed) => {
        if (changed) opts.log?.("info", "webhook signing keys reloaded", { why, kid: ring.active().kid });
      },
      (e: unknown) => opts.log?.("warn", "webhook signing keys could not be reloaded", { why, error: e instanceof Error ? e.message : String(e) }),
    );
  const rotations = nc.subscribe(KEY_ADMIN_SUBJECTS.rotate, {
    queue: "webhook-key-admin",
    callback: (err, msg) => {
      if (err !== null) return;
      void ring.rotate(now()).then(
        (kid) => {
          opts.log?.("info", "webhook signing key rotated", { kid });
          const reply: RotateReply = { ok: true, kid, keys: ring.publicList(now()).keys };
          msg.respond(JSON.stringify(reply));
          nc.publish(KEY_ADMIN_SUBJECTS.changed, JSON.stringify({ kid }));
        },
        (e: unknown) => {
          const reply: RotateReply = { ok: false, error: e instanceof Error ? e.message : String(e) };
          msg.respond(JSON.stringify(reply));
        },
      );
    },
  });
  const notices = nc.subscribe(KEY_ADMIN_SUBJECTS.changed, {
    callback: (err) => {
      if (err === null) void refresh("rotation notice");
    },
  });
  const timer = setInterval(() => void refresh("periodic"), opts.refreshEveryMs ?? 60_000);
  timer.unref();
  return {
    stop: async () => {
      clearInterval(timer);
      rotations.unsubscribe();
      notices.unsubscribe();
      await Promise.resolve();
    },
  };
}

/** Asks the deployment to rotate; the reply, or an error when no process answered within `timeoutMs`. */
export async function requestRotation(nc: NatsConnection, timeoutMs = 10_000): Promise<RotateReply> {
  const reply = await nc.request(KEY_ADMIN_SUBJECTS.rotate, "", { timeout: timeoutMs });
  return reply.json<RotateReply>();
}
