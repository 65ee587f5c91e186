import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { SimulatedClock } from "../../src/clock.ts";
import { openKeyRing } from "../../src/delivery/index.ts";
import { metaRoutes } from "../../src/http/routes/meta.ts";
import { WebhookKeys } from "../../src/http/schemas/meta.ts";
import { loadSigningKeys, openStore, type Store } from "../../src/store/index.ts";
import { fakeReadModel, NOW } from "../http/fixtures.ts";
import { startPostgres, type TestPostgres } from "../support/postgres.ts";
import { testSecretBox } from "../support/secrets.ts";

const box = testSecretBox();

const dir = mkdtempSync(join(tmpdir(), "key-ring-"));
let pg: TestPostgres | null = null;
afterAll(async () => {
  await pg?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

describe("webhook signing key ring", () => {
  it("creates one active key on a fresh store, keeps the same kid across a restart, and the route lists it", async () => {
    const clock = new SimulatedClock(NOW);
    const first = await openStore({ kind: "pglite", dataDir: join(dir, "pg") }, clock);
    const ring = await openKeyRing(first.db, NOW, box);
    const kid = ring.active().kid;
    expect(await loadSigningKeys(first.db)).toHaveLength(1);
    await first.close();

    const second = await openStore({ kind: "pglite", dataDir: join(dir, "pg") }, clock);
    const again = await openKeyRing(second.db, NOW + 60_000, box);
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
    const third = await openKeyRing(second.db, NOW + 180_000, box);
    expect(third.active().kid).toBe(newKid);
    expect(third.publicList(NOW + 180_000).keys.map((k) => [k.kid, k.status])).toEqual([
      [newKid, "active"],
      [kid, "retiring"],
    ]);
    await second.close();
    // A hang guard, not a speed check: two PGlite starts, CPU-bound; 29.9 s under the parallel suite in a passing CI
    // run of d216292, over vitest's 30 s in the next one (44bc413).
  }, 120_000);
});

describe("several processes on one database (PostgreSQL: one store per process)", () => {
  let stores: Store[] = [];
  afterAll(async () => {
    for (const s of stores) await s.close();
  });

  it("processes starting at once on an empty database all sign with one key", async () => {
    pg = await startPostgres();
    const url = await pg.createDatabase();
    const clock = new SimulatedClock(NOW);
    stores = await Promise.all(Array.from({ length: 4 }, () => openStore({ kind: "postgres", url }, clock)));
    const rings = await Promise.all(stores.map((s) => openKeyRing(s.db, NOW, box)));
    expect(new Set(rings.map((r) => r.active().kid)).size).toBe(1);
    const stored = await loadSigningKeys(stores[0]!.db);
    expect(stored.map((k) => k.status)).toEqual(["active"]);
    expect(stored[0]!.kid).toBe(rings[0]!.active().kid);
  });

  it("concurrent rotations leave one active key, every earlier one retiring, and a refresh adopts the stored set", async () => {
    const rings = await Promise.all(stores.map((s) => openKeyRing(s.db, NOW, box)));
    const first = rings[0]!.active().kid;
    const kids = await Promise.all(rings.map((r, i) => r.rotate(NOW + 60_000 + i)));
    const stored = await loadSigningKeys(stores[0]!.db);
    const active = stored.filter((k) => k.status === "active");
    expect(active).toHaveLength(1);
    // Each rotation started from the set the previous one stored: nothing was lost, every key but one is retiring.
    expect(stored).toHaveLength(kids.length + 1);
    expect(new Set(stored.map((k) => k.kid))).toEqual(new Set([first, ...kids]));
    expect(kids).toContain(active[0]!.kid);
    for (const r of rings) await r.refresh(NOW + 120_000);
    expect(new Set(rings.map((r) => r.active().kid))).toEqual(new Set([active[0]!.kid]));
    expect(rings.every((r) => r.publicList(NOW + 120_000).keys.length === kids.length + 1)).toBe(true);
  });
});

describe("one embedded database", () => {
  it("concurrent first opens in one process create one key", async () => {
    const store = await openStore({ kind: "pglite-memory" }, new SimulatedClock(NOW));
    try {
      const rings = await Promise.all(Array.from({ length: 5 }, () => openKeyRing(store.db, NOW, box)));
      expect(new Set(rings.map((r) => r.active().kid)).size).toBe(1);
      expect(await loadSigningKeys(store.db)).toHaveLength(1);
    } finally {
      await store.close();
    }
  });
});
