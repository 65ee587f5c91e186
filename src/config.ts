/**
 * Service configuration: the one place environment text becomes typed values (addendum G).
 *
 * `parseConfig` never reads `process.env` itself; `main.ts` passes the environment in, so tests and the CLI can build
 * a configuration from a plain object. Every problem is collected before anything throws, so an operator fixes a
 * broken deployment in one round trip instead of one variable per restart.
 */
import { join } from "node:path";
import { DEFAULT_SUSTAINED_SECS, SHIPPED_REGISTRY, ownRelease, type MethodologyRelease } from "./methodology/index.ts";
import { parseSecretsKey } from "./secret-box.ts";
import { DEFAULT_PRICES, X402_NETWORKS, parseNetwork, parsePayTo, parsePrices, type X402Config } from "./x402/config.ts";
import type { AnchorConfig, ConfigVariable, DatabaseConfig, FeaturesConfig, FeedConfig, LogLevel, NatsConfig, Role, SourcesConfig } from "./config/kinds.ts";
import { deepFreeze, redactUrlText, shown } from "./config/redact.ts";
import { bad, ok, integerIn, listOf, parseBoolean, parseDatabaseUrl, parseDataDir, parseFeed, parseGitSha, parseHost, parseHostHeader, parseHttpUrl, parseIp, parseJwtSecret, parseLogLevel, parseMethodologyRegistry, parseNatsUrls, parseOrigin, parsePortList, parseRole, parseSpeed, parseToken, parseTrustProxy, type Parsed } from "./config/values.ts";

// The kinds of value a setting takes, their parsers and the redaction live in src/config/; this module is the
// configuration itself (its variables, `parseConfig`, notices) and the one entry the rest of the service imports.
export type { AnchorConfig, ConfigVariable, DatabaseConfig, FeaturesConfig, FeedConfig, LogLevel, NatsConfig, Role, SourcesConfig } from "./config/kinds.ts";
export { redactUrlText } from "./config/redact.ts";
import { CONFIG_VARIABLES, type ConfigVariableName } from "./config/variables.ts";
export { CONFIG_VARIABLES, type ConfigVariableName };

/** The validated, deeply frozen service configuration. Built once by `parseConfig`. */
export interface Config {
  /** TCP port of the HTTP/WebSocket server, 1–65535. Default 8080. */
  readonly port: number;
  /** Listen address (IP or host name). Default `0.0.0.0`. */
  readonly host: string;
  /** Listen address of the Prometheus `/metrics` listener (operators only, never the public port). Default `127.0.0.1`. */
  readonly metricsHost: string;
  /** Port of the `/metrics` listener, 0-65535 (0: any free port, logged at start). Default 9464. */
  readonly metricsPort: number;
  /** Directory for local state (PGlite, the embedded NATS store), as given; relative to the working directory. Default `./data`. */
  readonly dataDir: string;
  readonly database: DatabaseConfig;
  readonly nats: NatsConfig;
  /**
   * Key that seals private keys at rest (webhook signing keys, the generated fee payer): 64 hex digits or base64 of
   * 32 bytes, as given; null when unset (then required with DATABASE_URL, generated in DATA_DIR/secrets.key on the
   * embedded default). Secret.
   */
  readonly secretsKey: string | null;
  /** Default `{kind: "sim"}`. */
  readonly feed: FeedConfig;
  /** Seed of the simulated market (FEED=sim), 0 to 2^32 - 1. Default 1. */
  readonly simSeed: number;
  /** Mean milliseconds between simulated incidents (FEED=sim); 0 disables them. Default 600,000 (10 minutes). */
  readonly simIncidentEveryMs: number;
  /** Milliseconds between simulated ticks (one sample per asset each), FEED=sim. Default 1,000. */
  readonly simTickMs: number;
  /** Simulated-clock speed multiplier for scenario feeds, > 0 (2 = twice real time). Default 1. */
  readonly scenarioSpeed: number;
  /**
   * Where an engine (ROLE=engine) taking over an asset of a scenario feed finds the samples it missed: `file` (the
   * scenario itself, default) or `received` (only what this process received, as with a live feed: rehearses a
   * live failover on a replayable, checkable feed).
   */
  readonly scenarioCatchUp: "file" | "received";
  /** Port of a local @statelyai/inspect WebSocket bridge the actors stream to; null (default) when not inspecting. */
  readonly inspectPort: number | null;
  /** HS256 key for session JWTs, at least 32 bytes; null when unset (auth disabled). Secret. */
  readonly jwtSecret: string | null;
  /** Telegram bot token; null when unset. Secret. */
  readonly telegramBotToken: string | null;
  /** Bot API base URL of alert messages (`<base>/bot<token>/sendMessage`). Default `https://api.telegram.org`. */
  readonly telegramApiUrl: string;
  readonly features: FeaturesConfig;
  /** Browser origins allowed by CORS, normalised (`https://app.example.com`). Default none. */
  readonly corsOrigins: readonly string[];
  /** Public read requests per minute per client IP, >= 1. Default 60. */
  readonly rateLimitPerMin: number;
  /**
   * Prefix length, in bits (1-128), that keys an IPv6 client's rate-limit budget: every address in one /64 (the
   * default) shares one budget, as one home or cloud connection holds a whole /64. IPv4 clients are keyed by address.
   */
  readonly rateLimitIpv6Prefix: number;
  /**
   * Requests per minute per client IP on `/mcp` (MCP_RATE_LIMIT_PER_MIN), a budget of its own instead of
   * RATE_LIMIT_PER_MIN: a stateless MCP session spends three requests before its first tool call. Default 600.
   */
  readonly mcpRateLimitPerMin: number;
  /**
   * `Host` values `/mcp` accepts besides localhost, 127.0.0.1 and [::1] on PORT and the hosts of PUBLIC_BASE_URL and
   * WEBHOOK_BASE_URL (MCP_ALLOWED_HOSTS, DNS-rebinding protection), lower-case: `name` (any port) or `name:port`.
   * Default none.
   */
  readonly mcpAllowedHosts: readonly string[];
  /** Take the client IP from `X-Forwarded-For` (only behind a trusted proxy). Default false. */
  readonly trustProxy: boolean;
  /**
   * Addresses of the trusted reverse proxies (TRUST_PROXY given as a list). Empty with `trustProxy` true means "the
   * directly connected peer is the one trusted proxy". The client is the right-most X-Forwarded-For hop that is not a
   * trusted proxy.
   */
  readonly trustedProxies: readonly string[];
  /**
   * Lower-case hex commit of the running build, hashed into receipts. Default: the commit `parseConfig` is given as
   * `build.gitSha` (main.ts reads it from the checkout or build-info.json: src/build-info.ts); `""` when unknown.
   */
  readonly gitSha: string;
  /** Enables the methodology's intrinsic-liveness gate. Default false. */
  readonly intrinsicLivenessGate: boolean;
  /** Seconds a DRIFT-or-worse state must be held to count as `sustained`, >= 1. Default 900. */
  readonly sustainedSecs: number;
  /** Default `info`. */
  readonly logLevel: LogLevel;
  /** Source addresses of webhook deliveries, published at `/v1/meta/webhook-ips`. Default none. */
  readonly webhookIps: readonly string[];
  /**
   * Multiplier of the webhook retry waits (0 s, 5 s, 30 s, 5 min, 30 min, 2 h) and of a 429's Retry-After, a
   * positive decimal. Default 1; tests use e.g. 0.001 to run the whole schedule in seconds.
   */
  readonly webhookTimeScale: number;
  /**
   * Public base URL of this API, used for webhook events' `evidence_url`: WEBHOOK_BASE_URL, else PUBLIC_BASE_URL.
   * Default `http://localhost:<PORT>`.
   */
  readonly webhookBaseUrl: string;
  /**
   * The one public base URL of this API (PUBLIC_BASE_URL, no trailing slash) for the absolute URLs the service gives
   * out (the x402 challenges' `resource.url`; webhook links when WEBHOOK_BASE_URL is unset) and a `Host` `/mcp`
   * accepts. Unset: WEBHOOK_BASE_URL, else `http://localhost:<PORT>` (`publicBaseUrlFrom` says which; the serving
   * process warns unless it is PUBLIC_BASE_URL).
   */
  readonly publicBaseUrl: string;
  readonly publicBaseUrlFrom: "PUBLIC_BASE_URL" | "WEBHOOK_BASE_URL" | "PORT";
  /**
   * Destination ports webhook URLs may name besides 443 (the https default), ascending. Default none: any other port
   * is refused at registration and at delivery, so /test and delivery errors cannot probe other services' ports.
   */
  readonly webhookAllowedPorts: readonly number[];
  readonly sources: SourcesConfig;
  /** Market-wide Kamino obligations for the advisory loop-exposure figures; null (default): simulated positions. */
  readonly kaminoPositionsUrl: string | null;
  /**
   * Lifecycle entry of the methodology this build implements (interface 2.12), from the registry file named by
   * `METHODOLOGY_REGISTRY` or, unset, the shipped `src/methodology/registry.json`. Served at /v1/methodology/current;
   * `serve` refuses to start when it is broken (docs/methodology-lifecycle.md).
   */
  readonly methodology: MethodologyRelease;
  readonly anchor: AnchorConfig;
  /** Which parts this process runs. Default `all`. */
  readonly role: Role;
  /** JetStream replicas of the streams and buckets the service creates, 1-5 (3 on a three-node cluster). Default 1. */
  readonly natsReplicas: number;
  /** Engines lease partitions of the assets (LEASE_PARTITIONS > 0) or each asset (0, the default). */
  readonly leasePartitions: number;
  /**
   * ROLE=engine (INTAKE): `shared` (the default with LEASE_PARTITIONS > 0): one engine at a time polls the feed for the
   * cluster and publishes to PEG_INTAKE, each engine evaluates its partitions from there; `local`: every engine runs
   * the whole feed and drops what it does not lease (the only way with per-asset leases).
   */
  readonly intake: "shared" | "local";
  /**
   * How far back history is kept (issue 25; HISTORY_RAW_DAYS, HISTORY_1M_DAYS): raw samples 7 days, 1-minute rollups
   * 90 days by default, dropped by whole day partitions (up to a day more is kept). Transitions and receipts are never
   * dropped. `samplesStreamMaxBytes` (SAMPLES_STREAM_MAX_GB, 10 GiB) bounds JetStream's `PEG_SAMPLES` besides its 24 h.
   */
  readonly history: { readonly rawDays: number; readonly rollupDays: number; readonly samplesStreamMaxBytes: number };
  /** The agent tools' x402 payments (docs/agents.md); `payTo` null (the default): paid tools off. */
  readonly x402: X402Config;
}


/** One rejected variable. `value` is what was received, shown safely: secrets are `[redacted]`, URL credentials masked. */
export interface ConfigIssue {
  readonly name: ConfigVariableName;
  readonly value: string;
  readonly message: string;
}

export const CONFIG_ERROR_CODE = "invalid_config";

/** Thrown by `parseConfig` with every invalid variable at once; the message has one line per issue. */
export class ConfigError extends Error {
  override readonly name = "ConfigError";
  readonly code = CONFIG_ERROR_CODE;
  readonly issues: readonly ConfigIssue[];

  constructor(issues: readonly ConfigIssue[]) {
    const lines = issues.map((i) => `  ${i.name}=${i.value}: ${i.message}`);
    super(`invalid configuration (${issues.length} ${issues.length === 1 ? "problem" : "problems"}):\n${lines.join("\n")}`);
    this.issues = Object.freeze(issues.map((i) => Object.freeze({ ...i })));
  }
}

const VARIABLE = new Map<string, ConfigVariable>(CONFIG_VARIABLES.map((v) => [v.name, v]));
/**
 * Builds the configuration from environment text. Empty (or blank) values count as unset, so `FOO=` in an env file
 * means "use the default". Throws one `ConfigError` listing every invalid variable. `build.gitSha` is the running
 * code's commit, GIT_SHA's default (absent: `""`).
 */
export function parseConfig(env: Readonly<Record<string, string | undefined>>, build: { readonly gitSha?: string } = {}): Config {
  const issues: ConfigIssue[] = [];

  /** Reads one variable (or its default) through `parse`; records an issue and returns `fallback` on failure. */
  function read<T>(name: ConfigVariableName, parse: (text: string) => Parsed<T>, fallback: T): T;
  function read<T>(name: ConfigVariableName, parse: (text: string) => Parsed<T>): T | null;
  function read<T>(name: ConfigVariableName, parse: (text: string) => Parsed<T>, fallback: T | null = null): T | null {
    const variable = VARIABLE.get(name)!;
    const given = env[name];
    // Secrets are key material and used byte for byte; other values are trimmed because env files often carry
    // stray spaces or a carriage return.
    const text = given === undefined || given.trim() === "" ? null : variable.secret ? given : given.trim();
    // An empty default ("no origins", "no commit") is the fallback itself, not text to parse.
    const source = text ?? (variable.default === "" ? null : variable.default);
    if (source === null) return fallback;
    const result = parse(source);
    if (result.ok) return result.value;
    issues.push({ name, value: shown(variable, source), message: result.expected });
    return fallback;
  }

  const dataDir = read("DATA_DIR", parseDataDir, "./data");
  const databaseUrl = read("DATABASE_URL", parseDatabaseUrl);
  const natsServers = read("NATS_URL", parseNatsUrls);
  const jwtSecret = read("JWT_SECRET", parseJwtSecret);
  const telegramBotToken = read("TELEGRAM_BOT_TOKEN", parseToken);

  const config: Config = {
    port: read("PORT", integerIn(1, 65_535), 8080),
    host: read("HOST", parseHost, "0.0.0.0"),
    metricsHost: read("METRICS_HOST", parseHost, "127.0.0.1"),
    metricsPort: read("METRICS_PORT", integerIn(0, 65_535), 9464),
    dataDir,
    database: databaseUrl === null ? { kind: "pglite", dataDir: join(dataDir, "pg") } : { kind: "postgres", url: databaseUrl },
    nats: natsServers === null ? { kind: "embedded", storeDir: join(dataDir, "nats") } : { kind: "external", servers: natsServers },
    secretsKey: read("SECRETS_KEY", (t) => (parseSecretsKey(t) === null ? bad("expected 32 bytes as base64 (openssl rand -base64 32) or 64 hex digits") : ok(t.trim()))),
    feed: read("FEED", parseFeed, { kind: "sim" }),
    simSeed: read("SIM_SEED", integerIn(0, 4_294_967_295), 1),
    simIncidentEveryMs: read("SIM_INCIDENT_EVERY_MS", integerIn(0, 86_400_000), 600_000),
    simTickMs: read("SIM_TICK_MS", integerIn(1, 60_000), 1_000),
    scenarioSpeed: read("SCENARIO_SPEED", parseSpeed, 1),
    scenarioCatchUp: read("SCENARIO_CATCHUP", (t) => (t === "file" || t === "received" ? ok(t) : bad("expected file or received")), "file"),
    inspectPort: read("INSPECT_PORT", integerIn(1, 65_535)),
    jwtSecret,
    telegramBotToken,
    telegramApiUrl: read("TELEGRAM_API_URL", parseHttpUrl, "https://api.telegram.org"),
    features: {
      auth: jwtSecret !== null,
      telegramLogin: jwtSecret !== null && telegramBotToken !== null,
      telegramBot: telegramBotToken !== null,
    },
    corsOrigins: read("CORS_ORIGINS", listOf(parseOrigin, "origins"), []),
    rateLimitPerMin: read("RATE_LIMIT_PER_MIN", integerIn(1, 1_000_000), 60),
    rateLimitIpv6Prefix: read("RATE_LIMIT_IPV6_PREFIX", integerIn(1, 128), 64),
    mcpRateLimitPerMin: read("MCP_RATE_LIMIT_PER_MIN", integerIn(1, 1_000_000), 600),
    mcpAllowedHosts: read("MCP_ALLOWED_HOSTS", listOf(parseHostHeader, "hosts"), []),
    ...(() => {
      const t = read("TRUST_PROXY", parseTrustProxy, { trust: false, proxies: [] as readonly string[] });
      return { trustProxy: t.trust, trustedProxies: t.proxies };
    })(),
    gitSha: read("GIT_SHA", parseGitSha, build.gitSha ?? ""),
    intrinsicLivenessGate: read("INTRINSIC_LIVENESS_GATE", parseBoolean, false),
    // Capped so the window in milliseconds still fits a timer (2^31 - 1 ms, about 24.8 days).
    sustainedSecs: read("SUSTAINED_SECS", integerIn(1, 2_147_483), DEFAULT_SUSTAINED_SECS),
    logLevel: read("LOG_LEVEL", parseLogLevel, "info"),
    webhookIps: read("WEBHOOK_IPS", listOf(parseIp, "IP addresses"), []),
    webhookTimeScale: read("WEBHOOK_TIME_SCALE", parseSpeed, 1),
    webhookBaseUrl: "", // set below, from PORT when unset
    publicBaseUrl: "", // likewise
    publicBaseUrlFrom: "PORT",
    webhookAllowedPorts: read("WEBHOOK_ALLOWED_PORTS", parsePortList, []),
    sources: {
      pythHermesUrl: read("PYTH_HERMES_URL", parseHttpUrl, "https://hermes.pyth.network"),
      jupiterApiUrl: read("JUPITER_API_URL", parseHttpUrl, "https://api.jup.ag"),
      jupiterApiKey: read("JUPITER_API_KEY", parseToken),
      sanctumApiUrl: read("SANCTUM_API_URL", parseHttpUrl, "https://sanctum-api.ironforge.network"),
      solanaRpcUrl: read("SOLANA_RPC_URL", parseHttpUrl, "https://api.mainnet-beta.solana.com"),
    },
    kaminoPositionsUrl: read("KAMINO_POSITIONS_URL", parseHttpUrl),
    methodology: read("METHODOLOGY_REGISTRY", parseMethodologyRegistry, ownRelease(SHIPPED_REGISTRY)),
    anchor: {
      enabled: env["SOLANA_RPC_URL"] !== undefined && env["SOLANA_RPC_URL"].trim() !== "",
      keypairPath: read("ANCHOR_KEYPAIR", (t) => (t.includes("\0") ? bad("expected a file path") : ok(t))),
      dailyBudget: read("ANCHOR_DAILY_BUDGET", integerIn(0, 100_000), 100),
    },
    role: read("ROLE", parseRole, "all"),
    natsReplicas: read("NATS_REPLICAS", integerIn(1, 5), 1),
    leasePartitions: read("LEASE_PARTITIONS", integerIn(0, 4096), 0),
    intake: "local",
    history: { rawDays: read("HISTORY_RAW_DAYS", integerIn(1, 3650), 7), rollupDays: read("HISTORY_1M_DAYS", integerIn(1, 3650), 90), samplesStreamMaxBytes: read("SAMPLES_STREAM_MAX_GB", integerIn(1, 100_000), 10) * 2 ** 30 },
    x402: {
      payTo: read("X402_PAY_TO", parsePayTo),
      network: read("X402_NETWORK", parseNetwork, X402_NETWORKS[0]!),
      prices: read("X402_PRICES", parsePrices, DEFAULT_PRICES),
      facilitatorUrl: read("X402_FACILITATOR_URL", parseHttpUrl),
      answerWindowMs: read("X402_ANSWER_WINDOW_HOURS", integerIn(1, 720), 24) * 3_600_000,
    },
  };
  const publicUrl = read("PUBLIC_BASE_URL", parseHttpUrl);
  const baseUrl = read("WEBHOOK_BASE_URL", parseHttpUrl);
  const intake = read("INTAKE", (t): Parsed<Config["intake"]> => (t === "shared" || t === "local" ? ok(t) : bad("expected shared or local")));
  (config as { intake: Config["intake"] }).intake = intake ?? (config.leasePartitions > 0 ? "shared" : "local");
  if (config.intake === "shared" && config.leasePartitions === 0) {
    issues.push({ name: "INTAKE", value: '"shared"', message: "needs LEASE_PARTITIONS > 0: engines read the shared intake by partition" });
  }
  if (config.metricsPort === config.port) {
    issues.push({ name: "METRICS_PORT", value: JSON.stringify(String(config.metricsPort)), message: "must differ from PORT: /metrics has a listener of its own" });
  }

  if (issues.length > 0) {
    const order = CONFIG_VARIABLES.map((v) => v.name as string);
    issues.sort((a, b) => order.indexOf(a.name) - order.indexOf(b.name));
    throw new ConfigError(issues);
  }
  const local = `http://localhost:${config.port}`;
  const publicBase = (publicUrl ?? baseUrl ?? local).replace(/\/+$/, "");
  const publicBaseUrlFrom: Config["publicBaseUrlFrom"] = publicUrl !== null ? "PUBLIC_BASE_URL" : baseUrl !== null ? "WEBHOOK_BASE_URL" : "PORT";
  return deepFreeze({ ...config, webhookBaseUrl: baseUrl ?? publicUrl ?? local, publicBaseUrl: publicBase, publicBaseUrlFrom });
}

/** Log lines for features switched off by a missing secret (addendum G: disable with a log line, never crash). */
export function featureNotices(config: Config): readonly string[] {
  const notes: string[] = [];
  if (!config.features.auth) notes.push("JWT_SECRET is not set: login and /v1/me/* routes are disabled");
  if (config.x402.payTo === null && config.x402.facilitatorUrl !== null) notes.push("X402_FACILITATOR_URL is set but X402_PAY_TO is not: the paid agent tools are off");
  if (!config.features.telegramBot) notes.push("TELEGRAM_BOT_TOKEN is not set: Telegram login and alert messages are disabled");
  else if (!config.features.telegramLogin) notes.push("JWT_SECRET is not set: Telegram login is disabled");
  return notes;
}

/** The start-up warning of a service whose PUBLIC_BASE_URL is unset (null when it is set). */
export function publicBaseUrlNotice(config: Config): string | null {
  if (config.publicBaseUrlFrom === "PUBLIC_BASE_URL") return null;
  return `PUBLIC_BASE_URL is not set: the absolute URLs this service gives out (x402 resource URLs) use ${config.publicBaseUrl}${config.publicBaseUrlFrom === "WEBHOOK_BASE_URL" ? " (WEBHOOK_BASE_URL)" : ", which clients elsewhere cannot reach"}`;
}

/** A copy of the configuration that is safe to log: secrets become `[set]`, URL credentials and queries are masked. */
export function describeConfig(config: Config): Record<string, unknown> {
  const secret = (v: string | null): string => (v === null ? "[unset]" : "[set]");
  return {
    ...config,
    database: config.database.kind === "postgres" ? { kind: "postgres", url: redactUrlText(config.database.url) } : config.database,
    nats: config.nats.kind === "external" ? { kind: "external", servers: config.nats.servers.map(redactUrlText) } : config.nats,
    jwtSecret: secret(config.jwtSecret),
    secretsKey: secret(config.secretsKey),
    telegramBotToken: secret(config.telegramBotToken),
    sources: {
      pythHermesUrl: redactUrlText(config.sources.pythHermesUrl),
      jupiterApiUrl: redactUrlText(config.sources.jupiterApiUrl),
      jupiterApiKey: secret(config.sources.jupiterApiKey),
      sanctumApiUrl: redactUrlText(config.sources.sanctumApiUrl),
      solanaRpcUrl: redactUrlText(config.sources.solanaRpcUrl),
    },
    x402: { ...config.x402, facilitatorUrl: config.x402.facilitatorUrl === null ? null : redactUrlText(config.x402.facilitatorUrl) },
  };
}
