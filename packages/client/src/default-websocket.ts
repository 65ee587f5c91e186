/**
 * The WebSocket a `PegStream` uses when it is given none: the global one (browsers, Deno, Bun, Node >= 22), else the
 * `ws` package (Node 20 has no global WebSocket), an optional peer dependency loaded only then. The specifier is not a
 * literal, so bundlers never try to resolve `ws` for a browser build (the package's `browser` field maps it away too).
 */
import type { WebSocketConstructor } from "./stream-options.ts";

const WS_PACKAGE = "ws";

export async function defaultWebSocket(): Promise<WebSocketConstructor> {
  const global = (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
  if (global !== undefined) return global;
  let mod: { default?: unknown; WebSocket?: unknown };
  try {
    mod = (await import(/* @vite-ignore */ /* webpackIgnore: true */ WS_PACKAGE)) as typeof mod;
  } catch (e) {
    throw new TypeError(
      "no global WebSocket here (Node 20) and the optional peer dependency `ws` cannot be loaded: `npm install ws`, " +
        `or pass one: new PegStream({ url, WebSocket }) (${e instanceof Error ? e.message : String(e)})`,
    );
  }
  const Ctor = typeof mod.WebSocket === "function" ? mod.WebSocket : mod.default;
  if (typeof Ctor !== "function") throw new TypeError("the `ws` package has no WebSocket export");
  return Ctor as WebSocketConstructor;
}
