/** Helpers shared by the route modules. */
import type { CatalogAsset } from "../../catalog/index.ts";
import { assetNotFound } from "../errors.ts";
import type { ReadModel } from "../read-model.ts";
import type { CardContext } from "./asset-card.ts";

/** The active asset with this exact (case-sensitive) symbol, or a 404 `asset_not_found` naming it. */
export function activeAsset(rm: ReadModel, symbol: string): CatalogAsset {
  const a = rm.catalog.bySymbol(symbol);
  if (a === undefined || !a.active) throw assetNotFound(symbol);
  return a;
}

export function cardContext(rm: ReadModel, now: number): CardContext {
  return { now, catalog: rm.catalog, sustainedSecs: rm.config.sustainedSecs };
}

/** Path of an alert's public receipt, relative to the service base address. */
export const receiptPath = (id: string): string => `/v1/audit/${id}`;

export const clamp = (n: number, min: number, max: number): number => Math.min(max, Math.max(min, n));
