/**
 * Issue 14 item 6, the secrets key at start: with DATABASE_URL (a deployment's database) the service refuses to start
 * without SECRETS_KEY; on the embedded default it generates DATA_DIR/secrets.key (0600) and says so; a wrong key, or a
 * database copied away from its key, stops the start with a clear error and creates no new signing key.
 */
import { cpSync, lstatSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import { openSecretsBox, prepareDataDir } from "../../src/cli/local-state.ts";
import { startService } from "../../src/cli/service.ts";
import { systemClock } from "../../src/clock.ts";
import { parseConfig, ConfigError, type Config } from "../../src/config.ts";
import { openKeyRing } from "../../src/delivery/index.ts";
import { generateSecretsKey, SecretsKeyError } from "../../src/secret-box.ts";
import { loadSigningKeys, openStore } from "../../src/store/index.ts";
import { spawnServe } from "../support/serve.ts";

const catalog = loadShippedCatalog();
const root = mkdtempSync(join(tmpdir(), "peg-secrets-start-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

type Logged = { level: string; msg: string; fields?: Record<string, unknown> };
function capture(): { logs: Logged[]; log: (level: "debug" | "info" | "warn" | "error", msg: string, fields?: Record<string, unknown>) => void } {
  const logs: Logged[] = [];
  return { logs, log: (level, msg, fields) => logs.push({ level, msg, ...(fields === undefined ? {} : { fields }) }) };
}

/** A configuration whose start fails, if it fails, before any NATS connection (nothing listens on port 1). */
const configFor = (env: Record<string, string>): Config => parseConfig({ PORT: "18080", METRICS_PORT: "0", NATS_URL: "nats://127.0.0.1:1", ...env });

/** The start's rejection, which must be a SecretsKeyError. */
async function startRefused(config: Config): Promise<SecretsKeyError> {
  const { log } = capture();
  try {
    const s = await startService(config, catalog, { log });
    await s.stop();
  } catch (e) {
    expect(e).toBeInstanceOf(SecretsKeyError);
    return e as SecretsKeyError;
  }
  throw new Error("the service started");
}

describe("SECRETS_KEY in the configuration", () => {
  it("is a secret of 32 bytes (base64 or hex), never echoed", () => {
    const key = generateSecretsKey();
    expect(parseConfig({ SECRETS_KEY: key.toString("base64") }).secretsKey).toBe(key.toString("base64"));
    expect(parseConfig({}).secretsKey).toBeNull();
    let err: unknown;
    try {
      parseConfig({ SECRETS_KEY: "hunter2-not-a-key" });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).issues).toEqual([{ name: "SECRETS_KEY", value: "[redacted]", message: expect.stringMatching(/32 bytes/) }]);
    expect((err as ConfigError).message).not.toContain("hunter2");
  });
});

describe("the start path", () => {
  it("refuses to start with DATABASE_URL and no SECRETS_KEY, before opening anything", async () => {
    const e = await startRefused(configFor({ DATABASE_URL: "postgres://peg@127.0.0.1:1/peg", DATA_DIR: join(root, "pg-url") }));
    expect(e.code).toBe("secrets_key_missing");
    expect(e.message).toMatch(/SECRETS_KEY is required when DATABASE_URL is set/);
  });

  it("`serve` exits 1 with that reason on stderr", async () => {
    const run = spawnServe({ DATABASE_URL: "postgres://peg@127.0.0.1:1/peg", NATS_URL: "nats://127.0.0.1:1", DATA_DIR: join(root, "cli") });
    expect(await run.exited).toBe(1);
    const failure = run.lines().find((l) => l["msg"] === "the service could not start");
    expect(String(failure?.["error"])).toMatch(/SECRETS_KEY is required when DATABASE_URL is set/);
  }, 60_000);

  it("on the embedded default generates DATA_DIR/secrets.key (0600) with a warning, then reuses it", () => {
    const config = configFor({ DATA_DIR: join(root, "generated") });
    const first = capture();
    prepareDataDir(config, first.log);
    const box = openSecretsBox(config, first.log);
    const file = join(root, "generated", "secrets.key");
    expect(lstatSync(file).mode & 0o777).toBe(0o600);
    expect(lstatSync(join(root, "generated")).mode & 0o777).toBe(0o700);
    expect(Buffer.from(readFileSync(file, "utf8").trim(), "base64")).toHaveLength(32);
    expect(first.logs).toContainEqual({ level: "warn", msg: expect.stringMatching(/SECRETS_KEY is not set: generated a secrets key in DATA_DIR\/secrets\.key/), fields: { path: file, key_id: box.keyId } });
    const second = capture();
    expect(openSecretsBox(config, second.log).keyId).toBe(box.keyId);
    expect(second.logs.map((l) => l.level)).toEqual(["warn"]);
  });

  it("a wrong SECRETS_KEY, or the database copied without its key, stops the start and makes no new signing key", async () => {
    // A store created the way the service does on the embedded default: sealed under DATA_DIR/secrets.key.
    const dataDir = join(root, "original");
    const config = configFor({ DATA_DIR: dataDir });
    const { log } = capture();
    prepareDataDir(config, log);
    const box = openSecretsBox(config, log);
    const store = await openStore({ kind: "pglite", dataDir: join(dataDir, "pg") }, systemClock);
    const kid = (await openKeyRing(store.db, Date.now(), box)).active().kid;
    const stored = await loadSigningKeys(store.db);
    await store.close();

    const wrong = await startRefused(configFor({ DATA_DIR: dataDir, SECRETS_KEY: generateSecretsKey().toString("hex") }));
    expect(wrong.code).toBe("secrets_key_wrong");
    expect(wrong.message).toContain(`sealed under secrets key ${box.keyId}`);

    // Only the database copied elsewhere: a new secrets key is generated there, and the keys still do not open.
    const copy = join(root, "copy");
    cpSync(join(dataDir, "pg"), join(copy, "pg"), { recursive: true });
    expect((await startRefused(configFor({ DATA_DIR: copy }))).code).toBe("secrets_key_wrong");

    for (const dir of [dataDir, copy]) {
      const s = await openStore({ kind: "pglite", dataDir: join(dir, "pg") }, systemClock);
      try {
        expect(await loadSigningKeys(s.db), dir).toEqual(stored);
      } finally {
        await s.close();
      }
    }
    expect(stored.map((k) => k.kid)).toEqual([kid]);
  }, 120_000);
});
