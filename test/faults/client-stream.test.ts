/**
 * Issue 17: a `PegStream` consumer (`@peg-oracle/client`) stays connected while the service, a child process
 * replaying a burst of transitions, is killed with SIGKILL at random points and restarted; afterwards the
 * transitions the stream delivered are exactly those of `PEG_TRANSITIONS`: each once, in stream order, none missing.
 *
 * After each restart the client's own network stays cut until the restarted service has published more transitions,
 * so those reach it only through the resume (`since_seq`).
 *
 * The scenario is `transition-burst` with six calm scenario minutes appended (every asset back at par), so its last
 * transitions (the returns to PEGGED) are published well before the final run ends the scenario and shuts down: a
 * shutdown closes the HTTP server first, and a transition decided in its last instant could not reach any client.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { PegStream, type TransitionMessage } from "@peg-oracle/client";
import { SCENARIO_DIR } from "../../src/cli/scenario-files.ts";
import { startNats, type TestNats } from "../support/nats.ts";
import { freePort, sleep, waitFor } from "../support/ports.ts";
import { spawnServe, type ServeProcess } from "../support/serve.ts";

const SPEED = "40";
const KILLS = 3;

/** transition-burst plus six minutes of every asset at par, as a scenario file of its own. */
function writeScenario(dir: string): string {
  const text = readFileSync(join(SCENARIO_DIR, "transition-burst.jsonl"), "utf8");
  const samples = text.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as { ts: string; asset: string });
  const assets = [...new Set(samples.map((s) => s.asset))];
  const last = Date.parse(samples.at(-1)!.ts);
  const tail: string[] = [];
  for (let t = last + 5_000; t <= last + 6 * 60_000; t += 5_000) {
    for (const asset of assets) tail.push(JSON.stringify({ ts: new Date(t).toISOString(), asset, intrinsic_usd: "1", market_usd: "1.0000" }));
  }
  const path = join(dir, "transition-burst-calm.jsonl");
  writeFileSync(path, `${text.trimEnd()}\n# a calm tail: every asset at par for six minutes\n${tail.join("\n")}\n`);
  return path;
}

interface Stored {
  readonly seq: number;
  readonly alert_id: string;
  /** When JetStream stored it (epoch ms). */
  readonly at: number;
}

async function peggedTransitions(natsUrl: string): Promise<Stored[]> {
  const nc = await connect({ servers: natsUrl });
  try {
    const jsm = await jetstreamManager(nc);
    const info = await jsm.streams.info("PEG_TRANSITIONS");
    const out: Stored[] = [];
    for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
      const m = await jsm.streams.getMessage("PEG_TRANSITIONS", { seq });
      if (m !== null) out.push({ seq: m.seq, alert_id: m.json<{ alert_id: string }>().alert_id, at: m.time.getTime() });
    }
    return out;
  } finally {
    await nc.close();
  }
}

let nats: TestNats;
let dataDir: string;
const runs: ServeProcess[] = [];

beforeAll(async () => {
  nats = await startNats();
  dataDir = mkdtempSync(join(tmpdir(), "peg-client-stream-"));
});

afterAll(async () => {
  for (const r of runs) if (r.proc.exitCode === null && r.proc.signalCode === null) r.proc.kill("SIGKILL");
  await Promise.all(runs.map((r) => r.exited));
  await nats?.dispose();
  rmSync(dataDir, { recursive: true, force: true });
});

describe("PegStream through kill -9 and restarts of the service", () => {
  it("stays connected and delivers every transition of PEG_TRANSITIONS once, in order", async () => {
    const port = await freePort();
    const env = { FEED: `scenario:${writeScenario(dataDir)}`, SCENARIO_SPEED: SPEED, NATS_URL: nats.url, DATA_DIR: dataDir, PORT: String(port), HOST: "127.0.0.1" };
    const serve = (): ServeProcess => {
      const r = spawnServe(env, { name: `service-${runs.length + 1}` });
      runs.push(r);
      return r;
    };

    let run = serve();
    await run.started();
    // While `cut`, the client's network is down: its connection attempts go nowhere. Each restart keeps it cut for a
    // few seconds of the restarted service publishing, so what it missed can only come back through since_seq.
    let cut = false;
    class ClientNetwork extends WebSocket {
      constructor(url: string) {
        super(cut ? "ws://127.0.0.1:1/v1/ws" : url);
      }
    }
    const stream = new PegStream({ url: `http://127.0.0.1:${port}`, assets: ["*"], sinceSeq: 0, WebSocket: ClientNetwork, backoff: { initialMs: 300, maxMs: 2_000 } });
    const delivered: TransitionMessage[] = [];
    /** Periods without a connection: from the first disconnect to the next open (failed attempts in between). */
    const disconnected: { from: number; to: number | null }[] = [];
    stream.on("transition", (t) => delivered.push(t));
    stream.on("disconnect", () => {
      if (disconnected.at(-1)?.to !== null) disconnected.push({ from: Date.now(), to: null });
    });
    stream.on("status", (s) => {
      const open = disconnected.at(-1);
      if (s.status === "open" && open !== undefined && open.to === null) open.to = Date.now();
    });
    let fatal: unknown = null;
    void stream.closed().then((e) => (fatal = e ?? "closed"));
    await waitFor(() => stream.status === "open", 10_000, "the stream to connect");

    for (let k = 0; k < KILLS; k++) {
      // Kill while transitions are being decided and streamed.
      const before = delivered.length;
      await waitFor(() => delivered.length > before, 60_000, "a transition before the kill");
      await sleep(1_000 + Math.random() * 6_000);
      cut = true;
      run.proc.kill("SIGKILL");
      await run.exited;
      run = serve();
      await run.started();
      const published = (await peggedTransitions(nats.url)).length;
      await waitFor(async () => (await peggedTransitions(nats.url)).length > published, 30_000, "transitions while the client is cut off");
      cut = false;
      await waitFor(() => stream.status === "open", 20_000, `the stream to reconnect after kill ${k + 1}`);
    }

    // The last run plays the scenario to its end and stops by itself.
    const code = await Promise.race([
      run.exited,
      sleep(240_000).then(() => {
        throw new Error(`the final run did not finish: ${run.stderr().slice(-3000)}`);
      }),
    ]);
    expect(code, run.stderr().slice(-3000)).toBe(0);

    const stored = await peggedTransitions(nats.url);
    expect(stored.length).toBeGreaterThan(200);
    expect(fatal, "the stream was never closed").toBeNull();
    expect(delivered.map((t) => ({ seq: t.seq, alert_id: t.alert_id }))).toEqual(stored.map((s) => ({ seq: s.seq, alert_id: s.alert_id })));
    expect(stream.stats.duplicatesDropped).toBe(0);
    // Each kill cut the connection, and the stream came back each time (plus the final shutdown).
    expect(stream.stats.connections).toBeGreaterThanOrEqual(KILLS + 1);
    expect(disconnected.length).toBe(KILLS + 1); // the last one: the final run's shutdown
    // Transitions were stored while the stream was away after each kill: they can only have come back through since_seq.
    const whileAway = disconnected.slice(0, KILLS).map((d) => stored.filter((s) => d.to !== null && s.at >= d.from && s.at < d.to).length);
    expect(whileAway.every((n) => n > 0), JSON.stringify({ whileAway, disconnected })).toBe(true);
    process.stdout.write(`client-stream: ${stored.length} transitions, ${whileAway.join("/")} stored while disconnected, ${stream.stats.connections} connections\n`);
    stream.close();
  }, 600_000);
});
