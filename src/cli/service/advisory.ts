import type { Catalog } from "../../catalog/index.ts";
import type { Clock } from "../../clock.ts";
import type { Config } from "../../config.ts";
import { readinessBody } from "../../http/routes/health.ts";
import type { Api } from "../../http/server.ts";
import type { LogFn } from "../../streams/jetstream/index.ts";
import { positionsBooks, type PositionsBooks } from "../positions-books.ts";
import type { UndoStack } from "./undo.ts";

/** The longest the positions book waits for the service to be ready before loading anyway (`whenReady`). */
const POSITIONS_START_MAX_WAIT_MS = 30_000;
/** How often `whenReady` asks whether the service is ready. */
const READY_POLL_MS = 250;

/**
 * The advisory figures' lending positions (processes that serve the API): Kamino's obligations when
 * KAMINO_POSITIONS_URL is set, else simulated (same seed as the simulated market), in books of a few hundred assets
 * (positions-books.ts); refreshed every minute. Loaded by `loadPositionsWhenReady`; until then the advisory routes
 * answer 503.
 */
export function openPositions(config: Config, catalog: Catalog, clock: Clock, log: LogFn, undo: UndoStack): PositionsBooks | null {
  const positions = config.role === "engine" ? null : positionsBooks({ assets: catalog.active, seed: config.simSeed, kaminoUrl: config.kaminoPositionsUrl, clock, log });
  undo.push(async () => positions?.stop());
  return positions;
}

/**
 * Loads the positions once the service is ready; an API process has nothing else to do at start: its book loads at
 * once. Returns the cancel (for a stop before then).
 */
export function loadPositionsWhenReady(config: Config, api: Api | null, positions: PositionsBooks | null, clock: Clock): () => void {
  if (api === null) return () => {};
  return whenReady(async () => config.role === "api" || readinessBody(await api.readModel.readiness()).ok, clock, () => void positions?.start());
}

/**
 * Runs `start` once the service is ready (`ready()`, asked every `READY_POLL_MS`), or after `maxWaitMs` at the latest.
 * For the advisory positions: loading them is seconds of CPU for thousands of assets, on this thread, and must not
 * hold back recovery, the first samples or their projection (the advisory routes answer 503 `not_ready` until they
 * land, as documented). Returns the cancel (for a stop before then).
 */
function whenReady(ready: () => Promise<boolean>, clock: Clock, start: () => void, maxWaitMs = POSITIONS_START_MAX_WAIT_MS): () => void {
  const deadline = clock.now() + maxWaitMs;
  let timer: unknown = null;
  let settled = false;
  const check = async () => {
    timer = null;
    const ok = clock.now() >= deadline || (await ready().catch(() => false));
    if (settled) return;
    if (ok) {
      settled = true;
      start();
    } else timer = clock.setTimeout(() => void check(), READY_POLL_MS);
  };
  void check();
  return () => {
    settled = true;
    if (timer !== null) clock.clearTimeout(timer);
  };
}
