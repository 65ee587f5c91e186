/** The kinds of value a setting parses to (src/config.ts builds the whole configuration from them). */

/** Where samples come from. `scenario` replays `scenarios/<name>.jsonl` on a simulated clock. */
export type FeedConfig =
  | { readonly kind: "sim" }
  | { readonly kind: "live" }
  | { readonly kind: "scenario"; readonly name: string };

/** Where rows are stored. Unset `DATABASE_URL` means an embedded PGlite database under `DATA_DIR/pg`. */
export type DatabaseConfig =
  | { readonly kind: "pglite"; readonly dataDir: string }
  | { readonly kind: "postgres"; readonly url: string };

/** Which NATS to use. Unset `NATS_URL` means the service starts its own nats-server with its store in `DATA_DIR/nats`. */
export type NatsConfig =
  | { readonly kind: "embedded"; readonly storeDir: string }
  | { readonly kind: "external"; readonly servers: readonly string[] };

export type LogLevel = "debug" | "info" | "warn" | "error";

/**
 * Which parts a process runs (docs/scaling.md). `all`: everything in one process (the single-machine deployment).
 * `engine`: intake, the actors of the assets it leases, projectors, webhook dispatch and delivery, anchoring; no HTTP.
 * `api`: HTTP, WebSocket and auth over the shared store and NATS; no actors, no intake.
 */
export type Role = "engine" | "api" | "all";

/** Base URLs of the live sources, without a trailing slash (unless they carry a query string). */
export interface SourcesConfig {
  /** Pyth Hermes price service. Default `https://hermes.pyth.network`. */
  readonly pythHermesUrl: string;
  /** Jupiter price/quote API. Default `https://api.jup.ag`. */
  readonly jupiterApiUrl: string;
  /** Jupiter API key, sent as a header; null when unset (keyless tier). Secret. */
  readonly jupiterApiKey: string | null;
  /** Sanctum LST API. Default `https://sanctum-api.ironforge.network`. */
  readonly sanctumApiUrl: string;
  /** Solana JSON-RPC endpoint. Default `https://api.mainnet-beta.solana.com`. */
  readonly solanaRpcUrl: string;
}

/**
 * Features that depend on an optional secret. A missing secret disables its feature (with a log line, see
 * `featureNotices`); it never stops the service from starting.
 */
export interface FeaturesConfig {
  /** Session JWTs and the `/v1/me/*` routes; needs `JWT_SECRET`. */
  readonly auth: boolean;
  /** Telegram login widget; needs `JWT_SECRET` (to issue the session) and `TELEGRAM_BOT_TOKEN` (to check it). */
  readonly telegramLogin: boolean;
  /** Alert messages through the Telegram Bot API; needs `TELEGRAM_BOT_TOKEN`. */
  readonly telegramBot: boolean;
}

/**
 * On-chain anchoring of receipts (methodology section 8). Enabled only when `SOLANA_RPC_URL` is set explicitly: the
 * default URL serves the live feed's reads, and a deployment must choose the cluster its commits are paid on.
 */
export interface AnchorConfig {
  /** True when `SOLANA_RPC_URL` was given; commits are then sent to `sources.solanaRpcUrl`. */
  readonly enabled: boolean;
  /** Solana CLI keypair file of the fee payer; null: a key generated on first start and kept in the store (sealed). */
  readonly keypairPath: string | null;
  /** Commits per UTC day, >= 0; past it a transition is `not_applicable` (cost-gated). Default 100. */
  readonly dailyBudget: number;
}

/** One row of the configuration reference (README, `--help`). `default: null` means unset by default. */
export interface ConfigVariable {
  readonly name: string;
  readonly default: string | null;
  readonly description: string;
  /** Secrets are never echoed, not even in error messages. */
  readonly secret: boolean;
}
