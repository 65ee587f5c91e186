/**
 * Start-up against the methodology lifecycle, through the real CLI process (`node --import tsx src/main.ts serve`):
 * a registry that marks 1.0.0 broken stops the start with exit 1 and a message naming fix_url, before any database,
 * NATS store or port is opened; a deprecated 1.0.0 starts, logs one warning line and serves its status.
 */
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { SHIPPED_REGISTRY, ownRelease, type MethodologyRelease } from "../src/methodology/index.ts";
import { startNats, type TestNats } from "./support/nats.ts";
import { freePort } from "./support/ports.ts";
import { spawnServe, type ServeProcess } from "./support/serve.ts";

const dirs: string[] = [];
let nats: TestNats | undefined;

afterAll(async () => {
  await nats?.dispose();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
}

function registry(dir: string, versions: readonly MethodologyRelease[]): string {
  const path = join(dir, "registry.json");
  writeFileSync(path, JSON.stringify({ versions }));
  return path;
}

const own = (over: Partial<MethodologyRelease>): MethodologyRelease => ({ ...ownRelease(SHIPPED_REGISTRY), ...over });
const FIX = "docs/methodology-lifecycle.md#when-a-version-is-broken";

const serve = (env: Record<string, string>): ServeProcess => spawnServe({ FEED: "sim", ...env });

const lines = (text: string): Record<string, unknown>[] =>
  text
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe("serve and the methodology lifecycle", () => {
  it("refuses to start when 1.0.0 is broken: exit 1, one error line naming fix_url, nothing opened", async () => {
    const data = tempDir("peg-broken-");
    const path = registry(tempDir("peg-reg-"), [own({ status: "broken", status_reason: "receipt hash omits the catalog entry", fix_url: FIX })]);
    // No NATS_URL and no DATABASE_URL: starting would create DATA_DIR/nats and DATA_DIR/pg.
    const run = serve({ DATA_DIR: data, PORT: String(await freePort()), METHODOLOGY_REGISTRY: path });
    expect(await run.exited, run.stderr()).toBe(1);
    const logged = lines(run.stderr());
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({ level: "error", methodology: "1.0.0", status: "broken", superseded_by: null, fix_url: FIX });
    expect(logged[0]!["msg"]).toBe(
      `methodology 1.0.0 is broken (receipt hash omits the catalog entry): this build must not serve. Refusing to start; what to do: ${FIX}`,
    );
    expect(readdirSync(data)).toEqual([]);
  }, 60_000);

  it("an invalid registry file is an invalid configuration: exit 2, naming METHODOLOGY_REGISTRY", async () => {
    const data = tempDir("peg-badreg-");
    const path = registry(tempDir("peg-reg-"), [own({ status: "broken", status_reason: "bug", fix_url: "https://example.com/fix" })]);
    const run = serve({ DATA_DIR: data, PORT: String(await freePort()), METHODOLOGY_REGISTRY: path });
    expect(await run.exited, run.stderr()).toBe(2);
    expect(run.stderr()).toContain(`METHODOLOGY_REGISTRY="${path}": invalid methodology registry: versions[0].fix_url: a broken version needs a link`);
    expect(readdirSync(data)).toEqual([]);
  }, 60_000);

  it("starts when 1.0.0 is deprecated, with one warning line first, and serves that status", async () => {
    nats = await startNats();
    const data = tempDir("peg-deprecated-");
    const reg = tempDir("peg-reg-");
    const path = registry(reg, [
      own({ status: "deprecated", status_reason: "oracle inputs change on 2026-12-01", superseded_by: "1.1.0" }),
      own({ version: "1.1.0", git_tag: "methodology-v1.1.0" }),
    ]);
    const port = await freePort();
    const run = serve({ DATA_DIR: data, PORT: String(port), HOST: "127.0.0.1", NATS_URL: nats.url, METHODOLOGY_REGISTRY: path });
    try {
      await run.waitFor('"msg":"serving"');
      const logged = lines(run.stderr());
      const warnings = logged.filter((l) => String(l["msg"]).includes("deprecated"));
      expect(warnings).toEqual([
        {
          ts: expect.any(String),
          level: "warn",
          msg: "methodology 1.0.0 is deprecated (oracle inputs change on 2026-12-01); superseded by 1.1.0; plan the upgrade: docs/methodology-lifecycle.md#deprecated",
          methodology: "1.0.0",
          status: "deprecated",
          superseded_by: "1.1.0",
        },
      ]);
      // The warning comes before anything is opened.
      expect(logged.indexOf(warnings[0]!)).toBeLessThan(logged.findIndex((l) => l["msg"] === "http listening"));
      expect(logged.find((l) => l["msg"] === "serving")).toMatchObject({ methodology: "1.0.0", methodology_status: "deprecated" });

      const current = await fetch(`http://127.0.0.1:${port}/v1/methodology/current`);
      expect(current.status).toBe(200);
      expect(await current.json()).toEqual({
        version: "1.0.0",
        status: "deprecated",
        git_tag: "methodology-v1.0.0",
        released_at: ownRelease(SHIPPED_REGISTRY).released_at,
        status_reason: "oracle inputs change on 2026-12-01",
        superseded_by: "1.1.0",
      });
      const feed = (await (await fetch(`http://127.0.0.1:${port}/v1/peg/feed`)).json()) as Record<string, unknown>;
      expect(feed["methodology"]).toBe("1.0.0");
    } finally {
      run.proc.kill("SIGTERM");
    }
    expect(await run.exited, run.stderr().slice(-2000)).toBe(0);
  }, 90_000);
});
