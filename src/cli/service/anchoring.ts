import type { AnchorWorker } from "../../anchor/index.ts";
import type { Clock } from "../../clock.ts";
import type { Config } from "../../config.ts";
import type { SecretBox } from "../../secret-box.ts";
import type { Store } from "../../store/index.ts";
import type { LogFn } from "../../streams/jetstream/index.ts";
import type { UndoStack } from "./undo.ts";

/**
 * On-chain anchoring (methodology section 8), engines only: its module (the Solana client) starts loading at once,
 * while recovery runs; `start` polls the store for receipts to commit, on wall-clock time, and resumes a commit it had
 * sent before a restart; nothing before it waits for it. `start` gives null when anchoring is off.
 */
export function loadAnchoring(config: Config): { start(store: Store, secrets: SecretBox, clock: Clock, log: LogFn, undo: UndoStack): Promise<AnchorWorker | null> } {
  const module = config.role !== "api" ? import("../../anchor/start.ts") : null;
  module?.catch(() => {}); // awaited by start()
  return {
    start: async (store, secrets, clock, log, undo) => {
      if (module === null) return null;
      const anchor = await (await module).startAnchoring({ ...config.anchor, rpcUrl: config.sources.solanaRpcUrl, db: store.db, secrets, clock, log });
      if (anchor !== null) undo.push(() => anchor.stop());
      return anchor;
    },
  };
}
