// Types of ws.js for the TypeScript tests.
export interface SocketLike {
  readyState: number;
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: unknown) => void) | null;
  onerror: ((ev: unknown) => void) | null;
  send(data: string): void;
  close(code?: number, reason?: string): void;
}
export interface Timers {
  setTimeout(f: () => void, ms: number): unknown;
  clearTimeout(h: unknown): void;
  setInterval(f: () => void, ms: number): unknown;
  clearInterval(h: unknown): void;
}
export type Status = "connecting" | "connected" | "reconnecting" | "closed";
export interface LiveSocketOptions {
  readonly url: string;
  readonly assets?: readonly string[];
  readonly onMessage?: (msg: Record<string, unknown>) => void;
  readonly onStatus?: (status: Status, detail: { attempt?: number; delayMs?: number }) => void;
  readonly WebSocketImpl?: new (url: string) => SocketLike;
  readonly timers?: Timers;
  readonly now?: () => number;
  readonly pingEveryMs?: number;
  readonly idleMs?: number;
}
export declare function backoffDelay(attempt: number, baseMs?: number, maxMs?: number): number;
export declare function wsUrl(loc: { readonly protocol: string; readonly host: string }, path?: string): string;
export declare class IdSet {
  constructor(limit?: number);
  add(id: string): boolean;
  has(id: string): boolean;
}
export declare class LiveSocket {
  constructor(options: LiveSocketOptions);
  lastSeq: number | null;
  clockOffsetMs: number;
  attempt: number;
  start(): void;
  stop(): void;
  subscribe(assets: readonly string[]): void;
  send(obj: unknown): void;
}
