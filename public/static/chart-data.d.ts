// Types of chart-data.js for the TypeScript tests.
import type { Bucket, ChartTransition, Point } from "./chart.js";

export type Get = (path: string) => Promise<{ status: number; body: unknown }>;
export declare const HISTORY_PAGE: number;
export declare const ALERTS_PAGE: number;
export declare const LIVE_MAX: number;
export declare function loadHistory(
  get: Get,
  symbol: string,
  window: { from: number; to: number; bucket: Bucket; maxPages?: number },
): Promise<Record<string, unknown>[]>;
export declare function chartTransition(x: unknown): ChartTransition | null;
export declare function loadTransitions(
  get: Get,
  symbol: string,
  options: { from: number; maxPages?: number },
): Promise<{ transitions: ChartTransition[]; complete: boolean }>;
export declare function unknownReason(get: Get, id: string): Promise<string | null>;
export declare function addLive(live: (Point & { n?: number })[], msg: Readonly<Record<string, unknown>>, options: { bucket: Bucket; after?: number }): boolean;
