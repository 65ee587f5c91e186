/**
 * The asset catalog: the tracked Solana tokens (identity, class, thresholds, price sources), validated once and
 * served read-only. Depends on the methodology only.
 */
export {
  ANCHORS,
  CALIBRATIONS,
  CATALOG_ERROR_CODES,
  RISK_SIDES,
  SHIPPED_CATALOG_URL,
  CatalogError,
  anchorOf,
  loadCatalog,
  loadShippedCatalog,
  riskSideOf,
  type Anchor,
  type Calibration,
  type Catalog,
  type CatalogAsset,
  type CatalogEntry,
  type PriceSource,
  type RiskSide,
} from "./catalog.ts";
export { catalogRow, type CatalogRow } from "./catalog-row.ts";
export { BASE58_ALPHABET, Base58Error, base58Decode, base58Encode, isBase58OfLength } from "./base58.ts";
