// Types of model.js for the TypeScript tests.
export interface Transition {
  readonly id: string;
  readonly asset: string;
  readonly from_state: string | null;
  readonly to_state: string | null;
  readonly discount: string | null;
  readonly at: string | null;
  readonly receipt_url: string | null;
  readonly monitoring_only: boolean | null;
}
export interface Card {
  readonly symbol: string;
  readonly class?: string | null;
  readonly state?: string | null;
  readonly discount?: string | null;
  readonly risk_score?: number | null;
  readonly updated_at?: string | null;
  readonly series_24h?: readonly (number | null)[] | null;
  readonly [key: string]: unknown;
}
export declare function normaliseTransition(x: unknown): Transition | null;
export declare class Feed {
  constructor(max?: number);
  readonly max: number;
  readonly rows: Transition[];
  add(items: readonly unknown[]): boolean;
}
export declare function applyLive<C extends Card>(card: C, msg: Readonly<Record<string, unknown>>): C;
export declare function mergeRest<C extends Card>(previous: C | undefined, fresh: C): C;
export declare function filterCards<C extends Card>(cards: readonly C[], filters?: { cls?: string; state?: string }): C[];
export declare function sortCards<C extends Card>(cards: readonly C[], key?: "severity" | "symbol" | "discount" | "risk"): C[];
export interface StateSummary {
  readonly total: number;
  readonly counts: Readonly<Record<"PEGGED" | "DRIFT" | "DEPEG" | "CRITICAL" | "BLACK_SWAN" | "UNKNOWN", number>>;
  readonly monitoringOnly: number;
}
export declare function stateSummary(cards: readonly Card[]): StateSummary;
