import { describe, it, expect } from "vitest";
import {
  CONFIG_VARIABLES,
  ConfigError,
  describeConfig,
  featureNotices,
  parseConfig,
  redactUrlText,
  type Config,
} from "../src/config.ts";

const SECRET_32 = "s".repeat(32);

/** Parses and returns the ConfigError, failing the test when parsing succeeds or throws something else. */
function errorOf(env: Record<string, string>): ConfigError {
  try {
    parseConfig(env);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return e as ConfigError;
  }
  throw new Error(`expected a ConfigError for ${JSON.stringify(env)}`);
}

function issueNames(env: Record<string, string>): string[] {
  return errorOf(env).issues.map((i) => i.name);
}

describe("parseConfig defaults", () => {
  it("gives the documented defaults for an empty environment", () => {
    const c = parseConfig({});
    expect(c.port).toBe(8080);
    expect(c.host).toBe("0.0.0.0");
    expect(c.dataDir).toBe("./data");
    expect(c.database).toEqual({ kind: "pglite", dataDir: "data/pg" });
    expect(c.nats).toEqual({ kind: "embedded", storeDir: "data/nats" });
    expect(c.feed).toEqual({ kind: "sim" });
    expect(c.scenarioSpeed).toBe(1);
    expect(c.simTickMs).toBe(1000);
    expect(c.jwtSecret).toBeNull();
    expect(c.telegramBotToken).toBeNull();
    expect(c.features).toEqual({ auth: false, telegramLogin: false, telegramBot: false });
    expect(c.corsOrigins).toEqual([]);
    expect(c.rateLimitPerMin).toBe(60);
    expect(c.trustProxy).toBe(false);
    expect(c.gitSha).toBe("");
    expect(c.intrinsicLivenessGate).toBe(false);
    expect(c.sustainedSecs).toBe(900);
    expect(c.logLevel).toBe("info");
    expect(c.webhookIps).toEqual([]);
    expect(c.sources).toEqual({
      pythHermesUrl: "https://hermes.pyth.network",
      jupiterApiUrl: "https://api.jup.ag",
      jupiterApiKey: null,
      sanctumApiUrl: "https://sanctum-api.ironforge.network",
      solanaRpcUrl: "https://api.mainnet-beta.solana.com",
    });
  });

  it("treats empty and blank strings as unset", () => {
    const env: Record<string, string> = {};
    for (const v of CONFIG_VARIABLES) env[v.name] = v.name === "PORT" ? "  " : "";
    expect(parseConfig(env)).toEqual(parseConfig({}));
  });

  it("ignores variables it does not know", () => {
    expect(parseConfig({ PATH: "/usr/bin", HOME: "/root" })).toEqual(parseConfig({}));
  });

  it("documents every variable, and each documented default parses", () => {
    const names = CONFIG_VARIABLES.map((v) => v.name);
    expect(new Set(names).size).toBe(names.length);
    for (const v of CONFIG_VARIABLES) {
      expect(v.description.length).toBeGreaterThan(10);
      if (v.default !== null && v.default !== "") expect(() => parseConfig({ [v.name]: v.default })).not.toThrow();
    }
    expect(CONFIG_VARIABLES.filter((v) => v.secret).map((v) => v.name).sort()).toEqual(
      ["JUPITER_API_KEY", "JWT_SECRET", "SECRETS_KEY", "TELEGRAM_BOT_TOKEN"],
    );
  });
});

describe("parseConfig per variable", () => {
  it("PORT: integer 1-65535", () => {
    expect(parseConfig({ PORT: "1" }).port).toBe(1);
    expect(parseConfig({ PORT: "65535" }).port).toBe(65535);
    expect(parseConfig({ PORT: " 3000 " }).port).toBe(3000);
    for (const bad of ["0", "65536", "-1", "80.5", "abc", "1e3", "0x50", "99999999999999999999"]) {
      expect(issueNames({ PORT: bad }), bad).toEqual(["PORT"]);
    }
  });

  it("INTAKE: shared by default with lease partitions, local without; shared needs partitions", () => {
    expect(parseConfig({}).intake).toBe("local");
    expect(parseConfig({ LEASE_PARTITIONS: "64" }).intake).toBe("shared");
    expect(parseConfig({ LEASE_PARTITIONS: "64", INTAKE: "local" }).intake).toBe("local");
    expect(parseConfig({ LEASE_PARTITIONS: "8", INTAKE: " shared " }).intake).toBe("shared");
    expect(issueNames({ INTAKE: "shared" })).toEqual(["INTAKE"]);
    expect(issueNames({ LEASE_PARTITIONS: "8", INTAKE: "both" })).toEqual(["INTAKE"]);
  });

  it("HOST: IP address or host name", () => {
    for (const ok of ["127.0.0.1", "::", "::1", "localhost", "api.example.com"]) {
      expect(parseConfig({ HOST: ok }).host).toBe(ok);
    }
    for (const bad of ["http://x", "a b", "-bad.example", "host:80"]) expect(issueNames({ HOST: bad }), bad).toEqual(["HOST"]);
  });

  it("DATA_DIR: any path, and the embedded stores live under it", () => {
    const c = parseConfig({ DATA_DIR: "/var/lib/peg" });
    expect(c.dataDir).toBe("/var/lib/peg");
    expect(c.database).toEqual({ kind: "pglite", dataDir: "/var/lib/peg/pg" });
    expect(c.nats).toEqual({ kind: "embedded", storeDir: "/var/lib/peg/nats" });
    expect(issueNames({ DATA_DIR: "a\0b" })).toEqual(["DATA_DIR"]);
  });

  it("DATABASE_URL: postgres:// or postgresql://", () => {
    expect(parseConfig({ DATABASE_URL: "postgres://u:p@db:5432/peg" }).database).toEqual({
      kind: "postgres",
      url: "postgres://u:p@db:5432/peg",
    });
    expect(parseConfig({ DATABASE_URL: "postgresql://db/peg" }).database.kind).toBe("postgres");
    for (const bad of ["mysql://db/peg", "db:5432", "https://db/peg"]) {
      expect(issueNames({ DATABASE_URL: bad }), bad).toEqual(["DATABASE_URL"]);
    }
  });

  it("NATS_URL: nats:// or tls://, comma-separated", () => {
    expect(parseConfig({ NATS_URL: "nats://127.0.0.1:4222" }).nats).toEqual({
      kind: "external",
      servers: ["nats://127.0.0.1:4222"],
    });
    expect(parseConfig({ NATS_URL: "nats://a:4222, tls://b:4222," }).nats).toEqual({
      kind: "external",
      servers: ["nats://a:4222", "tls://b:4222"],
    });
    for (const bad of ["http://a:4222", "nats://a:4222,localhost:4222", ",", "nats://"]) {
      expect(issueNames({ NATS_URL: bad }), bad).toEqual(["NATS_URL"]);
    }
  });

  it("FEED: sim, live or scenario:<name>", () => {
    expect(parseConfig({ FEED: "sim" }).feed).toEqual({ kind: "sim" });
    expect(parseConfig({ FEED: "live" }).feed).toEqual({ kind: "live" });
    expect(parseConfig({ FEED: "scenario:usdc-depeg_2023.v1" }).feed).toEqual({
      kind: "scenario",
      name: "usdc-depeg_2023.v1",
    });
    for (const bad of ["Live", "replay", "scenario:", "scenario:../etc/passwd", "scenario:..", "scenario:a b", "scenario:a/b"]) {
      expect(issueNames({ FEED: bad }), bad).toEqual(["FEED"]);
    }
  });

  it("SCENARIO_SPEED: positive decimal", () => {
    expect(parseConfig({ SCENARIO_SPEED: "10" }).scenarioSpeed).toBe(10);
    expect(parseConfig({ SCENARIO_SPEED: "0.5" }).scenarioSpeed).toBe(0.5);
    for (const bad of ["0", "0.0", "-1", "fast", "1e3", "Infinity", ".5x"]) {
      expect(issueNames({ SCENARIO_SPEED: bad }), bad).toEqual(["SCENARIO_SPEED"]);
    }
  });

  it("JWT_SECRET: at least 32 bytes, enables auth; unset disables it", () => {
    const c = parseConfig({ JWT_SECRET: SECRET_32 });
    expect(c.jwtSecret).toBe(SECRET_32);
    expect(c.features.auth).toBe(true);
    expect(c.features.telegramLogin).toBe(false);
    // Bytes, not characters: 11 three-byte characters are 33 bytes.
    expect(parseConfig({ JWT_SECRET: "€".repeat(11) }).features.auth).toBe(true);
    expect(issueNames({ JWT_SECRET: "s".repeat(31) })).toEqual(["JWT_SECRET"]);
    expect(issueNames({ JWT_SECRET: "€".repeat(10) })).toEqual(["JWT_SECRET"]);
  });

  it("TELEGRAM_BOT_TOKEN: enables the bot, and login together with JWT_SECRET", () => {
    const bot = parseConfig({ TELEGRAM_BOT_TOKEN: "123:abc" });
    expect(bot.telegramBotToken).toBe("123:abc");
    expect(bot.features).toEqual({ auth: false, telegramLogin: false, telegramBot: true });
    expect(parseConfig({ TELEGRAM_BOT_TOKEN: "123:abc", JWT_SECRET: SECRET_32 }).features).toEqual({
      auth: true,
      telegramLogin: true,
      telegramBot: true,
    });
    expect(issueNames({ TELEGRAM_BOT_TOKEN: "123:abc\n" })).toEqual(["TELEGRAM_BOT_TOKEN"]);
  });

  it("CORS_ORIGINS: http(s) origins without a path, normalised", () => {
    expect(parseConfig({ CORS_ORIGINS: "https://app.example.com, http://localhost:5173,https://APP.example.com/" }).corsOrigins)
      .toEqual(["https://app.example.com", "http://localhost:5173"]);
    expect(parseConfig({ CORS_ORIGINS: "https://a.example:443" }).corsOrigins).toEqual(["https://a.example"]);
    for (const bad of [
      "https://app.example.com/path",
      "https://app.example.com/?x=1",
      "ftp://files.example.com",
      "app.example.com",
      "https://user:pw@app.example.com",
      "https://ok.example,*",
    ]) {
      expect(issueNames({ CORS_ORIGINS: bad }), bad).toEqual(["CORS_ORIGINS"]);
    }
  });

  it("RATE_LIMIT_PER_MIN: integer >= 1", () => {
    expect(parseConfig({ RATE_LIMIT_PER_MIN: "1" }).rateLimitPerMin).toBe(1);
    expect(parseConfig({ RATE_LIMIT_PER_MIN: "600" }).rateLimitPerMin).toBe(600);
    for (const bad of ["0", "-5", "1.5", "many"]) {
      expect(issueNames({ RATE_LIMIT_PER_MIN: bad }), bad).toEqual(["RATE_LIMIT_PER_MIN"]);
    }
  });

  it("TRUST_PROXY and INTRINSIC_LIVENESS_GATE: booleans", () => {
    for (const [text, value] of [
      ["true", true], ["TRUE", true], ["1", true], ["yes", true], ["Yes", true],
      ["false", false], ["0", false], ["no", false], ["NO", false],
    ] as const) {
      const c = parseConfig({ TRUST_PROXY: text, INTRINSIC_LIVENESS_GATE: text });
      expect(c.trustProxy, text).toBe(value);
      expect(c.intrinsicLivenessGate, text).toBe(value);
    }
    const listed = parseConfig({ TRUST_PROXY: "10.0.0.2, 2001:db8::1" });
    expect(listed.trustProxy).toBe(true);
    expect(listed.trustedProxies).toEqual(["10.0.0.2", "2001:db8::1"]);
    expect(parseConfig({}).trustedProxies).toEqual([]);
    expect(issueNames({ TRUST_PROXY: "10.0.0.2,not-an-ip" })).toEqual(["TRUST_PROXY"]);
    for (const bad of ["on", "2", "y", "truthy"]) {
      expect(issueNames({ TRUST_PROXY: bad, INTRINSIC_LIVENESS_GATE: bad }), bad).toEqual([
        "TRUST_PROXY",
        "INTRINSIC_LIVENESS_GATE",
      ]);
    }
  });

  it("GIT_SHA: 7-40 hex digits, lower-cased", () => {
    expect(parseConfig({ GIT_SHA: "ABCDEF0" }).gitSha).toBe("abcdef0");
    expect(parseConfig({ GIT_SHA: "a".repeat(40) }).gitSha).toBe("a".repeat(40));
    for (const bad of ["abcdef", "a".repeat(41), "xyz1234", "v1.2.3"]) expect(issueNames({ GIT_SHA: bad }), bad).toEqual(["GIT_SHA"]);
  });

  it("SUSTAINED_SECS: integer >= 1", () => {
    expect(parseConfig({ SUSTAINED_SECS: "1" }).sustainedSecs).toBe(1);
    expect(parseConfig({ SUSTAINED_SECS: "3600" }).sustainedSecs).toBe(3600);
    for (const bad of ["0", "-1", "15m", "1.5"]) expect(issueNames({ SUSTAINED_SECS: bad }), bad).toEqual(["SUSTAINED_SECS"]);
  });

  it("LOG_LEVEL: debug|info|warn|error", () => {
    for (const level of ["debug", "info", "warn", "error"] as const) expect(parseConfig({ LOG_LEVEL: level }).logLevel).toBe(level);
    expect(parseConfig({ LOG_LEVEL: "WARN" }).logLevel).toBe("warn");
    for (const bad of ["trace", "warning", "verbose"]) expect(issueNames({ LOG_LEVEL: bad }), bad).toEqual(["LOG_LEVEL"]);
  });

  it("WEBHOOK_IPS: IPv4 and IPv6 addresses", () => {
    expect(parseConfig({ WEBHOOK_IPS: "203.0.113.7, 2001:db8::1" }).webhookIps).toEqual(["203.0.113.7", "2001:db8::1"]);
    for (const bad of ["203.0.113.256", "203.0.113.0/24", "example.com", "1.2.3.4,nope"]) {
      expect(issueNames({ WEBHOOK_IPS: bad }), bad).toEqual(["WEBHOOK_IPS"]);
    }
  });

  it("source URLs: http(s), stored without a trailing slash", () => {
    const c = parseConfig({
      PYTH_HERMES_URL: "http://localhost:9000/",
      JUPITER_API_URL: "https://lite-api.jup.ag",
      JUPITER_API_KEY: "jup-key",
      SANCTUM_API_URL: "https://sanctum.example/v1/",
      SOLANA_RPC_URL: "https://rpc.example/?api-key=abc",
    });
    expect(c.sources).toEqual({
      pythHermesUrl: "http://localhost:9000",
      jupiterApiUrl: "https://lite-api.jup.ag",
      jupiterApiKey: "jup-key",
      sanctumApiUrl: "https://sanctum.example/v1",
      solanaRpcUrl: "https://rpc.example/?api-key=abc",
    });
    for (const name of ["PYTH_HERMES_URL", "JUPITER_API_URL", "SANCTUM_API_URL", "SOLANA_RPC_URL"]) {
      for (const bad of ["ftp://x.example", "not a url", "wss://x.example", "x.example"]) {
        expect(issueNames({ [name]: bad }), `${name}=${bad}`).toEqual([name]);
      }
    }
  });
});

describe("ConfigError", () => {
  it("reports every invalid variable at once, one line each, in table order", () => {
    const err = errorOf({
      LOG_LEVEL: "loud",
      PORT: "99999",
      FEED: "scenario:",
      TRUST_PROXY: "maybe",
      WEBHOOK_IPS: "1.2.3.4,999.1.1.1",
      SOLANA_RPC_URL: "ftp://rpc",
    });
    expect(err.code).toBe("invalid_config");
    expect(err.name).toBe("ConfigError");
    expect(err.issues.map((i) => i.name)).toEqual(["PORT", "FEED", "TRUST_PROXY", "LOG_LEVEL", "WEBHOOK_IPS", "SOLANA_RPC_URL"]);
    const lines = err.message.split("\n");
    expect(lines[0]).toBe("invalid configuration (6 problems):");
    expect(lines).toHaveLength(7);
    expect(lines[1]).toBe('  PORT="99999": expected an integer from 1 to 65535');
    expect(lines[4]).toContain('LOG_LEVEL="loud"');
    expect(lines[4]).toContain("debug, info, warn or error");
    expect(lines[5]).toContain('"999.1.1.1" is not an IPv4 or IPv6 address');
    for (const issue of err.issues) expect(err.message).toContain(`  ${issue.name}=${issue.value}: ${issue.message}`);
  });

  it("never echoes secrets", () => {
    const jwt = "short-secret-value";
    const bot = "123 456 bot token";
    const key = "jup key with spaces";
    const err = errorOf({ JWT_SECRET: jwt, TELEGRAM_BOT_TOKEN: bot, JUPITER_API_KEY: key, PORT: "x" });
    expect(err.issues.map((i) => i.name)).toEqual(["PORT", "JWT_SECRET", "TELEGRAM_BOT_TOKEN", "JUPITER_API_KEY"]);
    for (const secret of [jwt, bot, key]) {
      expect(err.message).not.toContain(secret);
      expect(JSON.stringify(err.issues)).not.toContain(secret);
    }
    expect(err.issues.filter((i) => i.name !== "PORT").every((i) => i.value === "[redacted]")).toBe(true);
    expect(err.message).toContain("JWT_SECRET=[redacted]: is 18 bytes");
  });

  it("masks URL credentials and query strings in reported values", () => {
    const err = errorOf({ DATABASE_URL: "mysql://admin:hunter2@db/peg", SOLANA_RPC_URL: "ftp://rpc.example/?api-key=topsecret" });
    expect(err.message).not.toContain("hunter2");
    expect(err.message).not.toContain("topsecret");
    expect(err.message).toContain('DATABASE_URL="mysql://***@db/peg"');
    expect(redactUrlText("nats://u:p@a:4222,nats://b:4222?x=1")).toBe("nats://***@a:4222,nats://b:4222?***");
  });

  it("is an Error with frozen issues", () => {
    const err = errorOf({ PORT: "0" });
    expect(err).toBeInstanceOf(Error);
    expect(Object.isFrozen(err.issues)).toBe(true);
    expect(Object.isFrozen(err.issues[0])).toBe(true);
  });
});

describe("the parsed configuration", () => {
  it("is deeply frozen: assignment throws in strict mode", () => {
    const c = parseConfig({ CORS_ORIGINS: "https://a.example", NATS_URL: "nats://n:4222" });
    expect(Object.isFrozen(c)).toBe(true);
    expect(() => {
      (c as { port: number }).port = 1;
    }).toThrow(TypeError);
    expect(() => {
      (c.sources as { solanaRpcUrl: string }).solanaRpcUrl = "https://evil.example";
    }).toThrow(TypeError);
    expect(() => {
      (c.features as { auth: boolean }).auth = true;
    }).toThrow(TypeError);
    expect(() => {
      (c.corsOrigins as string[]).push("https://evil.example");
    }).toThrow(TypeError);
    expect(() => {
      (c.feed as { kind: string }).kind = "live";
    }).toThrow(TypeError);
    expect(Object.isFrozen(c.nats)).toBe(true);
    expect(c.nats.kind === "external" && Object.isFrozen(c.nats.servers)).toBe(true);
    expect(c.port).toBe(8080);
  });

  it("describeConfig is safe to log; featureNotices explains disabled features", () => {
    const c: Config = parseConfig({
      JWT_SECRET: SECRET_32,
      JUPITER_API_KEY: "jk-123",
      DATABASE_URL: "postgres://peg:pw123@db/peg",
      SOLANA_RPC_URL: "https://rpc.example/?api-key=rpc-secret",
    });
    const text = JSON.stringify(describeConfig(c));
    for (const secret of [SECRET_32, "jk-123", "pw123", "rpc-secret"]) expect(text).not.toContain(secret);
    expect(featureNotices(c)).toEqual(["TELEGRAM_BOT_TOKEN is not set: Telegram login and alert messages are disabled"]);
    expect(featureNotices(parseConfig({}))).toHaveLength(2);
    expect(featureNotices(parseConfig({ JWT_SECRET: SECRET_32, TELEGRAM_BOT_TOKEN: "1:a" }))).toEqual([]);
  });
});

describe("SIM_TICK_MS", () => {
  it("sets the simulated market's tick (100 ms: ten times the production rate)", () => {
    expect(parseConfig({ SIM_TICK_MS: "100" }).simTickMs).toBe(100);
    expect(parseConfig({ SIM_TICK_MS: "60000" }).simTickMs).toBe(60_000);
  });

  it("rejects a tick that is not an integer from 1 to 60000", () => {
    for (const bad of ["0", "-5", "1.5", "60001", "fast"]) expect(issueNames({ SIM_TICK_MS: bad })).toEqual(["SIM_TICK_MS"]);
  });
});
