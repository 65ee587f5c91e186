/**
 * examples/subscriber.ts against a real nats-server: the operator example must keep working. It is spawned as a
 * child process exactly as docs/nats.md tells operators to run it, fed real receipts (a shipped scenario replayed
 * through the engine) and real `peg.state` payloads, and its output lines are checked.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, type JetStreamClient } from "@nats-io/jetstream";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ActorHost, type StateEvent } from "../../src/actors/index.ts";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import { loadScenario } from "../../src/cli/scenario-files.ts";
import { SimulatedClock } from "../../src/clock.ts";
import { D, type Receipt, type Sample } from "../../src/methodology/index.ts";
import { sampleMessage, type SampleMessage } from "../../src/streams/jetstream/messages.ts";
import { ensureTopology, subjects } from "../../src/streams/jetstream/topology.ts";
import { replayScenario } from "../../src/streams/sources/scenario/replay.ts";
import { startNats, type TestNats } from "../support/nats.ts";
import { waitFor } from "../support/ports.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const EXAMPLE = "examples/subscriber.ts";

const catalog = loadShippedCatalog();
const USDC = catalog.bySymbol("USDC")!;
const USDT = catalog.bySymbol("USDT")!;

/** Real receipts: the usdc-march-2023 scenario replayed through the engine. */
function replayedReceipts(): readonly Receipt[] {
  const result = replayScenario(loadScenario("usdc-march-2023"), {
    resolve: (symbol) => {
      const a = catalog.bySymbol(symbol);
      return a !== undefined && a.active ? a : undefined;
    },
    gitSha: "",
  });
  return result.receipts;
}

/** Real `peg.state` payloads: one accepted sample per asset through an actor host. */
function stateMessages(): Map<string, SampleMessage> {
  const t = Date.UTC(2026, 5, 12, 10, 0, 0);
  const clock = new SimulatedClock(t);
  const host = new ActorHost({ assets: [USDC, USDT], clock, gitSha: "" });
  const out = new Map<string, SampleMessage>();
  const sub = host.events$.subscribe((e) => {
    if (e.kind === "state") out.set(e.asset, sampleMessage(e as StateEvent));
  });
  const sample = (asset: string, market: string): Sample => ({
    asset,
    ts: t,
    intrinsic_usd: new D(1),
    market_usd: new D(market),
    intrinsic_sol: null,
    market_sol: null,
    cr: null,
    oracle: {},
    intrinsic_stale: false,
  });
  host.ingest(sample("USDC", "0.9991"));
  host.ingest(sample("USDT", "1.0002"));
  sub.unsubscribe();
  host.stop();
  return out;
}

interface Running {
  readonly proc: ChildProcess;
  readonly out: string[];
  readonly err: () => string;
  readonly exit: Promise<number | null>;
}

const children: ChildProcess[] = [];

/** Spawns the example as operators run it and waits until it reports its subscriptions. */
async function runExample(url: string, args: readonly string[]): Promise<Running> {
  const proc = spawn(process.execPath, ["--import", "tsx", EXAMPLE, ...args], {
    cwd: ROOT,
    env: { ...process.env, NATS_URL: url },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(proc);
  const out: string[] = [];
  let partial = "";
  let stderr = "";
  proc.stdout!.on("data", (c: Buffer) => {
    const lines = (partial + c.toString()).split("\n");
    partial = lines.pop()!;
    out.push(...lines);
  });
  proc.stderr!.on("data", (c: Buffer) => (stderr += c.toString()));
  const exit = new Promise<number | null>((r) => proc.once("exit", (code) => r(code)));
  await Promise.race([
    waitFor(() => stderr.includes("subscribed:"), 20_000, `the example to subscribe (stderr: ${stderr})`),
    exit.then((code) => {
      throw new Error(`the example exited early with ${code}: ${stderr}`);
    }),
  ]);
  return { proc, out, err: () => stderr, exit };
}

async function interrupt(r: Running): Promise<number | null> {
  r.proc.kill("SIGINT");
  const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`no exit after SIGINT: ${r.err()}`)), 10_000));
  return Promise.race([r.exit, timeout]);
}

const lineOf = (r: Running, prefix: string) => r.out.find((l) => l.startsWith(prefix));

let nats: TestNats;
let nc: NatsConnection;
let js: JetStreamClient;
let receipts: readonly Receipt[];
let states: Map<string, SampleMessage>;

async function publishTransition(r: Receipt): Promise<number> {
  const ack = await js.publish(subjects.transition(r.mint), JSON.stringify(r), { msgID: r.alert_id });
  return ack.seq;
}

beforeAll(async () => {
  nats = await startNats();
  nc = await connect({ servers: nats.url });
  await ensureTopology(nc);
  js = jetstream(nc);
  receipts = replayedReceipts();
  states = stateMessages();
  expect(receipts.length).toBeGreaterThanOrEqual(5);
  expect(states.size).toBe(2);
});

afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
});

afterAll(async () => {
  await nc?.close();
  await nats?.dispose();
});

describe("examples/subscriber.ts", () => {
  it("prints new transitions (not older ones) and live peg.state pushes, one line each, and exits 0 on SIGINT", async () => {
    const older = receipts[0]!;
    const olderSeq = await publishTransition(older);

    const run = await runExample(nats.url, []);
    const fresh = receipts[1]!;
    const seq = await publishTransition(fresh);
    expect(seq).toBe(olderSeq + 1);
    const state = states.get("USDC")!;
    nc.publish(subjects.state(state.mint), JSON.stringify(state));

    await waitFor(() => lineOf(run, `transition seq=${seq} `) !== undefined && lineOf(run, "state ") !== undefined, 15_000, "both lines");
    const t = lineOf(run, `transition seq=${seq} `)!;
    for (const part of [
      fresh.detected_at,
      ` ${fresh.asset} `,
      fresh.mint,
      `${fresh.from_state}->${fresh.to_state}`,
      `discount=${fresh.discount}`,
      `bps=${fresh.discount_bps}`,
      `alert_id=${fresh.alert_id}`,
      `sha256=${fresh.receipt_sha256}`,
    ]) {
      expect(t).toContain(part);
    }
    const s = lineOf(run, "state ")!;
    for (const part of [state.ts, ` ${state.asset} `, state.mint, ` ${state.state} `, `band=${state.band}`, `discount=${state.discount}`, `trigger=${state.trigger}`]) {
      expect(s).toContain(part);
    }
    // Only new transitions: the one stored before the example started is not printed.
    expect(run.out.some((l) => l.includes(older.alert_id))).toBe(false);
    expect(run.out.filter((l) => l.startsWith("transition "))).toHaveLength(1);

    expect(await interrupt(run)).toBe(0);
  }, 60_000);

  it("--since-seq replays older transitions in order, and --mint filters transitions and state pushes", async () => {
    // Self-contained: its own receipts (a re-published alert id would be a server-side duplicate), its own sequences.
    const older = receipts[2]!;
    const olderSeq = await publishTransition(older);
    const other: Receipt = { ...receipts[4]!, mint: USDT.mint, asset: "USDT", alert_id: "00000000-0000-8000-8000-00000000000a" };
    const otherSeq = await publishTransition(other);
    expect(otherSeq).toBe(olderSeq + 1);

    const run = await runExample(nats.url, ["--since-seq", String(olderSeq), "--mint", USDC.mint]);
    await waitFor(() => lineOf(run, `transition seq=${olderSeq} `) !== undefined, 15_000, "the replayed transition");
    const later = receipts[3]!;
    const laterSeq = await publishTransition(later);
    nc.publish(subjects.state(USDT.mint), JSON.stringify(states.get("USDT")!));
    nc.publish(subjects.state(USDC.mint), JSON.stringify(states.get("USDC")!));
    await waitFor(() => lineOf(run, `transition seq=${laterSeq} `) !== undefined && lineOf(run, "state ") !== undefined, 15_000, "the new transition and the USDC state");

    const transitions = run.out.filter((l) => l.startsWith("transition "));
    expect(transitions.map((l) => l.split(" ")[1])).toEqual([`seq=${olderSeq}`, `seq=${laterSeq}`]);
    expect(transitions[0]).toContain(`alert_id=${older.alert_id}`);
    expect(transitions[0]).toContain(`${older.from_state}->${older.to_state}`);
    expect(transitions[1]).toContain(`alert_id=${later.alert_id}`);
    // The other mint's transition sits between them in the stream, and its state was published before USDC's on the
    // same connection: had either passed the filter, it would be here.
    expect(run.out.some((l) => l.includes(USDT.mint) || l.includes(other.alert_id))).toBe(false);
    expect(run.out.filter((l) => l.startsWith("state "))).toHaveLength(1);

    expect(await interrupt(run)).toBe(0);
  }, 60_000);

  it("refuses a symbol where a mint is expected", async () => {
    const proc = spawn(process.execPath, ["--import", "tsx", EXAMPLE, "--mint", "USD*"], {
      cwd: ROOT,
      env: { ...process.env, NATS_URL: nats.url },
      stdio: ["ignore", "ignore", "pipe"],
    });
    children.push(proc);
    let stderr = "";
    proc.stderr!.on("data", (c: Buffer) => (stderr += c.toString()));
    const code = await new Promise<number | null>((r) => proc.once("exit", (c) => r(c)));
    expect(code).toBe(2);
    expect(stderr).toContain("--mint must be a base58 mint address");
  }, 60_000);
});
