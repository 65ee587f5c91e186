/**
 * `GET /v1/audit/{alert_id}` in an API process (ROLE=api): a transition that is in PEG_TRANSITIONS but not projected
 * into the store yet answers 202 (addendum, audit receipt), not 404, although another process published it. Here no
 * engine runs, so nothing is ever projected until the test writes the row itself: one transition published before
 * the API process started (its WebSocket feed's back-fill) and one after (live) both answer 202, an id nobody
 * published answers 404, and once the receipt is stored the answer is 200.
 */
import { jetstream } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import { loadScenario } from "../../src/cli/scenario-files.ts";
import type { RoleService } from "../../src/cli/service.ts";
import type { Receipt } from "../../src/methodology/index.ts";
import { replayScenario } from "../../src/streams/sources/scenario/replay.ts";
import { ensureTopology, RecentAlertIds, subjects } from "../../src/streams/jetstream/index.ts";
import { startNats, type TestNats } from "../support/nats.ts";
import { waitFor } from "../support/ports.ts";
import { startTestRoleService, type TestService } from "../support/service.ts";

const catalog = loadShippedCatalog();

let nats: TestNats;
let nc: NatsConnection;
let running: TestService<RoleService>;
let service: RoleService;
let base: string;
let receipts: readonly Receipt[];
const seqs = new Map<string, number>();

async function publish(r: Receipt): Promise<void> {
  const ack = await jetstream(nc).publish(subjects.transition(r.mint), JSON.stringify(r), { msgID: r.alert_id });
  seqs.set(r.alert_id, ack.seq);
}

beforeAll(async () => {
  receipts = replayScenario(loadScenario("usdc-march-2023"), {
    resolve: (symbol) => {
      const a = catalog.bySymbol(symbol);
      return a !== undefined && a.active ? a : undefined;
    },
    gitSha: "",
  }).receipts;
  expect(receipts.length).toBeGreaterThanOrEqual(2);
  nats = await startNats();
  nc = await connect({ servers: nats.url });
  await ensureTopology(nc);
  await publish(receipts[0]!); // before the API process starts: its feed's back-fill reads it
  running = await startTestRoleService({ env: { ROLE: "api" }, nats, catalog, prefix: "peg-audit-pending-" });
  ({ service, base } = running);
  expect(service.api).not.toBeNull();
}, 60_000);

afterAll(async () => {
  await running?.stop();
  await nc?.close();
  await nats?.dispose();
});

describe("GET /v1/audit/{alert_id} in ROLE=api", () => {
  it("answers 202 for a transition in the stream that is not projected yet, 404 for an unknown id, 200 once stored", async () => {
    const [before, after] = [receipts[0]!, receipts[1]!];
    await publish(after); // live, while the API process follows the stream
    const status = async (id: string) => (await fetch(`${base}/v1/audit/${id}`)).status;
    await waitFor(async () => (await status(after.alert_id)) === 202, 10_000, "202 for the live transition");

    for (const r of [before, after]) {
      const res = await fetch(`${base}/v1/audit/${r.alert_id.toUpperCase()}`);
      expect(res.status, r.alert_id).toBe(202);
      expect(res.headers.get("retry-after")).toMatch(/^\d+$/);
      expect(await res.json()).toEqual({ id: r.alert_id, evidence_status: "pending" });
    }
    expect(await status("00000000-0000-4000-8000-000000000000")).toBe(404);

    // The projector (an engine's) stores the receipt: the store answers from then on.
    const asset = catalog.byMint(before.mint)!;
    await service.store.insertTransition(before, { seq: seqs.get(before.alert_id)!, monitoringOnly: asset.monitoringOnly, calibration: asset.calibration });
    const res = await fetch(`${base}/v1/audit/${before.alert_id}`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ id: before.alert_id });
    expect(await status(after.alert_id)).toBe(202);
  }, 30_000);
});

describe("RecentAlertIds", () => {
  it("keeps the most recent ids up to its capacity, case-insensitively", () => {
    const ids = new RecentAlertIds(3);
    for (const id of ["A", "b", "c"]) ids.add(id);
    ids.add("a"); // seen again: the most recent now
    ids.add("d"); // evicts the oldest, b
    expect(["a", "b", "c", "d"].map((id) => ids.has(id))).toEqual([true, false, true, true]);
    expect(ids.has("D")).toBe(true);
    expect(ids.size).toBe(3);
    expect(() => new RecentAlertIds(0)).toThrow(RangeError);
  });
});
