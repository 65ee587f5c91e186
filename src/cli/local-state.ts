/**
 * Start-up of the service's local state (issue 14), before the store or nats-server open:
 *
 * - `prepareDataDir`: with embedded PGlite or an embedded nats-server, the process umask becomes 077 (the nats-server
 *   child inherits it) and `DATA_DIR` and what the service keeps in it are made owner-only (0700 / 0600), also when an
 *   earlier build left them loose.
 * - `openSecretsBox`: the key that seals private keys at rest (src/secret-box.ts). `SECRETS_KEY` when set. Unset with
 *   `DATABASE_URL` set (a deployment's database, shared, backed up and copied elsewhere): refused. Unset on the
 *   embedded default: `DATA_DIR/secrets.key` (0600), generated on first start, with a warning each start.
 */
import { existsSync, lstatSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Config } from "../config.ts";
import { ownerOnlyDir, restrictUmask, tightenTree, writeOwnerOnlyFile, OWNER_FILE_MODE } from "../owner-only.ts";
import { generateSecretsKey, parseSecretsKey, secretBox, SECRETS_ERROR_CODES, SecretsKeyError, type SecretBox } from "../secret-box.ts";
import type { LogFn } from "../streams/jetstream/index.ts";

/** The generated secrets key of the embedded default, inside DATA_DIR. */
export const SECRETS_KEY_FILE = "secrets.key";

/** What the service keeps directly in DATA_DIR (besides the directories opened by the store and nats-server). */
const OWN_ENTRIES = ["pg", "nats", SECRETS_KEY_FILE, "nats.url", "nats-server.pid"] as const;

/** True when the configuration keeps state in DATA_DIR (embedded PGlite, embedded nats-server). */
export function usesDataDir(config: Config): boolean {
  return config.database.kind === "pglite" || config.nats.kind === "embedded";
}

/** Restricts the umask and makes DATA_DIR owner-only. Nothing when DATA_DIR is not used. */
export function prepareDataDir(config: Config, log: LogFn): void {
  if (!usesDataDir(config)) return;
  if (!restrictUmask()) log("warn", "cannot set the process umask (worker thread): files nats-server creates may be group-readable");
  if (!ownerOnlyDir(config.dataDir)) {
    log("warn", "DATA_DIR is a shared directory (sticky bit, like /tmp); its mode is left as is: give the service a directory of its own", {
      data_dir: config.dataDir,
    });
  }
  let changed = 0;
  const failed: string[] = [];
  for (const name of OWN_ENTRIES) {
    const r = tightenTree(join(config.dataDir, name));
    changed += r.changed;
    failed.push(...r.failed);
  }
  if (changed > 0) log("warn", "DATA_DIR had entries other users could read or write; they are owner-only now", { data_dir: config.dataDir, changed });
  if (failed.length > 0) log("warn", "some DATA_DIR entries cannot be made owner-only (another user owns them)", { count: failed.length, example: failed[0] });
}

function readKeyFile(path: string): Buffer {
  const st = lstatSync(path);
  if (!st.isFile()) throw new SecretsKeyError(SECRETS_ERROR_CODES.unreadable, `${path} is not a regular file; remove it or set SECRETS_KEY`);
  if ((st.mode & 0o777) !== OWNER_FILE_MODE) tightenTree(path);
  const key = parseSecretsKey(readFileSync(path, "utf8"));
  if (key === null) {
    throw new SecretsKeyError(
      SECRETS_ERROR_CODES.unreadable,
      `${path} does not hold a secrets key (base64 of 32 bytes); restore it from where the store came from, or set SECRETS_KEY`,
    );
  }
  return key;
}

/** The box that seals and opens the stored private keys (see the module comment). Throws a SecretsKeyError. */
export function openSecretsBox(config: Config, log: LogFn): SecretBox {
  if (config.secretsKey !== null) {
    const key = parseSecretsKey(config.secretsKey);
    if (key === null) throw new SecretsKeyError(SECRETS_ERROR_CODES.unreadable, "SECRETS_KEY is not a key (validated by parseConfig)");
    return secretBox(key);
  }
  if (config.database.kind === "postgres") {
    throw new SecretsKeyError(
      SECRETS_ERROR_CODES.missing,
      "SECRETS_KEY is required when DATABASE_URL is set: the private keys in the database are sealed under it. Generate one " +
        "(openssl rand -base64 32), give every process of the deployment the same value, and keep it apart from the database and its backups",
    );
  }
  const path = join(config.dataDir, SECRETS_KEY_FILE);
  if (existsSync(path)) {
    const box = secretBox(readKeyFile(path));
    log("warn", "SECRETS_KEY is not set: private keys are sealed under the key in DATA_DIR/secrets.key (owner-only); set SECRETS_KEY outside DATA_DIR in production", {
      path,
      key_id: box.keyId,
    });
    return box;
  }
  const key = generateSecretsKey();
  try {
    writeOwnerOnlyFile(path, `${key.toString("base64")}\n`, "wx");
  } catch (e) {
    // Another process created it between the check and the write: use that one.
    if ((e as NodeJS.ErrnoException).code === "EEXIST") return openSecretsBox(config, log);
    throw e;
  }
  const box = secretBox(key);
  key.fill(0);
  log("warn", "SECRETS_KEY is not set: generated a secrets key in DATA_DIR/secrets.key (0600) to seal private keys at rest; keep it with the data, or move it to SECRETS_KEY", {
    path,
    key_id: box.keyId,
  });
  return box;
}
