// Types of chart.js for the TypeScript tests.
export type Bucket = "raw" | "1m";
export interface Level {
  readonly state: "DRIFT" | "DEPEG" | "CRITICAL" | "BLACK_SWAN";
  readonly bps: number;
}
export interface Point {
  t: number;
  v: number;
  lo: number;
  hi: number;
  state: string | null;
}
export interface ChartTransition {
  readonly id: string;
  readonly t: number;
  readonly from_state: string | null;
  readonly to_state: string | null;
  readonly v: number | null;
  reason: string | null;
}
export interface Period {
  readonly from: number;
  readonly to: number;
  readonly reason: string;
}
export interface ChartModel {
  readonly from: number;
  readonly to: number;
  readonly bucket: Bucket;
  readonly points: readonly Point[];
  readonly live?: readonly Point[];
  readonly transitions?: readonly ChartTransition[];
  readonly levels?: readonly Level[] | null;
  readonly sides?: readonly number[];
  readonly unknown?: readonly Period[];
}
export declare const RANGES: Readonly<Record<"1h" | "24h" | "7d" | "30d", number>>;
export declare const RAW_MAX_SPAN_MS: number;
export declare const STALE_MS: number;
export declare function bucketFor(spanMs: number): Bucket;
export declare function bandLevels(thresholds: unknown): Level[] | null;
export declare function riskSides(cls: string | null | undefined): number[];
export declare function toPoints(rows: readonly Readonly<Record<string, unknown>>[]): Point[];
export declare function unknownPeriods(points: readonly Point[], transitions: readonly ChartTransition[], options: { to: number; staleMs?: number }): Period[];
export declare function valueDomain(values: readonly number[], levels: readonly Level[] | null, sides: readonly number[]): [number, number];
export declare function ticks(lo: number, hi: number, count?: number): number[];
export declare function chartSvg(model: ChartModel, options?: { width?: number; height?: number }): string;
