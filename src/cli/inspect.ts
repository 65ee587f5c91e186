import { createWebSocketInspector } from "@statelyai/inspect";

/**
 * Actors reporting to a local @statelyai/inspect WebSocket bridge (INSPECT_PORT), for Stately's inspector. The
 * inspector hands over the context already serialised (decimals as strings); only the engine state, the asset and
 * the armed deadline go out (not the catalog entry or the receipts of the outbox).
 */
export function statelyInspector(port: number, host = "127.0.0.1") {
  return createWebSocketInspector({
    url: `ws://${host}:${port}`,
    sanitizeContext: (ctx) => {
      const c = (ctx ?? {}) as { asset?: { symbol?: unknown }; engine?: unknown; armedDeadline?: unknown };
      return { asset: c.asset?.symbol ?? null, engine: c.engine ?? null, armedDeadline: c.armedDeadline ?? null };
    },
  });
}
