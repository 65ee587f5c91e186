/**
 * The examples as a user runs them, from a working directory outside the repository (issue 23):
 * - `examples/README.md` lists every example with its command;
 * - `mcp-agent.ts --stdio` starts `peg-oracle mcp` with the caller's environment and working directory, so it
 *   answers from the store the caller's DATA_DIR names (a relative one included), not a fresh `./data`;
 * - `subscriber.ts` without NATS_URL finds the service's embedded server through DATA_DIR/nats.url (DATA_DIR
 *   defaulting to `./data`, as for the service), and falls back to 4222 only saying so.
 */
import type { ChildProcess } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { jetstream } from "@nats-io/jetstream";
import { afterEach, describe, expect, it } from "vitest";
import { ActorHost, type StateEvent } from "../src/actors/index.ts";
import { loadShippedCatalog } from "../src/catalog/index.ts";
import { loadScenario } from "../src/cli/scenario-files.ts";
import { SimulatedClock } from "../src/clock.ts";
import { D } from "../src/methodology/index.ts";
import { openStore, snapshotFromStateEvent } from "../src/store/index.ts";
import { ensureTopology, subjects } from "../src/streams/jetstream/topology.ts";
import { replayScenario } from "../src/streams/sources/scenario/replay.ts";
import { spawnChild, tempDirsForSuite, type ChildRun } from "./support/child.ts";
import { natsForSuite } from "./support/nats.ts";
import { waitFor } from "./support/ports.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
// `--import tsx` resolves from the working directory; outside the repository the loader is named by its path.
const TSX = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
const catalog = loadShippedCatalog();

const tempDir = tempDirsForSuite();
const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
});

/** Runs `examples/<name>` with `cwd` outside the repository and only `env` (plus PATH and HOME). */
function example(name: string, args: readonly string[], cwd: string, env: Record<string, string>): ChildRun {
  const run = spawnChild(process.execPath, ["--import", TSX, join(ROOT, "examples", name), ...args], { cwd, env });
  children.push(run.proc);
  return run;
}

describe("examples/README.md", () => {
  it("lists every example with the command that runs it", () => {
    const readme = readFileSync(join(ROOT, "examples", "README.md"), "utf8");
    const commands = [...readme.matchAll(/^(?:[A-Z_]+=\S+ )*node --import tsx (examples\/[\w-]+\.ts)/gm)].map((m) => m[1]);
    const files = readdirSync(join(ROOT, "examples")).filter((f) => f.endsWith(".ts"));
    expect(files.length).toBeGreaterThan(0);
    for (const f of files) expect(commands, `a command for examples/${f}`).toContain(`examples/${f}`);
  });
});

describe("examples/mcp-agent.ts --stdio", () => {
  it("answers from the caller's DATA_DIR (relative to the caller's working directory), not a fresh ./data", async () => {
    const cwd = tempDir("peg-mcp-caller-");
    // The caller's store: USDC far off its peg, as a running service would have left it.
    const now = Date.now();
    const host = new ActorHost({ assets: [catalog.bySymbol("USDC")!], clock: new SimulatedClock(now), gitSha: "" });
    let state: StateEvent | undefined;
    const sub = host.events$.subscribe((e) => {
      if (e.kind === "state") state = e as StateEvent;
    });
    host.ingest({ asset: "USDC", ts: now, intrinsic_usd: new D(1), market_usd: new D("0.9"), intrinsic_sol: null, market_sol: null, cr: null, oracle: {}, intrinsic_stale: false });
    sub.unsubscribe();
    host.stop();
    const store = await openStore({ kind: "pglite", dataDir: join(cwd, "state", "pg") }, new SimulatedClock(now));
    await store.upsertAssets(catalog.active);
    await store.upsertSnapshot({ ...snapshotFromStateEvent(state!, 1), state: "CRITICAL", band: "CRITICAL" });
    await store.close();

    const run = example("mcp-agent.ts", ["--stdio"], cwd, { DATA_DIR: "state", LOG_LEVEL: "warn" });
    expect(await run.exit, `stdout: ${run.out()}\nstderr: ${run.err()}`).toBe(0);
    expect(run.out()).toMatch(/^tools: .*list_assets/m);
    expect(run.out()).toMatch(/^\d+ assets tracked, 1 off their peg: USDC CRITICAL /m);
    expect(run.out()).toMatch(/^USDC: CRITICAL, discount 0\.\d+/m);
    expect(run.err()).toContain(`reading the embedded database in ${join(cwd, "state", "pg")}`);
  }, 90_000);
});

describe("examples/subscriber.ts without NATS_URL", () => {
  const suite = natsForSuite();

  /** Waits for the subscriber's "subscribed:" line; a transition published then must reach its stdout. */
  async function receives(run: ChildRun): Promise<void> {
    await Promise.race([
      waitFor(() => run.err().includes("subscribed:"), 30_000, `the subscriber to subscribe (stderr: ${run.err()})`),
      run.exit.then((code) => {
        throw new Error(`the subscriber exited with ${String(code)}: ${run.err()}`);
      }),
    ]);
    const receipt = replayScenario(loadScenario("oracle-confidence-blowout"), { resolve: (s) => catalog.bySymbol(s), gitSha: "" }).receipts[0]!;
    await jetstream(suite.nc).publish(subjects.transition(receipt.mint), JSON.stringify(receipt), { msgID: `${receipt.alert_id}-${String(Math.random())}` });
    await waitFor(() => run.out().includes(`alert_id=${receipt.alert_id}`), 10_000, `the transition on stdout (stderr: ${run.err()})`);
  }

  it("connects to the embedded server named in ./data/nats.url (DATA_DIR's default), then in DATA_DIR/nats.url", async () => {
    await ensureTopology(suite.nc);
    const cwd = tempDir("peg-sub-caller-");
    mkdirSync(join(cwd, "data"));
    writeFileSync(join(cwd, "data", "nats.url"), `${suite.nats.url}\n`);
    const byDefault = example("subscriber.ts", [], cwd, {});
    await receives(byDefault);
    expect(byDefault.err()).toContain(join(cwd, "data", "nats.url"));
    byDefault.proc.kill("SIGINT");
    expect(await byDefault.exit).toBe(0);

    mkdirSync(join(cwd, "state"));
    writeFileSync(join(cwd, "state", "nats.url"), `${suite.nats.url}\n`);
    rmSync(join(cwd, "data"), { recursive: true });
    const byDataDir = example("subscriber.ts", [], cwd, { DATA_DIR: "state" });
    await receives(byDataDir);
    byDataDir.proc.kill("SIGINT");
    expect(await byDataDir.exit).toBe(0);
  }, 60_000);

  it("without DATA_DIR/nats.url, says it falls back to 127.0.0.1:4222 and what to set", async () => {
    const cwd = tempDir("peg-sub-nothing-");
    const run = example("subscriber.ts", [], cwd, {});
    await waitFor(() => run.err().includes("4222"), 20_000, `the fallback message (stderr: ${run.err()})`);
    expect(run.err()).toContain(`NATS_URL is not set and there is no ${join(cwd, "data", "nats.url")}`);
    expect(run.err()).toContain("trying nats://127.0.0.1:4222");
    expect(run.err()).toContain("Set NATS_URL, or DATA_DIR");
  }, 30_000);
});
