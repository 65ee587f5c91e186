/** Shared by the processes of the WebSocket benchmark (bench/ws.bench.ts, ws-server.ts, ws-client.ts). */

export type WsServerKind = "uws" | "ws";

/**
 * CLOCK_MONOTONIC in milliseconds (process.hrtime): one clock for every process on the machine, unaffected by wall
 * clock steps, so a time taken in the benchmark and one taken in a client process can be subtracted.
 */
export const monoMs = (): number => Number(process.hrtime.bigint()) / 1e6;

export interface WsServerStats {
  readonly rss: number;
  readonly heapUsed: number;
  /** process.cpuUsage() user + system, microseconds. */
  readonly cpuUs: number;
  /** process.cpuUsage() system part (the kernel: socket writes), microseconds. */
  readonly cpuSysUs: number;
  readonly clients: number;
  readonly backpressureCloses: number;
  readonly limitCloses: number;
  readonly transitionsPublished: number;
  /** alert id -> monoMs() when the live feed handed the transition to the hub. */
  readonly hubAt: Record<string, number>;
  /** alert id -> monoMs() when `hub.transition` returned (its publish calls done). */
  readonly hubDone: Record<string, number>;
}

/** The client implementation of a client process (bench/ws-client.ts): a minimal RFC 6455 client, or the `ws` library. */
export type ClientImpl = "raw" | "ws";

/** Orchestrator -> client process. */
export type ClientCommand =
  | {
      readonly op: "connect";
      readonly impl: ClientImpl;
      readonly port: number;
      readonly count: number;
      /** Global index of the process's first client (decides the source addresses). */
      readonly firstIndex: number;
      readonly snapshots: number;
    }
  | { readonly op: "track"; readonly ids: readonly string[] }
  | { readonly op: "count" }
  | { readonly op: "collect" }
  | { readonly op: "stop" };

/** Client process -> orchestrator. */
export type ClientReply =
  | { readonly op: "connected"; readonly connected: number; readonly failed: number; readonly errors: readonly string[]; readonly ms: number }
  | { readonly op: "tracked" }
  | { readonly op: "count"; readonly received: number; readonly closed: number; readonly cpuUs: number; readonly cpuSysUs: number }
  /** receivedAt[c * ids.length + i]: monoMs() when local client c got tracked transition i (NaN: never). */
  | { readonly op: "collect"; readonly receivedAt: Float64Array; readonly duplicates: number; readonly closed: number; readonly closeCodes: Record<string, number> };

/** At most this many clients per source address (the server allows WS_LIMITS.connectionsPerIp = 20). */
export const CLIENTS_PER_ADDRESS = 20;

/** The loopback source address of global client `i` (Linux routes all of 127.0.0.0/8 to lo). */
export function clientAddress(i: number): string {
  const a = Math.floor(i / CLIENTS_PER_ADDRESS);
  return `127.2.${Math.floor(a / 200)}.${(a % 200) + 1}`;
}
