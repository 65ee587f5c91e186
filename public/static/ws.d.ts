// Types of ws.js for the TypeScript tests.
import type { PegStream, StreamTimers, WebSocketConstructor } from "@peg-oracle/client";

export type Status = "connecting" | "connected" | "reconnecting" | "closed";
export interface LiveSocketOptions {
  readonly url: string;
  readonly assets?: readonly string[];
  readonly onMessage?: (msg: Record<string, unknown>) => void;
  readonly onStatus?: (status: Status, detail: { attempt: number; delayMs: number }) => void;
  readonly WebSocketImpl?: WebSocketConstructor;
  readonly timers?: StreamTimers;
  readonly now?: () => number;
  readonly random?: () => number;
}
export declare function wsUrl(loc: { readonly protocol: string; readonly host: string }, path?: string): string;
export declare class LiveSocket {
  constructor(options: LiveSocketOptions);
  readonly lastSeq: number | null;
  clockOffsetMs: number;
  /** The package's stream while started, else null. */
  readonly stream: PegStream | null;
  start(): void;
  stop(): void;
}
