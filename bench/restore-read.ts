/**
 * How long a take-over reads the states of the assets it acquires (issue 26 item 3: kill -> restored):
 * `npm run bench:restore-read -- [assets] [moved]`. A fresh nats-server, `ensureTopology`, a real actor snapshot
 * for every asset in `peg_actors`; then the states of `moved` assets (a failover's share) are read two ways: asset by
 * asset (a KV get and a last-by-subject get each, 32 assets at a time, as `startPartition` did before `RestoreReads`),
 * and in one `readRecovery` pass over each stream's last messages (what `RestoreReads` does for a large batch).
 * Prints one JSON line.
 */
import { jetstream } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { ActorHost, assetStateToJSON } from "../src/actors/index.ts";
import { SimulatedClock } from "../src/clock.ts";
import { D, type Sample } from "../src/methodology/index.ts";
import { ensureTopology, readRecovery, subjects } from "../src/streams/jetstream/index.ts";
import { limiter } from "../src/streams/jetstream/limiter.ts";
import { startNats } from "../test/support/nats.ts";
import { syntheticCatalog } from "./synthetic.ts";

const ASSETS = Number(process.argv[2] ?? "10000");
const MOVED = Number(process.argv[3] ?? "3300");

const nats = await startNats();
const nc = await connect({ servers: nats.url });
try {
  const topology = await ensureTopology(nc);
  const js = jetstream(nc);
  const catalog = syntheticCatalog(ASSETS);
  const assets = catalog.active;
  // Real states: every asset evaluated twice by an actor host, its snapshot put as the engine link does.
  const T0 = Date.parse("2026-06-01T00:00:00Z");
  const clock = new SimulatedClock(T0);
  const host = new ActorHost({ assets, clock, gitSha: "" });
  for (const k of [1, 2]) {
    clock.set(T0 + k * 1_000);
    for (const a of assets) {
      const s: Sample = { asset: a.symbol, ts: clock.now(), intrinsic_usd: new D(1), market_usd: new D("0.9993"), intrinsic_sol: null, market_sol: null, cr: null, oracle: {}, intrinsic_stale: false };
      host.ingest(s, clock.now());
    }
  }
  const puts: Promise<unknown>[] = [];
  for (const a of assets) puts.push(js.publish(subjects.actorSnapshot(a.mint), JSON.stringify(assetStateToJSON(host.engineState(a.mint)!))));
  await Promise.all(puts);
  host.stop();
  const moved = assets.slice(0, MOVED);

  const time = async <T>(f: () => Promise<T>): Promise<[number, T]> => {
    const t = performance.now();
    const r = await f();
    return [Math.round(performance.now() - t), r];
  };
  const perAsset = limiter(32);
  const [perAssetMs, perAssetStates] = await time(() => Promise.all(moved.map((a) => perAsset.run(() => readRecovery([a], topology))).map((p) => p.then((r) => r.states.size))));
  const [bulkMs, bulk] = await time(() => readRecovery(moved, topology));
  console.log(
    JSON.stringify({
      assets: ASSETS,
      moved: MOVED,
      snapshot_bytes: JSON.stringify(assetStateToJSON(bulk.states.get(moved[0]!.mint)!.state)).length,
      per_asset_ms: perAssetMs,
      per_asset_restored: perAssetStates.reduce((x, y) => x + y, 0),
      bulk_ms: bulkMs,
      bulk_restored: bulk.states.size,
    }),
  );
} finally {
  await nc.close();
  await nats.dispose();
}
