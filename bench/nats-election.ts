/**
 * How long a nats-server 2.9 cluster (deploy/nats/cluster.conf, 3 nodes, replicas 3) cannot take writes after one
 * node is SIGKILLed (issue 26 item 3): `npx tsx bench/nats-election.ts [runs]`. Each run starts a fresh cluster, a
 * stream `T` and a KV bucket `L` (both R3), kills the node leading `T` (sometimes `L` too), and from a client
 * connected to every node (it fails over) writes to each every 50 ms with a 400 ms timeout, until a write succeeds:
 * kill -> first write acknowledged, per stream, and whether its leader was the killed node. Also: kill -> an ordered
 * consumer created (needs the meta leader). Prints one JSON line per run.
 */
import { jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { connect } from "@nats-io/transport-node";
import { startNatsCluster } from "../test/support/nats-cluster.ts";
import { sleep } from "../test/support/ports.ts";

const RUNS = Number(process.argv[2] ?? "3");

async function firstSuccess(step: () => Promise<unknown>, from: number, limitMs = 30_000): Promise<number | null> {
  while (performance.now() - from < limitMs) {
    const ok = await Promise.race([step().then(() => true, () => false), sleep(400).then(() => false)]);
    if (ok) return Math.round(performance.now() - from);
    await sleep(50);
  }
  return null;
}

const leaderOf = async (jsm: JetStreamManager, stream: string) => (await jsm.streams.info(stream)).cluster?.leader ?? "?";

for (let run = 1; run <= RUNS; run++) {
  const cluster = await startNatsCluster(3);
  const nc = await connect({ servers: cluster.urls.split(","), maxReconnectAttempts: -1, reconnectTimeWait: 250 });
  try {
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: "T", subjects: ["t.>"], num_replicas: 3 });
    const kv = await new Kvm(nc).create("L", { history: 1, replicas: 3 });
    const js = jetstream(nc, { timeout: 400 });
    await js.publish("t.x", "warm");
    await kv.put("k", "warm");
    await sleep(2_000);
    const leaders = { T: await leaderOf(jsm, "T"), L: await leaderOf(jsm, "KV_L") };
    const connectedTo = nc.info?.server_name ?? "?";
    const victim = cluster.nodes.find((n) => n.name === leaders.T)!;
    const killedAt = performance.now();
    await victim.kill();
    const [t, l, consumer] = await Promise.all([
      firstSuccess(() => js.publish("t.x", "after"), killedAt),
      firstSuccess(async () => kv.update("k", "after", (await kv.get("k"))?.revision ?? 0, 400), killedAt),
      firstSuccess(async () => {
        const c = await js.consumers.get("T", { opt_start_seq: 1 });
        const m = await c.next({ expires: 1_000 });
        if (m === null) throw new Error("nothing");
        await c.delete().catch(() => {});
      }, killedAt),
    ]);
    const after = { T: await leaderOf(jsm, "T").catch(() => "?"), L: await leaderOf(jsm, "KV_L").catch(() => "?") };
    console.log(
      JSON.stringify({
        run,
        killed: victim.name,
        client_was_on: connectedTo,
        leaders_before: leaders,
        leaders_after: after,
        stream_write_ms: t,
        kv_write_ms: l,
        kv_leader_killed: leaders.L === victim.name,
        ordered_consumer_ms: consumer,
      }),
    );
  } finally {
    await nc.close();
    await cluster.dispose();
  }
}
