import { D } from "./decimal.ts";

/** The methodology version this module implements. Receipts declare it; the verifier refuses any other. */
export const METHODOLOGY_VERSION = "1.0.0";

/** EWMA weight of the newest raw discount (decision, frozen in receipts). */
export const ALPHA = new D("0.3");
/** Entry dwell: seconds a worsening candidate must persist before it commits. */
export const CONFIRM_UP_SECS = 30;
/** Exit dwell: seconds an improving candidate must persist before it commits. */
export const DECAY_DOWN_SECS = 120;
/** Spread-path Schmitt deadband, percent of each threshold. */
export const DEADBAND_PCT = 25;
/** Collateral-ratio-path Schmitt deadband, percent of each threshold. */
export const CR_DEADBAND_PCT = 2;

export const DEFAULT_DRIFT_BPS = 20;
export const DEFAULT_DEPEG_BPS = 100;
export const DEFAULT_CRITICAL_BPS = 300;
export const DEFAULT_CR = { cr_drift: 150, cr_depeg: 130, cr_critical: 110, cr_black_swan: 100 } as const;

/** Gate bounds in bps of |d_smooth| (or of |conf/price|); strict: exactly the bound passes. */
export const PREMIUM_SANITY_BPS = 1000;
export const DISCOUNT_SANITY_BPS = 3000;
export const ORACLE_CONFIDENCE_BPS = 500;

/** Confidence buckets, bps of the worst |conf/price|, inclusive upper bounds. */
export const CONFIDENCE_HIGH_BPS = 10;
export const CONFIDENCE_MEDIUM_BPS = 100;

/** Seconds a DRIFT-or-worse committed state must be held to count as sustained (display only; configurable). */
export const DEFAULT_SUSTAINED_SECS = 900;
