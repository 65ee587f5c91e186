import { expect, it } from "vitest";
import { startNats } from "./support/nats.ts";
import { startPostgres } from "./support/postgres.ts";
it("harness", async () => {
  const n = await startNats();
  await n.kill(); await n.start(); await n.dispose();
  const p = await startPostgres();
  const url = await p.createDatabase();
  expect(url).toMatch(/postgresql/);
  await p.kill(); await p.start(); await p.dispose();
}, 120_000);
