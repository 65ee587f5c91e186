import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { SimulatedClock } from "../../src/clock.ts";
import { openKeyRing } from "../../src/delivery/index.ts";
import { metaRoutes } from "../../src/http/routes/meta.ts";
import { WebhookKeys } from "../../src/http/schemas/meta.ts";
import { loadSigningKeys, openStore } from "../../src/store/index.ts";
import { fakeReadModel, NOW } from "../http/fixtures.ts";

const dir = mkdtempSync(join(tmpdir(), "key-ring-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("webhook signing key ring", () => {
  it("creates one active key on a fresh store, keeps the same kid across a restart, and the route lists it", async () => {
    const clock = new SimulatedClock(NOW);
    const first = await openStore({ kind: "pglite", dataDir: join(dir, "pg") }, clock);
    const ring = await openKeyRing(first.db, NOW);
    const kid = ring.active().kid;
    expect(await loadSigningKeys(first.db)).toHaveLength(1);
    await first.close();

    const second = await openStore({ kind: "pglite", dataDir: join(dir, "pg") }, clock);
    const again = await openKeyRing(second.db, NOW + 60_000);
    expect(again.active().kid).toBe(kid);
    expect(await loadSigningKeys(second.db)).toHaveLength(1);

    const route = metaRoutes(fakeReadModel(), { webhookKeys: (now) => again.publicList(now) }).find((r) => r.path === "/v1/meta/webhook-keys")!;
    const answer = (await route.handler({} as never)) as { status: number; json: unknown };
    expect(answer.status).toBe(200);
    expect(WebhookKeys.parse(answer.json)).toEqual({
      keys: [{ kid, alg: "Ed25519", public_key: again.active().public_key, created_at: new Date(NOW).toISOString(), status: "active" }],
    });

    // A rotation persists: the old key stays listed as retiring, a restart signs with the new one.
    await again.rotate(NOW + 120_000);
    const newKid = again.active().kid;
    expect(newKid).not.toBe(kid);
    const third = await openKeyRing(second.db, NOW + 180_000);
    expect(third.active().kid).toBe(newKid);
    expect(third.publicList(NOW + 180_000).keys.map((k) => [k.kid, k.status])).toEqual([
      [newKid, "active"],
      [kid, "retiring"],
    ]);
    await second.close();
  });
});
