/**
 * `verifyReceipt` is `peg-oracle verify`'s offline check: on every replay bundle of every shipped scenario (replayed
 * by the real engine) both pass with the same hash, and on tampered bundles both refuse with the same verdict.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { verifyReceipt } from "@peg-oracle/client";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import { loadScenario, scenarioNames } from "../../src/cli/scenario-files.ts";
import { verifyCommand } from "../../src/cli/verify.ts";
import { replayBundle } from "../../src/methodology/index.ts";
import { replayScenario } from "../../src/streams/sources/scenario/replay.ts";

const catalog = loadShippedCatalog();
const dir = mkdtempSync(join(tmpdir(), "peg-client-verify-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Every transition of every shipped scenario, as the bundle the API serves (plain JSON). */
const bundles: { name: string; bundle: Record<string, unknown> }[] = scenarioNames().flatMap((name) =>
  replayScenario(loadScenario(name), { resolve: (s) => catalog.bySymbol(s), gitSha: "0123456789abcdef0123456789abcdef01234567" }).receipts.map((r) => ({
    name: `${name}/${r.alert_id}`,
    bundle: JSON.parse(JSON.stringify(replayBundle(r))) as Record<string, unknown>,
  })),
);

let n = 0;
/** `peg-oracle verify <file> --json`, in-process. */
async function cliVerify(bundle: unknown): Promise<{ exit: number; verdict: string; message: string; receipt_sha256?: string }> {
  const file = join(dir, `b${n++}.json`);
  writeFileSync(file, typeof bundle === "string" ? bundle : JSON.stringify(bundle));
  const stdout = new PassThrough();
  let out = "";
  stdout.on("data", (c: Buffer) => (out += c.toString()));
  const exit = await verifyCommand([file, "--json"], { stdout, stderr: new PassThrough(), env: {} });
  const body = JSON.parse(out) as { exit: number; verdict: string; message: string; receipt_sha256?: string };
  expect(body.exit).toBe(exit);
  return body;
}

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** Paths to every leaf the hash or the verdict covers (state_reason is advisory and outside both). */
function leaves(v: Json, path: (string | number)[] = []): (string | number)[][] {
  if (Array.isArray(v)) return v.flatMap((x, i) => leaves(x, [...path, i]));
  if (v !== null && typeof v === "object") return Object.entries(v).flatMap(([k, x]) => (path.length === 0 && k === "state_reason" ? [] : leaves(x, [...path, k])));
  return [path];
}

/** The bundle with the leaf at `path` changed to another value of the same kind. */
function tamper(bundle: Record<string, unknown>, path: (string | number)[]): Record<string, unknown> {
  const copy = structuredClone(bundle) as Record<string, Json>;
  let parent = copy as unknown as Record<string | number, Json>;
  for (const k of path.slice(0, -1)) parent = parent[k] as unknown as Record<string | number, Json>;
  const key = path.at(-1)!;
  const v = parent[key];
  if (typeof v === "string") parent[key] = /\d/.test(v) ? v.replace(/\d(?!.*\d)/, (d) => String((Number(d) + 1) % 10)) : `${v}x`;
  else if (typeof v === "number") parent[key] = v + 1;
  else if (typeof v === "boolean") parent[key] = !v;
  else parent[key] = "0";
  return copy;
}

describe("verifyReceipt agrees with peg-oracle verify", () => {
  it("passes every bundle of every shipped scenario, with the CLI's hash", async () => {
    expect(bundles.length).toBeGreaterThan(250);
    for (const { name, bundle } of bundles) {
      const mine = verifyReceipt(bundle);
      const cli = await cliVerify(bundle);
      expect({ ok: mine.ok, exit: mine.exit, verdict: mine.verdict, message: mine.message }, name).toEqual({ ok: true, exit: 0, verdict: "PASS", message: cli.message });
      expect(cli.exit).toBe(0);
      expect(mine.receiptSha256).toBe(cli.receipt_sha256);
      expect(mine.receiptSha256).toBe(bundle["expected_receipt_sha256"]);
      // As text, too.
      expect(verifyReceipt(JSON.stringify(bundle)).ok).toBe(true);
    }
  });

  it("refuses every tampered bundle exactly as the CLI does", async () => {
    await fc.assert(
      fc.asyncProperty(fc.nat(bundles.length - 1), fc.nat(), async (b, l) => {
        const { bundle } = bundles[b]!;
        const paths = leaves(bundle as Json);
        const path = paths[l % paths.length]!;
        const bad = tamper(bundle, path);
        const mine = verifyReceipt(bad);
        const cli = await cliVerify(bad);
        expect(mine.ok, path.join(".")).toBe(false);
        expect({ exit: mine.exit, verdict: mine.verdict, message: mine.message }).toEqual({ exit: cli.exit, verdict: cli.verdict, message: cli.message });
        expect([1, 2, 3]).toContain(mine.exit);
      }),
      { numRuns: 300 },
    );
  });

  it("refuses what is not a bundle, like the CLI", async () => {
    const { bundle } = bundles[0]!;
    const other = { ...bundle, methodology_version: "2.0.0" };
    for (const bad of ["{not json", "[]", "null", { ...bundle, schema_version: "2" }, other, { ...bundle, expected_receipt_sha256: "ABC" }]) {
      const mine = verifyReceipt(bad);
      const cli = await cliVerify(bad);
      expect(mine.ok).toBe(false);
      expect(mine.exit).toBe(cli.exit);
      expect(mine.verdict).toBe(cli.verdict);
    }
    expect(verifyReceipt(other)).toMatchObject({ verdict: "VERSION_MISMATCH", exit: 3 });
  });
});
