import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { connect as tcpConnect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstreamManager, StorageType } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { fileURLToPath } from "node:url";
import { freePort, sleep, waitFor } from "./ports.ts";

/** The nodes' configuration file (deploy/README.md); a node's own values come from its environment. */
const CLUSTER_CONF = fileURLToPath(new URL("../../deploy/nats/cluster.conf", import.meta.url));

/** One node of a test cluster. */
export interface ClusterNode {
  readonly name: string;
  readonly port: number;
  readonly url: string;
  /** The server's log file (deleted with the cluster; copy it for a post-mortem). */
  readonly logFile: string;
  /** SIGKILL, as a crash; the store is kept. */
  kill(): Promise<void>;
  /** Starts again on the same ports and store. */
  start(): Promise<void>;
  readonly running: boolean;
}

/** A nats-server cluster with JetStream on loopback that a test started itself (own ports, temporary stores). */
export interface TestNatsCluster {
  readonly nodes: readonly ClusterNode[];
  /** Every node's client URL, comma-separated (a NATS_URL). */
  readonly urls: string;
  /** Stops every node and deletes the stores. */
  dispose(): Promise<void>;
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = tcpConnect(port, "127.0.0.1");
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });
}

/**
 * Starts `size` nats-servers (3, the size of deploy/nats/cluster.conf's routes) as one cluster with JetStream, each
 * running deploy/nats/cluster.conf with its environment (name, client and cluster ports, store, routes to every node);
 * resolves once the JetStream meta group has a leader (a client can read account info through any node).
 */
export async function startNatsCluster(size = 3): Promise<TestNatsCluster> {
  if (size !== 3) throw new RangeError("deploy/nats/cluster.conf routes three nodes");
  const root = mkdtempSync(join(tmpdir(), "peg-nats-cluster-"));
  const ports = await Promise.all(Array.from({ length: size }, async () => ({ client: await freePort(), cluster: await freePort() })));
  const nodes: (ClusterNode & { proc: ChildProcess | null })[] = [];
  for (let i = 0; i < size; i++) {
    const name = `n${i + 1}`;
    const store = join(root, name);
    mkdirSync(store, { recursive: true });
    // deploy/nats/cluster.conf, the file production nodes run, with this node's environment (as its env file sets).
    const nodeEnv = {
      NATS_SERVER_NAME: name,
      NATS_LISTEN: `127.0.0.1:${ports[i]!.client}`,
      NATS_STORE_DIR: store,
      NATS_MAX_FILE_STORE: "2GB",
      NATS_CLUSTER_LISTEN: `127.0.0.1:${ports[i]!.cluster}`,
      ...Object.fromEntries(ports.map((p, j) => [`NATS_ROUTE_${j + 1}`, `nats-route://127.0.0.1:${p.cluster}`])),
    };
    const port = ports[i]!.client;
    const logFile = join(root, `${name}.log`);
    const node = {
      name,
      port,
      url: `nats://127.0.0.1:${port}`,
      logFile,
      proc: null as ChildProcess | null,
      get running() {
        return node.proc !== null && node.proc.exitCode === null;
      },
      start: async () => {
        const p = spawn("nats-server", ["-c", CLUSTER_CONF, "-l", logFile], { stdio: ["ignore", "ignore", "pipe"], env: { PATH: process.env["PATH"] ?? "", ...nodeEnv } });
        let stderr = "";
        p.stderr?.on("data", (c: Buffer) => (stderr = (stderr + c.toString()).slice(-4000)));
        node.proc = p;
        const exited = new Promise<never>((_, reject) => p.once("exit", (code) => reject(new Error(`nats-server ${name} exited with ${code}: ${stderr}`))));
        exited.catch(() => {});
        await Promise.race([waitFor(() => portOpen(port), 15_000, `nats-server ${name} on ${port}`), exited]);
      },
      kill: async () => {
        const p = node.proc;
        if (p === null || p.exitCode !== null) return;
        const done = new Promise<void>((r) => p.once("exit", () => r()));
        p.kill("SIGKILL");
        await done;
        node.proc = null;
        await waitFor(async () => !(await portOpen(port)), 10_000, `nats-server ${name} port to close`);
      },
    };
    nodes.push(node);
  }
  await Promise.all(nodes.map((n) => n.start()));
  const urls = nodes.map((n) => n.url).join(",");
  // JetStream in a cluster answers only once the meta group elected a leader.
  const nc = await connect({ servers: nodes.map((n) => n.url) });
  try {
    const jsm = await jetstreamManager(nc, { checkAPI: false });
    await waitFor(
      async () => {
        await jsm.getAccountInfo();
        return true;
      },
      30_000,
      "the JetStream meta leader",
    );
    // And until every node is a current peer of the meta group: before, a stream with a replica on each node cannot be
    // placed ("no suitable peers for placement": live-feed-node-loss's first stream, in a CI run under load).
    const probe = { name: "CLUSTER_READY_PROBE", subjects: ["cluster.ready.probe"], num_replicas: nodes.length, storage: StorageType.Memory };
    await waitFor(
      async () => {
        await jsm.streams.add(probe);
        await jsm.streams.delete(probe.name);
        return true;
      },
      30_000,
      `a stream with a replica on each of the ${nodes.length} nodes`,
      200,
    );
  } finally {
    await nc.close();
  }
  await sleep(200);
  return {
    nodes,
    urls,
    dispose: async () => {
      await Promise.all(nodes.map((n) => n.kill()));
      rmSync(root, { recursive: true, force: true });
    },
  };
}
