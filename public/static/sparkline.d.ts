// Types of sparkline.js for the TypeScript tests.
export interface SparkOptions {
  readonly width?: number;
  readonly height?: number;
  readonly pad?: number;
}
export type Series = readonly (number | null)[] | null | undefined;
export declare function sparklinePath(series: Series, options?: SparkOptions): string;
export declare function sparklineZeroY(series: Series, options?: SparkOptions): number | null;
export declare function sparklineSvg(series: Series, options?: SparkOptions): string;
