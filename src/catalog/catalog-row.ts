/**
 * The public description of one catalog asset (`peg-oracle catalog --json`, the agent tools' catalog resource): its
 * identity, class and what the service derives from it (anchor, risk side, calibration), and its thresholds as stored.
 */
import type { CatalogAsset } from "./catalog.ts";

/** One asset as `peg-oracle catalog --json` prints it. */
export interface CatalogRow {
  readonly symbol: string;
  readonly name: string;
  readonly mint: string;
  readonly class: CatalogAsset["class"];
  readonly anchor: CatalogAsset["anchor"];
  readonly peg_target: string;
  readonly decimals: number;
  readonly active: boolean;
  readonly monitoring_only: boolean;
  readonly calibration: CatalogAsset["calibration"];
  readonly risk_side: CatalogAsset["riskSide"];
  readonly threshold_kind: CatalogAsset["thresholdKind"];
  readonly thresholds: CatalogAsset["thresholds"];
}

export function catalogRow(a: CatalogAsset): CatalogRow {
  return {
    symbol: a.symbol,
    name: a.name,
    mint: a.mint,
    class: a.class,
    anchor: a.anchor,
    peg_target: a.pegTarget,
    decimals: a.decimals,
    active: a.active,
    monitoring_only: a.monitoringOnly,
    calibration: a.calibration,
    risk_side: a.riskSide,
    threshold_kind: a.thresholdKind,
    thresholds: a.thresholds,
  };
}
