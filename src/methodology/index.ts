/**
 * Peg-risk methodology 1.0.0: pure, decimal, deterministic. The engine, the offline verifier and the tests call the
 * same functions. No clock, no I/O, no floats, and no Node built-ins (SHA-256 is @noble/hashes'): the client package
 * (`packages/client`, `verifyReceipt`) runs this very code in browsers.
 */
export * from "./types.ts";
export * from "./constants.ts";
export { D, ZERO, ONE, MIN_EXPONENT, cmp, cmpAbs, parseDecimal, isDecimalText, decimalToWire, toD, type Decimal } from "./decimal.ts";
export { parseTimestamp, timestampToWire, type EpochMs } from "./time.ts";
export {
  rank,
  bpsOf,
  crPct,
  classifySpread,
  classifySpreadPlain,
  classifyCr,
  classifyCrPlain,
  spreadEntryLevels,
  spreadExitLevels,
  crEntryLevels,
  crExitLevels,
  hasPremiumCarveOut,
  isCrThresholds,
  thresholdKind,
} from "./bands.ts";
export { rawDiscount, plausible, ewma } from "./discount.ts";
export { dwell, dwellDeadline, type DwellState, type DwellWindows } from "./dwell.ts";
export {
  confidenceOf,
  firstGate,
  gateStateReason,
  oracleConfBps,
  oracleSpread,
  type GateInputs,
  type OracleSpread,
} from "./gates.ts";
export { confidence, hasOracleDependency, riskScore, sustained } from "./display.ts";
export {
  evaluate,
  step,
  deadlineOf,
  INITIAL_STATE,
  DEFAULT_STEP_OPTIONS,
  type AssetState,
  type Computed,
  type Decision,
  type Evaluation,
  type Inputs,
  type SkipReason,
  type StepOptions,
  type StepOutcome,
  type StepResult,
  type StepTrigger,
} from "./evaluate.ts";
export { alertId, buildReceipt, receiptHash, replayBundle, type Receipt, type ReceiptContext, type ReplayBundle } from "./receipt.ts";
export {
  computedFromWire,
  computedToWire,
  inputsFromWire,
  inputsToWire,
  methodologyAssetFrom,
  parseThresholds,
  ReceiptFormatError,
  type ComputedWire,
  type InputsFrozen,
  type OracleEntryWire,
} from "./receipt-wire.ts";
export { diffComputed, rederive, stateFromReceipt, verifyBundle, VERIFY_EXIT, type VerifyResult } from "./receipt-verify.ts";
export { sampleFromWire, sampleToWire, SampleFormatError, type SampleWire } from "./sample-wire.ts";
export { FieldError } from "./errors.ts";
export {
  LIFECYCLE_DOC,
  METHODOLOGY_STATUSES,
  MethodologyRegistryError,
  SHIPPED_REGISTRY,
  compareVersions,
  lifecycleAnchor,
  ownRelease,
  parseRegistry,
  parseRelease,
  releaseOf,
  startupVerdict,
  type MethodologyRegistry,
  type MethodologyRelease,
  type MethodologyStatus,
  type StartupVerdict,
} from "./lifecycle.ts";
