/**
 * The real service started in-process for a test (STYLE.md 10): a free port, METRICS_PORT=0, loopback, a temporary
 * DATA_DIR and a nats-server of its own unless the test brings them (a test that restarts the service keeps both
 * across starts), and `stop()` that undoes exactly what it started, in order: the service, then the nats-server and
 * the DATA_DIR it created.
 *
 *   const running = await startTestService({ env: { FEED: "scenario:usdc-march-2023" }, io: { onFeedEnd } });
 *   await fetch(`${running.base}/v1/assets`);
 *   await running.stop();
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadShippedCatalog, type Catalog } from "../../src/catalog/index.ts";
import { startRoleService, startService, type RoleService, type Service, type ServiceIO } from "../../src/cli/service.ts";
import type { Api } from "../../src/http/server.ts";
import type { Clock } from "../../src/clock.ts";
import { parseConfig, type Config } from "../../src/config.ts";
import type { Store } from "../../src/store/index.ts";
import { startNats, type TestNats } from "./nats.ts";
import { freePort, waitFor } from "./ports.ts";

export interface TestServiceOptions {
  /** Settings on top of the defaults (PORT, METRICS_PORT, HOST, NATS_URL, DATA_DIR), which they may replace. */
  readonly env?: Readonly<Record<string, string>>;
  /** What the service reports to; `log` defaults to nothing. */
  readonly io?: Partial<ServiceIO>;
  /**
   * The test's own nats-server (kept running by `stop`), or "embedded" (no NATS_URL: the service starts its own, as
   * `serve` does by default); default: one started for this service and disposed by `stop`.
   */
  readonly nats?: TestNats | "embedded";
  /** The test's own DATA_DIR (kept by `stop`); default: a temporary directory, removed by `stop`. */
  readonly dataDir?: string;
  /** Prefix of the temporary DATA_DIR's name (default `peg-service-`), to tell the tests' leftovers apart. */
  readonly prefix?: string;
  /** Default: the shipped catalog. */
  readonly catalog?: Catalog;
  /** The service's base clock; default the system clock. */
  readonly clock?: Clock;
}

/** A service a test started, and what it started around it. */
export interface TestService<S extends Started = Service> {
  readonly service: S;
  readonly config: Config;
  /** `http://127.0.0.1:<port>` (empty for ROLE=engine: no HTTP). */
  readonly base: string;
  /** The nats-server the service uses; null when the service runs its own ("embedded"). */
  readonly nats: TestNats | null;
  readonly dataDir: string;
  /**
   * Waits until the scenario feed has ended (within `feedMs`, default 60 s) and the store holds exactly `transitions`
   * alerts (within 30 s more: the projectors caught up), what a test of a finished scenario waits for first.
   */
  scenarioDone(transitions: number, feedMs?: number): Promise<void>;
  /** Stops the service, then disposes the nats-server and removes the DATA_DIR this helper created. Idempotent. */
  stop(): Promise<void>;
}

/** ROLE=all, as `serve` runs by default. */
export function startTestService(options: TestServiceOptions = {}): Promise<TestService> {
  return start(options, startService);
}

/** A process of the role in `env.ROLE` (docs/scaling.md). */
export function startTestRoleService(options: TestServiceOptions = {}): Promise<TestService<RoleService>> {
  return start(options, startRoleService);
}

/** What both kinds of start give: HTTP (absent for ROLE=engine) and the ordered stop. */
type Started = { readonly api: Api | null; readonly store: Store; stop(): Promise<void> };

async function start<S extends Started>(
  options: TestServiceOptions,
  run: (config: Config, catalog: Catalog, io: ServiceIO, clock?: Clock) => Promise<S>,
): Promise<TestService<S>> {
  const ownNats = options.nats === undefined;
  const nats = options.nats === "embedded" ? null : (options.nats ?? (await startNats()));
  const ownDir = options.dataDir === undefined;
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), options.prefix ?? "peg-service-"));
  const dispose = async () => {
    if (ownNats) await nats?.dispose();
    if (ownDir) rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    const config = parseConfig({
      PORT: String(await freePort()),
      METRICS_PORT: "0",
      HOST: "127.0.0.1",
      ...(nats === null ? {} : { NATS_URL: nats.url }),
      DATA_DIR: dataDir,
      ...options.env,
    });
    let feedEnded = false;
    const onFeedEnd = (error: unknown) => {
      feedEnded = true;
      options.io?.onFeedEnd?.(error);
    };
    const service = await run(config, options.catalog ?? loadShippedCatalog(), { log: () => {}, ...options.io, onFeedEnd }, options.clock);
    let stopping: Promise<void> | null = null;
    return {
      service,
      config,
      base: service.api === null ? "" : `http://127.0.0.1:${service.api.port}`,
      nats,
      dataDir,
      scenarioDone: async (transitions, feedMs = 60_000) => {
        await waitFor(() => feedEnded, feedMs, "the scenario to end");
        const projected = async () => (await service.store.alerts({ limit: transitions + 1, offset: 0 })).length === transitions;
        await waitFor(projected, 30_000, `all ${transitions} transitions projected`);
      },
      stop: () =>
        (stopping ??= (async () => {
          try {
            await service.stop();
          } finally {
            await dispose();
          }
        })()),
    };
  } catch (e) {
    await dispose();
    throw e;
  }
}
