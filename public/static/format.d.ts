// Types of format.js for the TypeScript tests.
export declare const PEG_STATES: readonly string[];
export declare const ASSET_CLASSES: readonly string[];
export declare function severityRank(state: string | null | undefined): number;
export declare function displayState(state: string | null | undefined): string;
export declare function parseDecimal(value: unknown): { negative: boolean; digits: string; exp: number } | null;
export declare function scaleDecimal(value: string | number, shift: number, places: number): string | null;
export declare function discountBps(discount: string | number | null | undefined): string | null;
export declare function bpsText(discount: string | number | null | undefined): string;
export declare function riskText(score: number | null | undefined): string;
export declare function parseTime(iso: unknown): number | null;
export declare function relativeTime(iso: string | null | undefined, nowMs: number): string;
export declare function countdownText(candidate: string | null | undefined, deadlineIso: string | null | undefined, nowMs: number): string | null;
export declare function thresholdsText(t: Readonly<Record<string, number>> | null | undefined): string;
export declare function escapeXml(value: unknown): string;
export declare function assetHref(symbol: string): string;
export declare function receiptHref(id: string): string;
