/**
 * A clean stop leaves the store holding every transition JetStream acknowledged (docs/lifecycle.md, shutdown step 4),
 * even one acknowledged while the transition projector was behind, as a dwell that commits during the shutdown is.
 * The crash test caught the gap on a loaded CI machine: its final run's store lacked one such transition.
 *
 * Mechanism, not timing: PostgreSQL's `alerts` table is locked by the test, so the projector cannot store anything
 * before the shutdown reaches the projector; 690 transitions (more than its durable delivers unacknowledged) are
 * published meanwhile; the lock is released only when the shutdown reaches its projector steps. Stopping the projector "after
 * its batch in hand", as before, leaves most of them unstored.
 */
import { connect } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { loadShippedCatalog } from "../src/catalog/index.ts";
import { loadScenario } from "../src/cli/scenario-files.ts";
import { systemClock } from "../src/clock.ts";
import { openStore } from "../src/store/index.ts";
import { subjects } from "../src/streams/jetstream/topology.ts";
import { replayScenario } from "../src/streams/sources/scenario/replay.ts";
import { storedAlertIds } from "./faults/invariants.ts";
import { GIT_SHA } from "./methodology/helpers.ts";
import { startNats, type TestNats } from "./support/nats.ts";
import { waitFor } from "./support/ports.ts";
import { startPostgres, type TestPostgres } from "./support/postgres.ts";
import { TEST_SECRETS_KEY } from "./support/secrets.ts";
import { startTestService } from "./support/service.ts";

const catalog = loadShippedCatalog();
const burst = loadScenario("transition-burst");
// The burst replayed on three consecutive days: 690 real receipts, more than the projector's durable lets it hold
// unacknowledged (max_ack_pending 256). Stablecoins only: the service's own feed (mSOL) decides nothing on their subjects.
const receipts = [0, 1, 2].flatMap((day) => {
  const samples = burst.samples.map((s) => ({ ...s, ts: s.ts + day * 86_400_000 }));
  return replayScenario({ ...burst, samples, until: samples.at(-1)!.ts }, { resolve: (s) => catalog.bySymbol(s), gitSha: GIT_SHA }).receipts;
});

let nats: TestNats;
let server: TestPostgres;

beforeAll(async () => {
  nats = await startNats();
  server = await startPostgres();
}, 120_000);
afterAll(async () => {
  await nats?.dispose();
  await server?.dispose();
});

it("a clean stop stores every acknowledged transition, also those the projector had not reached", async () => {
  const url = await server.createDatabase();
  const steps: string[] = [];
  const running = await startTestService({
    nats,
    env: { DATABASE_URL: url, SECRETS_KEY: TEST_SECRETS_KEY, FEED: "scenario:msol-premium-sanity", SCENARIO_SPEED: "1" },
    io: { log: (_level, msg, fields) => void (msg === "shutdown step" && steps.push(String(fields?.["step"]))) },
  });
  const locker = new pg.Client({ connectionString: url });
  await locker.connect();
  const nc = await connect({ servers: nats.url });
  try {
    await locker.query("BEGIN");
    await locker.query("LOCK TABLE alerts IN ACCESS EXCLUSIVE MODE");
    const js = jetstream(nc);
    for (const r of receipts) await js.publish(subjects.transition(r.mint), JSON.stringify(r), { msgID: r.alert_id });
    expect(receipts.length).toBeGreaterThan(256);

    const stopping = running.stop();
    await waitFor(() => steps.includes("project the acknowledged transitions") || steps.includes("stop projectors"), 60_000, "the shutdown's projector step");
    await locker.query("COMMIT");
    await stopping;
  } finally {
    await locker.end().catch(() => {});
    await nc.close();
  }

  const store = await openStore({ kind: "postgres", url }, systemClock);
  try {
    const stored = await storedAlertIds(store);
    expect(stored.length).toBe(new Set(stored).size);
    const missing = receipts.filter((r) => !stored.includes(r.alert_id)).map((r) => r.alert_id);
    expect(missing, `${missing.length} of ${receipts.length} acknowledged transitions not stored`).toEqual([]);
  } finally {
    await store.close();
  }
}, 180_000);
