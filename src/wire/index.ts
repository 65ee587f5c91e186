/** Wire format: the one public entry of src/wire. Route and stream code import from here, never from the files. */
export {
  D,
  decimalToWire,
  parseDecimal,
  parseTimestamp,
  timestampToWire,
  usdAggregateToWire,
  usdAggregateOrNull,
  decimalOrNull,
  timestampOrNull,
  bpsToWireInt,
  type Decimal,
  type EpochMs,
} from "./format.ts";
export { listEnvelope, type ListEnvelope, type ListEnvelopeExtra } from "./envelope.ts";
