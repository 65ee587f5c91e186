/**
 * Crash test (issue 3): the real service, as a child process, replays a burst of transitions fast and is killed
 * with SIGKILL at random points, then restarted, until the scenario completes. Afterwards, on PostgreSQL and on
 * PGlite: every transition JetStream acknowledged is in the store exactly once, the acknowledged history is exactly
 * the uninterrupted offline replay (so no transition was lost, duplicated or invented, and every dwell committed at
 * its own deadline), and every stored receipt verifies.
 *
 * The offline replay is settled (run past the last sample, as the fault suite's): `serve` shuts down when its feed
 * ends, and its actors run until the shutdown stops them, so the dwells still pending at the last sample (six, due
 * 15-105 scenario seconds later: 0.4-2.6 s at speed 40) commit for as long as the shutdown takes. None did on an idle
 * machine; at a load of 27, one in one run and all six in another (2026-11-27). So the acknowledged history must be the replay up to the last
 * sample, exactly, followed by the first of those pending commits in time order (none to all six), nothing else.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import { loadScenario } from "../../src/cli/scenario-files.ts";
import { rank, replayBundle, verifyBundle } from "../../src/methodology/index.ts";
import { systemClock } from "../../src/clock.ts";
import { replayScenario } from "../../src/streams/sources/scenario/replay.ts";
import { openStore } from "../../src/store/index.ts";
import { GIT_SHA } from "../methodology/helpers.ts";
import { startNats, type TestNats } from "../support/nats.ts";
import { startPostgres, type TestPostgres } from "../support/postgres.ts";
import { freePort } from "../support/ports.ts";
import { TEST_SECRETS_KEY } from "../support/secrets.ts";
import { spawnServe, type ServeProcess } from "../support/serve.ts";
import { FAULT_RESULTS_DIR } from "./fault-run.ts";
import { jetStreamTransitions, storedAlertIds } from "./invariants.ts";

const SCENARIO = "transition-burst";
const SPEED = "40";
const KILLS = 3;

const catalog = loadShippedCatalog();
const scenario = loadScenario(SCENARIO);
const lastSampleAt = scenario.samples.at(-1)!.ts;
const settled = replayScenario(
  { ...scenario, until: lastSampleAt + 86_400_000 },
  { resolve: (s) => catalog.bySymbol(s), gitSha: GIT_SHA },
).receipts;
const pendingAtEnd = settled.filter((r) => Date.parse(r.detected_at) > lastSampleAt).length;

// Receipts are compared hash for hash with the replay: the service runs with this GIT_SHA, not the checkout's HEAD.
const serve = (env: Record<string, string>): ServeProcess => spawnServe({ FEED: `scenario:${SCENARIO}`, SCENARIO_SPEED: SPEED, GIT_SHA, ...env });

/** The end of a run's stderr without the lines one retry loop repeats every 0.5 s (a hang's log was nothing else). */
function digest(stderr: string): string {
  const repeated = (l: string) => l.includes("cannot re-create the transitions consumer");
  const lines = stderr.split("\n");
  return `${lines.filter((l) => !repeated(l)).join("\n").slice(-4000)}\n(${lines.filter(repeated).length} "cannot re-create the transitions consumer" lines left out)`;
}

describe.each(["postgres", "pglite"] as const)("kill -9 during a burst of transitions (%s)", (backend) => {
  let nats: TestNats;
  let pg: TestPostgres | null = null;
  let env: Record<string, string>;
  let dataDir: string;

  beforeAll(async () => {
    nats = await startNats();
    dataDir = mkdtempSync(join(tmpdir(), "peg-crash-"));
    env = { NATS_URL: nats.url, DATA_DIR: dataDir, PORT: String(await freePort()) };
    if (backend === "postgres") {
      pg = await startPostgres();
      env["DATABASE_URL"] = await pg.createDatabase();
      env["SECRETS_KEY"] = TEST_SECRETS_KEY;
    }
  });

  afterAll(async () => {
    await nats?.dispose();
    await pg?.dispose();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("loses, duplicates and invents nothing, and every dwell commits at its deadline", async () => {
    const logs: string[] = [];
    // Every run's whole stderr, for a failure's diagnosis (an assertion shows only the end of the last one).
    const keep = (run: number, p: ServeProcess) => {
      mkdirSync(FAULT_RESULTS_DIR, { recursive: true });
      writeFileSync(join(FAULT_RESULTS_DIR, `crash-${backend}-run-${run}.log`), p.stderr());
    };
    for (let k = 0; k < KILLS; k++) {
      const run = serve(env);
      await run.started();
      // Kill at a random point while transitions are being decided and published.
      await new Promise((r) => setTimeout(r, 3_000 + Math.random() * 9_000));
      run.proc.kill("SIGKILL");
      await run.exited;
      logs.push(run.stderr());
      keep(k + 1, run);
    }
    // Last run: to the end of the scenario; the service shuts down by itself.
    const last = serve(env);
    const code = await Promise.race([
      last.exited,
      new Promise<number>((_, reject) => setTimeout(() => reject(new Error(`the final run did not finish: ${digest(last.stderr())}`)), 180_000)),
    ]).finally(() => keep(KILLS + 1, last));
    expect(code, last.stderr().slice(-3000)).toBe(0);

    const acked = await jetStreamTransitions(nats.url);
    const ackedIds = acked.map((r) => r.alert_id);
    expect(new Set(ackedIds).size, "no alert id twice in JetStream").toBe(ackedIds.length);

    // Exactly the uninterrupted history: nothing lost, duplicated or invented; identical receipts. Up to the last
    // sample all of it; after it, the pending dwells that committed before the shutdown stopped the actors, which
    // are the earliest of them: every one due before the last acknowledged one.
    const ackedUntil = Math.max(lastSampleAt, ...acked.map((r) => Date.parse(r.detected_at)));
    const expected = settled.filter((r) => Date.parse(r.detected_at) <= ackedUntil);
    const byId = new Map(expected.map((r) => [r.alert_id, r]));
    expect([...ackedIds].sort()).toEqual([...byId.keys()].sort());
    for (const r of acked) {
      const want = byId.get(r.alert_id)!;
      // On a mismatch, show exactly which frozen inputs or verdict members differ.
      if (r.receipt_sha256 !== want.receipt_sha256) {
        const diff = (a: Record<string, unknown>, b: Record<string, unknown>) =>
          Object.keys({ ...a, ...b }).filter((k) => JSON.stringify(a[k]) !== JSON.stringify(b[k])).map((k) => `${k}: ${JSON.stringify(a[k])} vs ${JSON.stringify(b[k])}`);
        expect.fail(`${r.alert_id} differs: ${[...diff({ ...r.inputs_frozen }, { ...want.inputs_frozen }), ...diff({ ...r.computed }, { ...want.computed })].join("; ")}`);
      }
    }

    // Chains per asset in stream order, and dwell timing from the receipts themselves.
    const lastTo = new Map<string, string>();
    for (const r of acked) {
      expect(r.from_state, `${r.asset} continuity`).toBe(lastTo.get(r.asset) ?? "PEGGED");
      lastTo.set(r.asset, r.to_state);
      const i = r.inputs_frozen;
      if (r.computed.band !== i.previous_band) {
        const needed = rank(r.computed.band) > rank(i.previous_band) ? i.confirm_up_secs : i.decay_down_secs;
        const elapsed = Date.parse(i.now) - Date.parse(i.candidate_since!);
        if (i.trigger === "dwell_timer") expect(elapsed, `${r.alert_id} commits at its deadline`).toBe(needed * 1000);
        else expect(elapsed).toBeGreaterThanOrEqual(needed * 1000);
      }
      expect(verifyBundle(JSON.parse(JSON.stringify(replayBundle(r)))).exit).toBe(0);
    }

    // Every acknowledged transition is in the store exactly once.
    const store = await openStore(
      backend === "postgres" ? { kind: "postgres", url: env["DATABASE_URL"]! } : { kind: "pglite", dataDir: join(dataDir, "pg") },
      systemClock,
    );
    try {
      const ids = await storedAlertIds(store);
      expect(ids.length).toBe(new Set(ids).size);
      expect([...ids].sort()).toEqual([...ackedIds].sort());
      const sample = await store.receiptById(ackedIds[0]!);
      expect(sample?.receipt_sha256).toBe(acked[0]!.receipt_sha256);
    } finally {
      await store.close();
    }
    const afterEnd = expected.length - (settled.length - pendingAtEnd);
    console.info(`[crash] ${backend}: ${acked.length} transitions, as replayed; ${afterEnd} of the ${pendingAtEnd} dwells pending at the last sample committed during the shutdown`);
  }, 600_000);
});
