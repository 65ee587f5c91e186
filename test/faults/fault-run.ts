/**
 * One fault test from start to checks: provision the webhooks, start the service on the burst scenario, wait until it
 * is ready and warmed up, take the memory baseline, run the test's faults, let the scenario and every delivery
 * finish, then check everything `invariants.ts` states. The numbers (outage lengths, time to ready again, memory)
 * are printed on one line per test and written to `test-results/faults/<test>.json` (a `FaultRecord`), from which
 * `npm run test:faults` writes the faults section of docs/benchmarks.md (bench/faults-report.ts).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, expect } from "vitest";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import { loadScenario } from "../../src/cli/scenario-files.ts";
import { systemClock } from "../../src/clock.ts";
import { eventIdFor } from "../../src/delivery/index.ts";
import { deliveriesOf, openStore, type StoreConfig } from "../../src/store/index.ts";
import { replayScenario } from "../../src/streams/sources/scenario/replay.ts";
import { startReceiver, type Receiver } from "../delivery/receiver.ts";
import { startNats, type TestNats } from "../support/nats.ts";
import { startPostgres, type TestPostgres } from "../support/postgres.ts";
import { freePort, sleep, waitFor } from "../support/ports.ts";
import { probeReadyz, provisionWebhooks, SCENARIO, serviceEnv, spawnService, type Hook, type MemoryReport, type ReadyzSample, type ServiceProcess } from "./harness.ts";
import {
  compareWithReplay,
  consumerCaughtUp,
  describeMemory,
  expectAckedHistory,
  expectMemoryBack,
  expectReadyzOutage,
  expectReadyzSteady,
  expectStoredExactlyOnce,
  expectedWebhookAlerts,
  expectWebhookEvents,
  jetStreamTransitions,
  undeliveredEvents,
} from "./invariants.ts";

export const catalog = loadShippedCatalog();
const scenario = loadScenario(SCENARIO);
/**
 * The uninterrupted history of the scenario (offline replay), settled: the service keeps running after the last
 * sample, so the dwells pending then still commit (six more, within 105 scenario seconds); the replay runs a day
 * past the end to include them. This is what the faulted run must acknowledge, exactly.
 */
export const expected = replayScenario(
  { ...scenario, until: (scenario.samples.at(-1)?.ts ?? 0) + 86_400_000 },
  { resolve: (s) => catalog.bySymbol(s), gitSha: "" },
).receipts;

/** A window in which `/readyz` must have reported the outage, and after which it must answer 200 again. */
export interface Outage {
  readonly what: string;
  readonly from: number;
  readonly to: number;
}

/**
 * One outage of a dependency the test runs: `stop` it, keep it down `ms`, `start` it again, then wait until the
 * service's `/readyz` answers 200. Returns the outage (from the stop to the restart).
 */
export async function outage(ctx: FaultContext, what: string, stop: () => Promise<void>, ms: number, start: () => Promise<void>): Promise<Outage> {
  const from = Date.now();
  await stop();
  await sleep(ms);
  const to = Date.now();
  await start();
  await ctx.readyAgain(to);
  return { what, from, to };
}

export interface FaultContext {
  /** The service process running now. */
  service(): ServiceProcess;
  /** Starts the service again (after a kill) with the same environment; resolves once it serves. */
  restart(): Promise<void>;
  /** Resolves once `/readyz` answered 200 to a poll sent after `since`; returns that instant. */
  readyAgain(since: number, timeoutMs?: number): Promise<number>;
  /** Every `/readyz` answer so far. */
  readonly readyz: readonly ReadyzSample[];
}

/** Where each fault test leaves its `FaultRecord`. */
export const FAULT_RESULTS_DIR = fileURLToPath(new URL("../../test-results/faults/", import.meta.url));

/** What one fault test measured, for the report. */
export interface FaultRecord {
  readonly test: string;
  readonly store: StoreConfig["kind"];
  readonly finishedAt: string;
  /** Transitions acknowledged by JetStream, and how they compare with the uninterrupted offline replay. */
  readonly transitions: number;
  readonly replay: string;
  readonly eventsAccepted: number;
  readonly webhookRequests: number;
  readonly outages: readonly { readonly what: string; readonly downMs: number; readonly non200Polls: number; readonly readyAgainMs: number }[];
  readonly memory: { readonly baseline: MemoryReport; readonly after: MemoryReport };
}

export interface FaultRunOptions {
  /** Names the test's record (`test-results/faults/<name>.json`). */
  readonly name: string;
  readonly store: StoreConfig;
  readonly natsUrl: string;
  readonly dataDir: string;
  readonly port: number;
  readonly speed: number;
  readonly rx: Receiver;
  readonly hookPaths: readonly string[];
  /**
   * Runs the faults on the ready, warmed-up service. Returns the windows in which `/readyz` must report an outage;
   * none means it must answer 200 throughout.
   */
  inject(ctx: FaultContext): Promise<readonly Outage[]>;
}

async function transitionsAcked(natsUrl: string): Promise<number> {
  const nc = await connect({ servers: natsUrl });
  try {
    return (await (await jetstreamManager(nc)).streams.info("PEG_TRANSITIONS")).state.messages;
  } finally {
    await nc.close();
  }
}

/** The delivery records of every hook, for a failure message (PostgreSQL only: PGlite is the service's alone). */
async function deliveryHistory(config: StoreConfig, hooks: readonly Hook[]): Promise<string> {
  if (config.kind !== "postgres") return "(delivery records: readable on PostgreSQL only)";
  const store = await openStore(config, systemClock);
  try {
    const lines: string[] = [];
    for (const h of hooks) {
      for (const d of (await deliveriesOf(store.db, h.id, { limit: 200 })).reverse()) {
        const at = (t: number | null) => (t === null ? "-" : new Date(t).toISOString().slice(11, 23));
        lines.push(`${h.path} ${d.event_id} #${d.attempt} ${d.status} ${d.response_status ?? ""} ${d.error ?? ""} scheduled ${at(d.scheduled_at)} sent ${at(d.sent_at)} next ${at(d.next_attempt_at)}`);
      }
    }
    return `delivery records:\n${lines.join("\n")}`;
  } finally {
    await store.close();
  }
}

export async function runFaultTest(o: FaultRunOptions): Promise<{ baseline: MemoryReport; after: MemoryReport }> {
  const hooks = await provisionWebhooks(o.store, o.rx, o.hookPaths);
  const env = serviceEnv({
    port: o.port,
    natsUrl: o.natsUrl,
    dataDir: o.dataDir,
    ...(o.store.kind === "postgres" ? { databaseUrl: o.store.url } : {}),
    speed: o.speed,
    rx: o.rx,
  });
  let svc = spawnService(env);
  const stderrs: string[] = [];
  const probe = probeReadyz(o.port);
  try {
    await svc.serving;
    // A wait that fails at once, with the service's last words, if the running service dies meanwhile.
    const whileAlive = <T>(p: Promise<T>): Promise<T> => {
      const current = svc;
      const death = current.exited.then((code): never => {
        throw new Error(`the service exited (${code ?? current.proc.signalCode}): ${current.stderr().slice(-2000)}`);
      });
      death.catch(() => {});
      return Promise.race([p, death]);
    };
    const readyAgain = async (since: number, timeoutMs = 60_000): Promise<number> => {
      let at = 0;
      await whileAlive(
        waitFor(
          () => {
            at = probe.samples.find((s) => s.at > since && s.status === 200)?.at ?? 0;
            return at > 0;
          },
          timeoutMs,
          "/readyz to answer 200",
        ),
      );
      return at;
    };
    // Ready once the first snapshot is projected; from then on /readyz must only fail for an outage.
    const started = await readyAgain(0);
    // Into the burst: transitions start 90 scenario seconds in.
    await sleep(Math.max(3_000, (120 / o.speed) * 1000));
    const baseline = await svc.memory();
    const ctx: FaultContext = {
      service: () => svc,
      restart: async () => {
        stderrs.push(svc.stderr());
        svc = spawnService(env);
        await svc.serving;
      },
      readyAgain,
      readyz: probe.samples,
    };
    const outages = await o.inject(ctx);
    const faultsEnded = Date.now();

    // The scenario runs to its end, the dwells pending then commit (no new transition for 5 s: 200 scenario
    // seconds at speed 40, where the last pending chain takes 105), and every due event is accepted.
    await whileAlive(waitFor(() => svc.stderr().includes('"msg":"feed ended"'), 240_000, "the end of the scenario", 250));
    let count = -1;
    let stableSince = Date.now();
    await waitFor(
      async () => {
        const n = await transitionsAcked(o.natsUrl);
        if (n !== count) [count, stableSince] = [n, Date.now()];
        return Date.now() - stableSince >= 5_000;
      },
      60_000,
      "the last pending dwells to commit",
      500,
    );
    const allAcked = Date.now();
    let acked = await jetStreamTransitions(o.natsUrl);
    await waitFor(() => undeliveredEvents(o.rx, hooks, acked, catalog).length === 0, 120_000, "every webhook event accepted", 250).catch(async (e: unknown) => {
      const byId = new Map(acked.map((r) => [r.alert_id, r]));
      const acted = new Set(o.rx.acted);
      const perHook = hooks.map((h) =>
        `${h.path}: ${expectedWebhookAlerts(acked, h, catalog)
          .map((id) => `${byId.get(id)!.from_state}->${byId.get(id)!.to_state}@${byId.get(id)!.detected_at.slice(11, 19)}${acted.has(eventIdFor(h.id, id)) ? "" : " MISSING"}`)
          .join(", ")}`,
      );
      const usdc = acked.filter((r) => r.asset === "USDC").map((r) => `${r.from_state}->${r.to_state}@${r.detected_at.slice(11, 19)} ${r.discount_bps}`);
      throw new Error(`${String(e)}: ${undeliveredEvents(o.rx, hooks, acked, catalog).join(", ")}\nexpected per hook:\n${perHook.join("\n")}\nUSDC history: ${usdc.join(", ")}\n${await deliveryHistory(o.store, hooks)}`);
    });
    await waitFor(() => consumerCaughtUp(o.natsUrl, "PEG_TRANSITIONS", "projector-transitions"), 60_000, "the transition projector to catch up", 250);
    const after = await svc.memory();
    await probe.stop();

    acked = await jetStreamTransitions(o.natsUrl);
    expectAckedHistory(acked);
    expectWebhookEvents(o.rx, hooks, acked, catalog);
    for (const w of outages) expectReadyzOutage(probe.samples, w.from, w.to, w.what);
    if (outages.length === 0) expectReadyzSteady(probe.samples, started, allAcked);
    expectMemoryBack(baseline, after, "the faults");

    const code = await svc.stop();
    expect(code, svc.stderr().slice(-3000)).toBe(0);
    const store = await openStore(o.store, systemClock);
    try {
      await expectStoredExactlyOnce(store, acked);
    } finally {
      await store.close();
    }
    const measured = outages.map((w) => ({
      what: w.what,
      downMs: w.to - w.from,
      non200Polls: probe.samples.filter((s) => s.at >= w.from && s.at <= w.to && s.status !== 200).length,
      readyAgainMs: (probe.samples.find((s) => s.at > w.to && s.status === 200)?.at ?? NaN) - w.to,
    }));
    const unready = measured.map((w) => `${w.what}: ${w.downMs} ms down, ${w.non200Polls} non-200 polls, 200 again ${w.readyAgainMs} ms after`);
    const record: FaultRecord = {
      test: o.name,
      store: o.store.kind,
      finishedAt: new Date().toISOString(),
      transitions: acked.length,
      replay: compareWithReplay(acked, expected),
      eventsAccepted: o.rx.acted.length,
      webhookRequests: o.rx.received.length,
      outages: measured,
      memory: { baseline, after },
    };
    mkdirSync(FAULT_RESULTS_DIR, { recursive: true });
    writeFileSync(join(FAULT_RESULTS_DIR, `${o.name}.json`), `${JSON.stringify(record, null, 2)}\n`);
    console.info(
      `[faults] ${acked.length} transitions (${compareWithReplay(acked, expected)}), ${o.rx.acted.length} events accepted of ${o.rx.received.length} requests; ` +
        `faults ended ${faultsEnded - started} ms after start; ${unready.join("; ") || "no outage"}; ` +
        `memory baseline ${describeMemory(baseline)}, after ${describeMemory(after)}`,
    );
    return { baseline, after };
  } catch (e) {
    stderrs.push(svc.stderr());
    const log = join(tmpdir(), `peg-faults-${process.pid}-${Date.now()}.log`);
    writeFileSync(log, stderrs.join("\n"));
    const lines = stderrs.join("\n").split("\n").filter((l) => /"level":"(warn|error)"/.test(l));
    throw new Error(`${e instanceof Error ? e.message : String(e)}\n--- service warnings (last 40; whole log in ${log}) ---\n${lines.slice(-40).join("\n")}`, { cause: e });
  } finally {
    await probe.stop();
    await svc.kill();
  }
}

/** What one fault test file runs on: its own nats-server, HTTPS webhook receiver, temporary directory and, if asked, PostgreSQL. */
export interface FaultSuite {
  readonly dir: string;
  readonly nats: TestNats;
  readonly rx: Receiver;
  /** Only in a suite started with `postgres`. */
  readonly pg: TestPostgres;
  /**
   * `runFaultTest` on the suite's dependencies: the service at 40x on `dataDir` (default `<dir>/data`), storing in a
   * new database of the suite's PostgreSQL, or else in PGlite under `dataDir/pg`, on a free port.
   */
  run(o: Pick<FaultRunOptions, "name" | "hookPaths" | "inject"> & { readonly dataDir?: string }): Promise<{ baseline: MemoryReport; after: MemoryReport }>;
}

/**
 * Registers the file's `beforeAll` (start nats-server, PostgreSQL if `postgres`, the receiver) and `afterAll` (stop
 * them, remove the directory). Register a file's own hooks after this: its `afterAll` then runs first. With `skip`
 * nothing is started.
 */
export function faultSuite(prefix: string, o: { readonly postgres?: { readonly durable?: boolean }; readonly skip?: boolean } = {}): FaultSuite {
  const dir = mkdtempSync(join(tmpdir(), `peg-faults-${prefix}-`));
  let nats: TestNats | undefined;
  let rx: Receiver | undefined;
  let pg: TestPostgres | undefined;
  beforeAll(async () => {
    if (o.skip === true) return;
    nats = await startNats();
    if (o.postgres !== undefined) pg = await startPostgres({ durable: o.postgres.durable === true });
    rx = await startReceiver();
  });
  afterAll(async () => {
    await rx?.close();
    await nats?.dispose();
    await pg?.dispose();
    rmSync(dir, { recursive: true, force: true });
  });
  const started = <T>(v: T | undefined, what: string): T => {
    if (v === undefined) throw new Error(`${what} is not running (started in beforeAll${o.postgres === undefined && what === "PostgreSQL" ? "; this suite has none" : ""})`);
    return v;
  };
  const suite: FaultSuite = {
    dir,
    get nats() {
      return started(nats, "nats-server");
    },
    get rx() {
      return started(rx, "the webhook receiver");
    },
    get pg() {
      return started(pg, "PostgreSQL");
    },
    run: async (r) => {
      const dataDir = r.dataDir ?? join(dir, "data");
      mkdirSync(dataDir, { recursive: true });
      const store: StoreConfig = pg === undefined ? { kind: "pglite", dataDir: join(dataDir, "pg") } : { kind: "postgres", url: await pg.createDatabase() };
      return runFaultTest({ ...r, store, natsUrl: suite.nats.url, dataDir, port: await freePort(), speed: 40, rx: suite.rx });
    },
  };
  return suite;
}
