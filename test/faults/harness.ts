/**
 * What the fault suite (issue 8) runs faults against: the real service as a child process (`service-child.ts`,
 * started with `--expose-gc`), fed the `transition-burst` scenario fast, with webhooks registered before it starts
 * on a receiver that misbehaves on purpose; a `/readyz` probe that records every answer; and memory reports taken
 * after a forced GC. The checks that follow each fault are in `invariants.ts`.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import { systemClock } from "../../src/clock.ts";
import { openKeyRing } from "../../src/delivery/index.ts";
import { createWebhook, openStore, upsertTelegramUser, type StoreConfig } from "../../src/store/index.ts";
import { NAME, type Receiver } from "../delivery/receiver.ts";
import { sleep } from "../support/ports.ts";
import { TEST_SECRETS_KEY, testSecretBox } from "../support/secrets.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const CHILD = fileURLToPath(new URL("../support/service-child.ts", import.meta.url));

/** The scenario every fault test replays: twelve USD stables, 230 transitions over 40 scenario minutes. */
export const SCENARIO = "transition-burst";

/** `process.memoryUsage()` of the service after two forced GCs, in bytes. */
export interface MemoryReport {
  readonly rss: number;
  readonly heapUsed: number;
  readonly heapTotal: number;
  readonly external: number;
  readonly arrayBuffers: number;
}

export interface ServiceProcess {
  readonly proc: ChildProcess;
  /** Resolves with the HTTP port once the service serves; rejects if it exits first. */
  readonly serving: Promise<number>;
  readonly exited: Promise<number | null>;
  stderr(): string;
  /** Forces two GCs in the service and reports its memory (see `service-child.ts`). */
  memory(): Promise<MemoryReport>;
  /** SIGKILL; resolves once the process is gone. */
  kill(): Promise<void>;
  /** SIGTERM (the ordered shutdown); resolves with the exit code. */
  stop(): Promise<number | null>;
}

/** Starts the service child with `env` (plus PATH and HOME). */
export function spawnService(env: Record<string, string>): ServiceProcess {
  const proc = spawn(process.execPath, ["--expose-gc", "--max-semi-space-size=64", "--import", "tsx", CHILD], {
    cwd: ROOT,
    env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "/tmp", LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let err = "";
  const waiters: { seq: number; resolve: (m: MemoryReport) => void }[] = [];
  let asked = 0;
  let onPort: (p: number) => void = () => {};
  let onEarlyExit: (e: Error) => void = () => {};
  const serving = new Promise<number>((resolve, reject) => {
    onPort = resolve;
    onEarlyExit = reject;
  });
  let pending = "";
  proc.stderr?.on("data", (c: Buffer) => {
    const text = c.toString();
    err += text;
    pending += text;
    const lines = pending.split("\n");
    pending = lines.pop()!;
    for (const l of lines) {
      if (!l.startsWith("{")) continue;
      let o: { msg?: string; port?: number; seq?: number } & Partial<MemoryReport>;
      try {
        o = JSON.parse(l) as typeof o;
      } catch {
        continue;
      }
      if (o.msg === "serving" && typeof o.port === "number") onPort(o.port);
      if (o.msg === "memory") {
        const i = waiters.findIndex((w) => w.seq === o.seq);
        if (i >= 0) waiters.splice(i, 1)[0]!.resolve(o as MemoryReport);
      }
    }
  });
  const exited = new Promise<number | null>((r) =>
    proc.once("exit", (code) => {
      onEarlyExit(new Error(`service exited (${code}) before serving: ${err.slice(-3000)}`));
      r(code);
    }),
  );
  return {
    proc,
    serving,
    exited,
    stderr: () => err,
    memory: () =>
      new Promise<MemoryReport>((resolve, reject) => {
        const seq = ++asked;
        waiters.push({ seq, resolve });
        proc.kill("SIGUSR2");
        setTimeout(() => reject(new Error("no memory report within 20 s")), 20_000).unref();
      }),
    kill: async () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
      await exited;
    },
    stop: async () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGTERM");
      return exited;
    },
  };
}

/** The receiver paths the fault tests register, one webhook each, all on USDC at 10 bps. */
export const HOOK_PATHS = {
  /** Answers 200 at once. */
  ok: "/hook",
  /** Times out (never answers within the 5 s budget) on each event's first attempt. */
  timeout: "/flaky/1/slow",
  /** 500, then 503, on the first attempts. */
  status500: "/flaky/2/500",
  status503: "/flaky/2/503",
  /** 429 with `Retry-After: 120` (1.2 s at the tests' time scale) on the first two attempts. */
  tooMany: "/flaky/2/429",
  /** A redirect (never followed) on the first two attempts. */
  redirect: "/flaky/2/302",
} as const;

export interface Hook {
  readonly id: string;
  readonly path: string;
  readonly asset: string;
}

/**
 * Before the first start: migrates the store, creates the webhook signing key (the service loads the same key), a
 * user and one USDC webhook per path, and gives the receiver the public keys. The store is closed again, so the
 * service can open an embedded PGlite directory afterwards.
 */
export async function provisionWebhooks(store: StoreConfig, rx: Receiver, paths: readonly string[]): Promise<Hook[]> {
  const catalog = loadShippedCatalog();
  const usdc = catalog.bySymbol("USDC");
  if (usdc === undefined) throw new Error("USDC is not in the catalog");
  const s = await openStore(store, systemClock);
  try {
    // Sealed under the key the service is given (serviceEnv: SECRETS_KEY), so it opens them.
    const ring = await openKeyRing(s.db, Date.now(), testSecretBox());
    rx.keys = ring.publicList(Date.now()).keys;
    const user = await upsertTelegramUser(s.db, { telegram_id: 8_000_001, username: "faults", first_name: "Faults" }, Date.now());
    const hooks: Hook[] = [];
    for (const path of paths) {
      const r = await createWebhook(s.db, user.id, { url: `https://${NAME}:${rx.port}${path}`, asset: "USDC", mint: usdc.mint, threshold_bps: 10, format: "signed" }, Date.now());
      if (r.kind !== "ok") throw new Error(`webhook for ${path} not created: ${JSON.stringify(r)}`);
      hooks.push({ id: r.value.id, path, asset: "USDC" });
    }
    return hooks;
  } finally {
    await s.close();
  }
}

/** The environment of a fault test's service: the burst scenario, fast webhook retries, the receiver trusted. */
export function serviceEnv(o: { port: number; natsUrl: string; dataDir: string; databaseUrl?: string; speed: number; rx: Receiver }): Record<string, string> {
  const caFile = join(o.dataDir, "..", `receiver-ca-${o.port}.pem`);
  writeFileSync(caFile, o.rx.ca);
  return {
    PORT: String(o.port),
    HOST: "127.0.0.1",
    NATS_URL: o.natsUrl,
    DATA_DIR: o.dataDir,
    ...(o.databaseUrl === undefined ? {} : { DATABASE_URL: o.databaseUrl }),
    FEED: `scenario:${SCENARIO}`,
    SCENARIO_SPEED: String(o.speed),
    // Retry waits 0, 50 ms, 300 ms, 3 s, 18 s, 72 s; a 429's Retry-After: 120 waits 1.2 s.
    WEBHOOK_TIME_SCALE: "0.01",
    TEST_WEBHOOK_CA_FILE: caFile,
    TEST_WEBHOOK_HOSTS: NAME,
    WEBHOOK_ALLOWED_PORTS: String(o.rx.port),
    SECRETS_KEY: TEST_SECRETS_KEY,
    METRICS_PORT: "0",
  };
}

/** One `/readyz` answer: `status` 0 when nothing answered (connection refused, or no answer within 6 s). */
export interface ReadyzSample {
  /** When the request was sent (epoch ms). */
  readonly at: number;
  readonly status: number;
  readonly message: string;
}

export interface ReadyzProbe {
  readonly samples: ReadyzSample[];
  stop(): Promise<void>;
}

/** Asks `/readyz` every 250 ms (one request at a time) until stopped, recording every answer. */
export function probeReadyz(port: number): ReadyzProbe {
  const samples: ReadyzSample[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const at = Date.now();
      try {
        const r = await fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(6_000) });
        const body = (await r.json()) as { message?: string };
        samples.push({ at, status: r.status, message: body.message ?? "" });
      } catch (e) {
        samples.push({ at, status: 0, message: e instanceof Error ? e.message : String(e) });
      }
      await sleep(250);
    }
  })();
  return {
    samples,
    stop: async () => {
      running = false;
      await loop;
    },
  };
}
