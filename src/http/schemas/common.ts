/**
 * Shared building blocks of the response schemas: the component registry the OpenAPI document is generated from,
 * wire primitives (interface 2.1), enumerations (interface 2.3), the ApiError body and the list envelope.
 *
 * Every schema registered with `component()` becomes `#/components/schemas/<id>` in the document; the route handlers
 * are typed from the same schemas (`z.output<typeof X>`), so the document cannot drift from what is served.
 */
import { z } from "zod";
import { ANCHORS, CALIBRATIONS, RISK_SIDES } from "../../catalog/index.ts";
import { ASSET_CLASSES, BANDS, CONFIDENCES, GATES, PEG_STATES } from "../../methodology/index.ts";
import { ERROR_CODES, type ErrorCode } from "../errors.ts";

export interface SchemaMeta {
  readonly id: string;
  readonly description?: string;
}

/** The registry behind `components.schemas`. Private to the HTTP layer (not zod's global registry). */
export const apiSchemas = z.registry<SchemaMeta>();

const byId = new Map<string, z.ZodType>();

/** Registers `schema` as the named component `id` and returns it unchanged. */
export function component<T extends z.ZodType>(id: string, schema: T, description?: string): T {
  if (byId.has(id)) throw new Error(`duplicate schema component ${id}`);
  apiSchemas.add(schema, description === undefined ? { id } : { id, description });
  byId.set(id, schema);
  return schema;
}

/** The registered schema of a component id (what a `$ref` in the document points at). */
export function schemaById(id: string): z.ZodType | undefined {
  return byId.get(id);
}

/** The component id of a registered schema, or undefined. */
export function componentId(schema: z.ZodType): string | undefined {
  return apiSchemas.get(schema)?.id;
}

// ---------------------------------------------------------------------------------------------------------------
// Wire primitives.

/** Exact decimal string, trailing zeros trimmed, no exponent (interface 2.1). */
export const Decimal = component(
  "Decimal",
  z.string().regex(/^-?(?:0|[1-9]\d*)(?:\.\d*[1-9])?$/),
  "Exact decimal as a JSON string, trailing zeros trimmed, never an exponent or a float. Compare by parsed value.",
);

/** RFC 3339 UTC with exactly three fractional digits and `Z`. */
export const Timestamp = component(
  "Timestamp",
  z.string().regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/).meta({ format: "date-time" }),
  "RFC 3339 UTC timestamp with millisecond precision and a Z suffix.",
);

export const Uuid = component(
  "Uuid",
  z.string().regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/).meta({ format: "uuid" }),
  "Lower-case UUID. Alert ids are deterministic (version-8 layout).",
);

export const Sha256Hex = component("Sha256Hex", z.string().regex(/^[0-9a-f]{64}$/), "Lower-case hex SHA-256 digest.");

export const Mint = component("Mint", z.string().regex(/^[1-9A-HJ-NP-Za-km-z]{32,44}$/), "Token mint address, base58.");

/** 64-bit integer (JSON number within the safe-integer range). */
export const Int64 = z.int().meta({ format: "int64" });
export const Count = z.int().min(0);

// ---------------------------------------------------------------------------------------------------------------
// Enumerations (interface 2.3).

export const PegState = component("PegState", z.enum(PEG_STATES), "Class-aware published peg state.");
export const Band = component("Band", z.enum(BANDS), "Committed band (a PegState other than UNKNOWN).");
export const AssetClass = component("AssetClass", z.enum(ASSET_CLASSES), "Asset class.");
export const Anchor = component("Anchor", z.enum(ANCHORS), "What the discount is measured against, derived from the class.");
export const Calibration = component("Calibration", z.enum(CALIBRATIONS), "`provisional` if and only if monitoring_only.");
export const Confidence = component("Confidence", z.enum(CONFIDENCES), "Price-oracle confidence bucket.");
export const RiskSide = component("RiskSide", z.enum(RISK_SIDES), "Which direction of the signed discount is the risk.");
export const GateName = component("GateName", z.enum(GATES), "Methodology gate that published UNKNOWN.");

/** On-chain anchoring status (interface part 3; `committed` once anchored). */
export const COMMIT_STATUS_VALUES = [
  "not_applicable",
  "not_committed_yet",
  "committed",
  "retry_exhausted",
  "wallet_drained",
  "persistence_failed",
] as const;
export const CommitStatus = component("CommitStatus", z.enum(COMMIT_STATUS_VALUES), "On-chain memo commit status of a receipt.");

export const EVIDENCE_STATUS_VALUES = ["ready", "pending", "failed_permanent", "unknown"] as const;
export const EvidenceStatus = component("EvidenceStatus", z.enum(EVIDENCE_STATUS_VALUES), "Availability of a receipt.");

// ---------------------------------------------------------------------------------------------------------------
// Errors (interface 2.6, addendum B).

export const ErrorCodeSchema = component(
  "ErrorCode",
  z.enum(ERROR_CODES as unknown as readonly [ErrorCode, ...ErrorCode[]]),
  "Stable machine-readable error code. Branch on it, never on `message`.",
);

export const ApiErrorSchema = component(
  "ApiError",
  z.looseObject({
    error: ErrorCodeSchema,
    message: z.string().meta({ description: "Human text. Not stable; never parse it." }),
    asset: z.string().nullable().optional().meta({ description: "Offending symbol; present only for asset-scoped errors." }),
  }),
  "The body of every error response.",
);

// ---------------------------------------------------------------------------------------------------------------
// List envelope (interface 2.1).

/** `{ok, generated_at, count, data}`; register the result with `component()`. */
export function listEnvelopeOf<T extends z.ZodType>(item: T) {
  return z.strictObject({
    ok: z.boolean(),
    generated_at: Timestamp,
    count: Count,
    data: z.array(item),
  });
}

/** A thresholds object as stored: the spread form in whole bps, or the collateral-ratio form in whole percent. */
export const SpreadThresholds = component(
  "SpreadThresholds",
  z.strictObject({
    drift_bps: z.int().min(0),
    depeg_bps: z.int().min(0),
    critical_bps: z.int().min(0),
    black_swan_bps: z.int().min(0).optional(),
  }),
  "Spread thresholds in whole basis points (black_swan_bps defaults to 2 x critical_bps).",
);

export const CrThresholds = component(
  "CrThresholds",
  z.strictObject({
    cr_drift: z.int().min(0),
    cr_depeg: z.int().min(0),
    cr_critical: z.int().min(0),
    cr_black_swan: z.int().min(0),
  }),
  "Collateral-ratio thresholds in whole percent (lower is worse).",
);

export const Thresholds = component("Thresholds", z.union([SpreadThresholds, CrThresholds]), "Per-asset thresholds, served as stored.");

/** A catalog entry exactly as shipped (hashed into receipts). */
export const CatalogEntry = component(
  "CatalogEntry",
  z.record(z.string(), z.unknown()),
  "A catalog entry exactly as shipped; hashed with JCS (RFC 8785) into every receipt.",
);
