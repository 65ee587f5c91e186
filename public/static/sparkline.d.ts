// Types of sparkline.js for the TypeScript tests.
export interface SparkOptions {
  readonly width?: number;
  readonly height?: number;
  readonly pad?: number;
}
export type Series = readonly (number | null)[] | null | undefined;
export declare function sparklinePath(series: Series, options?: SparkOptions): string;
export declare function sparklineZeroY(series: Series, options?: SparkOptions): number | null;
export declare function sparklineSvg(series: Series, options?: SparkOptions & { readonly label?: string }): string;
export interface TrailPoint {
  v: number;
  n: number;
}
export type Trail = Map<number, TrailPoint>;
export declare const YOUNG_BUCKETS: number;
export declare function isYoung(series: Series): boolean;
export declare function trailFromRows(rows: readonly Readonly<Record<string, unknown>>[] | null | undefined): Trail;
export declare function trailAdd(trail: Trail, msg: Readonly<Record<string, unknown>>): boolean;
export declare function trailSeries(trail: Trail): (number | null)[] | null;
