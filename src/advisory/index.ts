/**
 * Advisory leverage figures (interface 2.7, 2.8 `systemic`, 4.2): the lending-position model, liquidation cascades,
 * the privacy rule and their wire forms. Pure: decimal math only, no I/O, no clock; never part of a receipt.
 */
export { isLeveraged, lendingPosition, PositionError, type LendingPosition } from "./position.ts";
export { healthAfterShock, isShockBps, liquidatableAt, shockFactor, SHOCK_BPS, type ShockBps } from "./cascade.ts";
export {
  chainPublication,
  crossPublishable,
  partitionPublication,
  positionsLabel,
  PRIVACY_FLOOR,
  publication,
  publishable,
  totals,
  type Publication,
} from "./privacy.ts";
export { lazyExposures, loopExposure, loopExposureByMint, positionsByMint, type CascadeRungFigure, type ExposureLookup, type Coverage, type LoopExposure, type ProtocolFigure } from "./exposure.ts";
export {
  ADVISORY_NOTE,
  loopExposureBody,
  simulateDepegBody,
  systemicBody,
  type CascadeRungBody,
  type LoopExposureBody,
  type ProtocolBody,
  type SimulateDepegBody,
  type SystemicBody,
} from "./wire.ts";
export type { ExposureReader, ExposureSnapshot } from "./reader.ts";
