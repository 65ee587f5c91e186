import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadScenario, scenarioNames } from "../src/cli/scenario-files.ts";
import { runCli } from "../src/cli/index.ts";
import { receiptHash } from "../src/methodology/index.ts";
import { captureCli } from "./support/child.ts";

function cli(args: string[], env: Record<string, string> = {}) {
  return captureCli((io) => runCli(args, { ...io, env }));
}

function jsonLines(text: string): Record<string, unknown>[] {
  return text
    .trim()
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

const names = scenarioNames();

describe("scenario library", () => {
  it("ships at least the eight incident shapes", () => {
    expect(names.length).toBeGreaterThanOrEqual(8);
    for (const n of [
      "usdc-march-2023",
      "usdt-zero-print",
      "usdy-garbage-nav",
      "hyusd-cr-oscillation",
      "lst-cascade-black-swan",
      "oracle-confidence-blowout",
      "drift-depeg-flicker",
      "eurc-weekend-dark",
    ]) {
      expect(names).toContain(n);
    }
  });

  it.each(names)("replay %s prints exactly the transitions its description predicts", async (name) => {
    const scenario = loadScenario(name);
    expect(scenario.title).not.toBe(name);
    expect(scenario.description.length).toBeGreaterThan(40);
    const { code, out, err } = await cli(["replay", name]);
    expect(err).toBe("");
    expect(code).toBe(0);
    const lines = jsonLines(out);
    const summary = lines.pop() as { summary: { samples: number; skipped: number; transitions: number } };
    expect(summary.summary.samples).toBe(scenario.samples.length);
    const got = lines.map((l) => `${String(l["asset"])} ${String(l["from_state"])} -> ${String(l["to_state"])}`);
    if (scenario.expectTransitions !== null) expect(lines.length).toBe(scenario.expectTransitions);
    else expect(got).toEqual(scenario.expect.map((e) => `${e.asset} ${e.from} -> ${e.to}`));
    scenario.expect.forEach((e, i) => {
      for (const [k, v] of Object.entries(e.qualifiers)) expect(lines[i]![k], `${name} transition ${i} ${k}`).toBe(v);
    });
    if (scenario.expectSkipped !== null) expect(summary.summary.skipped).toBe(scenario.expectSkipped);
    expect(summary.summary.transitions).toBe(lines.length);
    for (const l of lines) {
      expect(Object.keys(l)).toEqual(["ts", "asset", "from_state", "to_state", "discount", "band", "gate", "trigger", "alert_id", "receipt_sha256"]);
    }
  });

  it("replay is deterministic: byte-identical output on every run", async () => {
    for (const name of names) {
      const a = await cli(["replay", name]);
      const b = await cli(["replay", name]);
      expect(b.out).toBe(a.out);
    }
  });
});

describe("replay --bundles and verify", () => {
  it("every bundle written by replay verifies; tampered copies fail with exit 1", async () => {
    const dir = mkdtempSync(join(tmpdir(), "bundles-"));
    for (const name of names) expect((await cli(["replay", name, "--bundles", dir])).code).toBe(0);
    const files = readdirSync(dir);
    expect(files.length).toBeGreaterThanOrEqual(20);
    for (const [i, f] of files.entries()) {
      const path = join(dir, f);
      const res = await cli(["verify", path]);
      expect(res.code, `${f}: ${res.err}`).toBe(0);
      expect(res.out).toMatch(/^PASS /);
      if (i % 5 !== 0) continue; // tamper a fifth of them: each check is the same code path

      const bundle = JSON.parse(readFileSync(path, "utf8"));
      const tampered = structuredClone(bundle);
      tampered.inputs_frozen.market_usd = String(tampered.inputs_frozen.market_usd) + "1";
      const tp = join(dir, `tampered-${f}`);
      writeFileSync(tp, JSON.stringify(tampered));
      expect((await cli(["verify", tp])).code).toBe(1);
    }
  });

  it("a tampered verdict with a recomputed hash still fails re-derivation (exit 1)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "bundles-"));
    await cli(["replay", "usdc-march-2023", "--bundles", dir]);
    const f = readdirSync(dir)[0]!;
    const bundle = JSON.parse(readFileSync(join(dir, f), "utf8"));
    bundle.expected_computed.final_state = bundle.expected_computed.final_state === "PEGGED" ? "DRIFT" : "PEGGED";
    bundle.expected_receipt_sha256 = receiptHash(bundle.methodology_version, bundle.git_sha, bundle.catalog_entry, bundle.inputs_frozen, bundle.expected_computed);
    const p = join(dir, "rehashed.json");
    writeFileSync(p, JSON.stringify(bundle));
    const res = await cli(["verify", p, "--json"]);
    expect(res.code).toBe(1);
    expect(JSON.parse(res.out)).toMatchObject({ exit: 1, verdict: "FAIL" });
    expect(res.out).toMatch(/final_state/);
  });

  it("exit 3 for another methodology version, exit 2 for unreadable or invalid input", async () => {
    const dir = mkdtempSync(join(tmpdir(), "bundles-"));
    await cli(["replay", "oracle-confidence-blowout", "--bundles", dir]);
    const bundle = JSON.parse(readFileSync(join(dir, readdirSync(dir)[0]!), "utf8"));
    const v2 = join(dir, "v2.json");
    writeFileSync(v2, JSON.stringify({ ...bundle, methodology_version: "2.0.0" }));
    expect((await cli(["verify", v2])).code).toBe(3);
    const garbage = join(dir, "garbage.json");
    writeFileSync(garbage, "{not json");
    expect((await cli(["verify", garbage])).code).toBe(2);
    const schema = join(dir, "schema.json");
    writeFileSync(schema, JSON.stringify({ ...bundle, schema_version: "9" }));
    expect((await cli(["verify", schema])).code).toBe(2);
    const missing = join(dir, "missing.json");
    const { inputs_frozen: _, ...noInputs } = bundle;
    writeFileSync(missing, JSON.stringify(noInputs));
    expect((await cli(["verify", missing])).code).toBe(2);
    expect((await cli(["verify", join(dir, "does-not-exist.json")])).code).toBe(2);
    expect((await cli(["verify"])).code).toBe(2);
  });

  it("verifies a bundle fetched from a URL", async () => {
    const dir = mkdtempSync(join(tmpdir(), "bundles-"));
    await cli(["replay", "msol-premium-sanity", "--bundles", dir]);
    const body = readFileSync(join(dir, readdirSync(dir)[0]!));
    const server = createServer((req, res) => {
      if (req.url === "/v1/audit/x/replay-bundle") {
        res.writeHead(200, { "content-type": "application/json" }).end(body);
      } else res.writeHead(404).end();
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as AddressInfo).port;
    try {
      expect((await cli(["verify", `http://127.0.0.1:${port}/v1/audit/x/replay-bundle`])).code).toBe(0);
      expect((await cli(["verify", `http://127.0.0.1:${port}/nope`])).code).toBe(2);
    } finally {
      server.close();
    }
  });
});

describe("CLI usage", () => {
  it("reports bad scenario lines with their line number (exit 2)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "scen-"));
    const p = join(dir, "bad.jsonl");
    writeFileSync(
      p,
      [
        "# title: bad",
        '{"ts":"2026-06-12T10:00:00.000Z","asset":"USDC","intrinsic_usd":"1","market_usd":"1"}',
        '{"ts":"2026-06-12T10:00:01.000Z","asset":"USDC","intrinsic_usd":"1","market_usd":0.99}',
      ].join("\n"),
    );
    const res = await cli(["replay", p]);
    expect(res.code).toBe(2);
    expect(res.err).toMatch(/bad:3: market_usd: must be a decimal string/);
    writeFileSync(p, '{"ts":"2026-06-12T10:00:00.000Z","asset":"NOPE","intrinsic_usd":"1","market_usd":"1"}\n');
    expect((await cli(["replay", p])).err).toMatch(/NOPE.*not an active catalog asset/);
    writeFileSync(
      p,
      '{"ts":"2026-06-12T10:00:01.000Z","asset":"USDC","intrinsic_usd":"1","market_usd":"1"}\n{"ts":"2026-06-12T10:00:00.000Z","asset":"USDC","intrinsic_usd":"1","market_usd":"1"}\n',
    );
    expect((await cli(["replay", p])).err).toMatch(/:2: ts goes backwards/);
    expect((await cli(["replay", "no-such-scenario"])).code).toBe(2);
    expect((await cli(["replay"])).code).toBe(2);
    expect((await cli(["replay", "usdt-zero-print", "--bogus"])).code).toBe(2);
  });

  it("refuses invalid configuration listing every problem", async () => {
    const res = await cli(["replay", "usdt-zero-print"], { PORT: "0", GIT_SHA: "xyz" });
    expect(res.code).toBe(2);
    expect(res.err).toMatch(/PORT/);
    expect(res.err).toMatch(/GIT_SHA/);
  });

  it("lists scenarios and the catalog; unknown commands are usage errors", async () => {
    const s = await cli(["scenarios", "--json"]);
    expect(jsonLines(s.out).map((r) => r["name"])).toEqual(names);
    const c = await cli(["catalog", "--json"]);
    const rows = jsonLines(c.out);
    expect(rows.length).toBe(69);
    expect(rows.find((r) => r["symbol"] === "USD*")).toMatchObject({ class: "stable_yield", anchor: "NAV", risk_side: "either" });
    expect((await cli(["catalog"])).out).toMatch(/69 active of 72/);
    expect((await cli(["frobnicate"])).code).toBe(2);
    expect((await cli(["--help"])).code).toBe(0);
  });

  it("GIT_SHA is hashed into receipts", async () => {
    const a = jsonLines((await cli(["replay", "oracle-confidence-blowout"])).out);
    const b = jsonLines((await cli(["replay", "oracle-confidence-blowout"], { GIT_SHA: "abcdef1" })).out);
    expect(a[0]!["alert_id"]).toBe(b[0]!["alert_id"]);
    expect(a[0]!["receipt_sha256"]).not.toBe(b[0]!["receipt_sha256"]);
  });
});
