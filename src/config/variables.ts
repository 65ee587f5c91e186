/**
 * The environment variables of the service: name, default, whether the value is a secret, and the description the
 * README's configuration table and `peg-oracle config` show. `parseConfig` (src/config.ts) reads them.
 */
import { DEFAULT_SUSTAINED_SECS } from "../methodology/index.ts";
import { DEFAULT_PRICES_TEXT } from "../x402/config.ts";
import type { ConfigVariable } from "./kinds.ts";

/** Every environment variable the service reads, in the order errors are reported. */
export const CONFIG_VARIABLES = [
  { name: "PORT", default: "8080", secret: false, description: "HTTP/WebSocket port, integer 1-65535." },
  { name: "HOST", default: "0.0.0.0", secret: false, description: "Listen address, an IP address or host name." },
  { name: "METRICS_HOST", default: "127.0.0.1", secret: false, description: "Listen address of the Prometheus /metrics listener, an IP address or host name. Loopback by default: /metrics is for operators and is not served on PORT." },
  { name: "METRICS_PORT", default: "9464", secret: false, description: "Port of the /metrics listener, integer 0-65535 and not PORT; 0 picks a free port (logged as metrics_port at start)." },
  { name: "DATA_DIR", default: "./data", secret: false, description: "Directory for local state (embedded database and NATS store)." },
  { name: "DATABASE_URL", default: null, secret: false, description: "postgres:// or postgresql:// URL. Unset: embedded PGlite in DATA_DIR/pg." },
  { name: "NATS_URL", default: null, secret: false, description: "nats:// or tls:// URL, or a comma-separated list. Unset: the service starts its own nats-server with its store in DATA_DIR/nats." },
  { name: "SECRETS_KEY", default: null, secret: true, description: "Key that seals private keys at rest (webhook signing keys, the generated fee payer) with AES-256-GCM: 32 random bytes as base64 or 64 hex digits, e.g. from openssl rand -base64 32. Required when DATABASE_URL is set (every process of a deployment gets the same value). Unset on the embedded default: generated in DATA_DIR/secrets.key (0600), with a warning." },
  { name: "FEED", default: "sim", secret: false, description: "Sample source: sim (simulated market), live, scenario:<name> (replay scenarios/<name>.jsonl) or scenario:<path/to/file.jsonl>." },
  { name: "SIM_SEED", default: "1", secret: false, description: "Seed of the simulated market (FEED=sim), integer 0-4294967295: the same seed gives the same market." },
  { name: "SIM_INCIDENT_EVERY_MS", default: "600000", secret: false, description: "Mean milliseconds between simulated incidents (FEED=sim), integer >= 0; 0 disables incidents. Whatever the mean, the first incident comes within the first minute." },
  { name: "SIM_TICK_MS", default: "1000", secret: false, description: "Milliseconds between simulated ticks of one sample per asset (FEED=sim), integer 1-60000: 100 runs the market at ten times the production rate." },
  { name: "INSPECT_PORT", default: "", secret: false, description: "Port of a local @statelyai/inspect WebSocket bridge (ws://127.0.0.1:<port>) that every actor streams to, for Stately's inspector; unset: off." },
  { name: "SCENARIO_SPEED", default: "1", secret: false, description: "Speed multiplier of a scenario feed's clock, a positive decimal." },
  { name: "SCENARIO_CATCHUP", default: "file", secret: false, description: "Where an engine (ROLE=engine) that takes over an asset of a scenario feed finds the samples it missed: file (the scenario) or received (only the samples this process received, as with a live feed; rehearses a live failover, docs/scaling.md)." },
  { name: "JWT_SECRET", default: null, secret: true, description: "HS256 session key, at least 32 bytes. Unset: login and /v1/me/* are disabled." },
  { name: "TELEGRAM_BOT_TOKEN", default: null, secret: true, description: "Telegram bot token for the login widget and alert messages. Unset: both are disabled." },
  { name: "TELEGRAM_API_URL", default: "https://api.telegram.org", secret: false, description: "Telegram Bot API base URL for alert messages (sendMessage)." },
  { name: "CORS_ORIGINS", default: "", secret: false, description: "Comma-separated browser origins allowed by CORS, e.g. https://app.example.com." },
  { name: "RATE_LIMIT_PER_MIN", default: "60", secret: false, description: "Public requests per minute per client IP, integer >= 1." },
  { name: "RATE_LIMIT_IPV6_PREFIX", default: "64", secret: false, description: "Prefix length (bits, integer 1-128) that keys the rate limit of IPv6 clients: all addresses of one /64 (default) share one budget. IPv4 and IPv4-mapped IPv6 clients are keyed by their IPv4 address." },
  { name: "MCP_RATE_LIMIT_PER_MIN", default: "600", secret: false, description: "Requests per minute per client IP on /mcp, integer >= 1: the agents' own budget, instead of RATE_LIMIT_PER_MIN (an MCP session spends three requests before its first tool call)." },
  { name: "MCP_ALLOWED_HOSTS", default: "", secret: false, description: "Comma-separated Host header values /mcp accepts besides localhost, 127.0.0.1 and [::1] on PORT and the hosts of PUBLIC_BASE_URL and WEBHOOK_BASE_URL (DNS-rebinding protection): name (any port) or name:port, e.g. oracle.example.com." },
  { name: "TRUST_PROXY", default: "false", secret: false, description: "Read the client IP from X-Forwarded-For: false (default), true (the connected peer is the one trusted proxy), or a comma-separated list of trusted proxy IP addresses." },
  { name: "GIT_SHA", default: "", secret: false, description: "Hex commit (7-40 digits) of the running build, hashed into receipts. Unset: the checkout's HEAD (read from .git), else build-info.json (peg-oracle build-info); the service warns at start when neither exists." },
  { name: "INTRINSIC_LIVENESS_GATE", default: "false", secret: false, description: "Enable the intrinsic-liveness gate: true/false/1/0/yes/no." },
  { name: "SUSTAINED_SECS", default: String(DEFAULT_SUSTAINED_SECS), secret: false, description: "Seconds a DRIFT-or-worse state must be held to count as sustained, integer >= 1." },
  { name: "LOG_LEVEL", default: "info", secret: false, description: "debug, info, warn or error." },
  { name: "WEBHOOK_IPS", default: "", secret: false, description: "Comma-separated IP addresses webhook deliveries come from, published at /v1/meta/webhook-ips." },
  { name: "WEBHOOK_TIME_SCALE", default: "1", secret: false, description: "Multiplier of the webhook retry waits (0 s, 5 s, 30 s, 5 min, 30 min, 2 h) and of 429 Retry-After, a positive decimal; e.g. 0.001 runs the schedule in seconds (tests)." },
  { name: "PUBLIC_BASE_URL", default: null, secret: false, description: "Public http(s) base URL of this API (e.g. https://oracle.example.com), for every absolute URL it gives out: the x402 challenges' resource.url, webhook links unless WEBHOOK_BASE_URL is set; its host is a Host /mcp accepts. Unset: WEBHOOK_BASE_URL, else http://localhost:<PORT>, with a warning at start." },
  { name: "WEBHOOK_BASE_URL", default: null, secret: false, description: "Public http(s) base URL of this API, for the evidence_url of webhook events. Unset: PUBLIC_BASE_URL, else http://localhost:<PORT>." },
  { name: "WEBHOOK_ALLOWED_PORTS", default: "", secret: false, description: "Comma-separated destination ports (1-65535) webhook URLs may use besides 443, e.g. 8443. Empty: only 443; other ports are refused at registration and at delivery." },
  { name: "PYTH_HERMES_URL", default: "https://hermes.pyth.network", secret: false, description: "Pyth Hermes base URL (live feed)." },
  { name: "JUPITER_API_URL", default: "https://api.jup.ag", secret: false, description: "Jupiter API base URL (live feed)." },
  { name: "JUPITER_API_KEY", default: null, secret: true, description: "Jupiter API key. Unset: the keyless tier is used." },
  { name: "SANCTUM_API_URL", default: "https://sanctum-api.ironforge.network", secret: false, description: "Sanctum API base URL (live feed)." },
  { name: "SOLANA_RPC_URL", default: "https://api.mainnet-beta.solana.com", secret: false, description: "Solana JSON-RPC URL (live feed). Setting it explicitly also enables on-chain anchoring of DEPEG, CRITICAL and BLACK_SWAN receipts, sent to this URL." },
  { name: "ANCHOR_KEYPAIR", default: null, secret: false, description: "Path to the fee payer's Solana CLI keypair file (a JSON array of 64 bytes) for on-chain anchoring. Unset: a fee payer is generated on first start and kept in the database, sealed under SECRETS_KEY. The file itself is secret." },
  { name: "ANCHOR_DAILY_BUDGET", default: "100", secret: false, description: "On-chain commits per UTC day, integer 0-100000; transitions past it are not_applicable (cost-gated)." },
  { name: "ROLE", default: "all", secret: false, description: "Parts this process runs: all (everything, one process), engine (intake and the actors of the assets it leases in NATS KV, projectors, webhook delivery; no HTTP) or api (HTTP and WebSocket; no actors). See docs/scaling.md." },
  { name: "NATS_REPLICAS", default: "1", secret: false, description: "JetStream replicas of the streams and KV buckets, integer 1-5; 3 on a three-node nats-server cluster." },
  { name: "INTAKE", default: "", secret: false, description: "ROLE=engine: shared (the default with LEASE_PARTITIONS > 0) or local. shared: one engine at a time (the holder of the intake lease) polls the feed for the whole cluster and publishes what it receives to the JetStream stream PEG_INTAKE, by partition; each engine evaluates only its partitions' samples from there, and one that takes a partition over evaluates what arrived since its last state (docs/scaling.md). local: every engine runs the whole feed (needed with LEASE_PARTITIONS=0)." },
  { name: "LEASE_PARTITIONS", default: "0", secret: false, description: "ROLE=engine: lease partitions of the assets instead of each asset, integer 0-4096 (e.g. 64 or 256); an asset's partition is FNV-1a-32 of its mint modulo this count (docs/scaling.md), so every engine of a deployment must use the same value. 0: one lease per asset." },
  { name: "HISTORY_RAW_DAYS", default: "7", secret: false, description: "Days raw samples are kept (GET /v1/assets/{symbol}/history?bucket=raw), integer 1-3650; older ones are dropped by whole day partitions (up to a day more is kept), and a window that ends before that is answered with the empty list and an x-history-reason header (x-history-kept-from: the oldest instant kept)." },
  { name: "HISTORY_1M_DAYS", default: "90", secret: false, description: "Days 1-minute rollups are kept (bucket=1m, calibration), integer 1-3650; dropped as HISTORY_RAW_DAYS. Transitions and receipts are never dropped." },
  { name: "SAMPLES_STREAM_MAX_GB", default: "10", secret: false, description: "GiB the JetStream stream PEG_SAMPLES may hold, integer 1-100000, besides its 24 h: the oldest samples are discarded first. A server whose file store cannot reserve it gets the largest halving that fits (docs/nats.md has the sizing)." },
  { name: "KAMINO_POSITIONS_URL", default: null, secret: false, description: "Base URL serving Kamino lending obligations market-wide (`<url>/kamino-market/<market>/obligations`, Kamino's obligation JSON) for the advisory loop-exposure figures. Unset: simulated lending positions." },
  { name: "METHODOLOGY_REGISTRY", default: null, secret: false, description: "Path to a methodology lifecycle registry (JSON, the shape of src/methodology/registry.json) that replaces the shipped one, e.g. to mark this build's version deprecated or broken (docs/methodology-lifecycle.md). Unset: the shipped registry." },
  { name: "X402_PAY_TO", default: null, secret: false, description: "Base58 Solana address that receives the agent tools' x402 payments in USDC (into its USDC associated token account, which must exist). Setting it enables the paid MCP tools (get_peg_feed, subscribe_peg_events, simulate_depeg) at /mcp and GET /x402/peg-feed and /x402/events (docs/agents.md); the 402 challenge needs no RPC. Unset: free tools only." },
  { name: "X402_NETWORK", default: "solana", secret: false, description: "Solana cluster of the x402 payments: solana (mainnet), solana-devnet or solana-testnet, or its CAIP-2 id (solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp); the asset is that cluster's USDC." },
  { name: "X402_PRICES", default: DEFAULT_PRICES_TEXT, secret: false, description: "USDC price per call of the paid tools, comma-separated tool=price (at most 6 decimals, above 0 and at most 1); a tool not named keeps its default. /x402/peg-feed costs get_peg_feed's price, /x402/events subscribe_peg_events'." },
  { name: "X402_ANSWER_WINDOW_HOURS", default: "24", secret: false, description: "Hours, integer 1-720, during which a settled x402 payment presented again for the same tool and arguments (or route and query) gets the answer it bought again (after a crash or a dropped connection) instead of reused; the stored answer is cleared after it." },
  { name: "X402_FACILITATOR_URL", default: null, secret: false, description: "Base URL of an x402 facilitator that verifies and settles the payments. Unset: self-facilitated: the service verifies each payment and settles it through SOLANA_RPC_URL, paying the network fee with the anchoring fee payer (ANCHOR_KEYPAIR, or the generated one; it needs SOL)." },
] as const satisfies readonly ConfigVariable[];

export type ConfigVariableName = (typeof CONFIG_VARIABLES)[number]["name"];
