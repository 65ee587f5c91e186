/**
 * The static pages hold to the CSP the server sends (script-src 'self', styles from /static/app.css): no inline
 * scripts (but an import map, which the server allows by its hash), handlers or style attributes, nothing fetched
 * from another origin, no eval; every referenced module exists in the flat /static/ directory, and every package a
 * page's modules import is mapped by that page's import map to a vendored file (src/http/static-vendor.ts); every
 * page runs the client package (@peg-oracle/client: the live pages' PegStream, the receipt page's verifyReceipt);
 * the ids the browser test relies on are there; and the page modules touch no DOM at import time in the shared modules.
 */
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { VENDOR_FILES } from "../../src/http/static-vendor.ts";

const PUBLIC = fileURLToPath(new URL("../../public/", import.meta.url));
const STATIC = join(PUBLIC, "static");
const PAGES = ["index.html", "asset.html", "receipt.html"];
const read = (p: string): string => readFileSync(p, "utf8");
const scripts = readdirSync(STATIC).filter((f) => f.endsWith(".js"));
const importsOf = (file: string): string[] => [...read(join(STATIC, file)).matchAll(/^import\s[^;]*?from\s+"([^"]+)";/gm)].map((m) => m[1]!);
const isRelative = (specifier: string): boolean => specifier.startsWith("./");
/** A page's import map (`imports` only), or an empty one. */
function importMapOf(html: string): Record<string, string> {
  const m = /<script type="importmap">([\s\S]*?)<\/script>/.exec(html);
  if (m === null) return {};
  const map = JSON.parse(m[1]!) as Record<string, unknown>;
  expect(Object.keys(map)).toEqual(["imports"]);
  return map["imports"] as Record<string, string>;
}
/** The packages (bare specifiers) imported by `entry` and the /static/ modules it reaches. */
function packagesReachedFrom(entry: string): Set<string> {
  const packages = new Set<string>();
  const seen = new Set<string>();
  const visit = (file: string): void => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const s of importsOf(file)) {
      if (isRelative(s)) visit(s.slice(2));
      else packages.add(s);
    }
  };
  visit(entry);
  return packages;
}

describe("pages", () => {
  for (const page of PAGES) {
    const html = read(join(PUBLIC, page));
    it(`${page}: CSP-friendly, same-origin, flat /static/ references`, () => {
      expect(html.startsWith("<!doctype html>")).toBe(true);
      // Scripts only as external modules, no inline code but an import map, which comes first.
      const allTags = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
      const scriptTags = allTags.filter(([, attrs]) => attrs !== ' type="importmap"');
      expect(allTags.length - scriptTags.length).toBeLessThanOrEqual(1);
      if (allTags.length > scriptTags.length) expect(allTags[0]![1]).toBe(' type="importmap"');
      expect(scriptTags.length).toBe(1);
      for (const [, attrs, body] of scriptTags) {
        expect(attrs).toMatch(/type="module"/);
        expect(attrs).toMatch(/src="\/static\/[\w-]+\.js"/);
        expect(body!.trim()).toBe("");
      }
      // Every package the page's modules import, and nothing else, is mapped, and only to a vendored file.
      const entry = /<script type="module" src="\/static\/([\w-]+\.js)"/.exec(html)![1]!;
      const map = importMapOf(html);
      expect(Object.keys(map).sort(), "import map entries").toEqual([...packagesReachedFrom(entry)].sort());
      for (const [specifier, url] of Object.entries(map)) {
        expect(VENDOR_FILES.map(([u]) => u), `${specifier} -> ${url}`).toContain(url);
      }
      expect(html).not.toMatch(/\son[a-z]+\s*=/i);
      expect(html).not.toMatch(/\sstyle\s*=/i);
      expect(html).not.toMatch(/<style\b/i);
      expect(html).not.toMatch(/javascript:/i);
      expect(html).not.toMatch(/(src|href)="(https?:)?\/\//i);
      const links = [...html.matchAll(/<link\b[^>]*href="([^"]+)"/g)].map((m) => m[1]);
      expect(links).toEqual(["/static/favicon.svg", "/static/app.css"]);
      for (const m of html.matchAll(/src="\/static\/([^"]+)"/g)) expect(scripts).toContain(m[1]);
    });
  }

  it("every page runs the client package, mapped to its browser module", () => {
    for (const page of PAGES) {
      const html = read(join(PUBLIC, page));
      const entry = /<script type="module" src="\/static\/([\w-]+\.js)"/.exec(html)![1]!;
      expect([...packagesReachedFrom(entry)], page).toContain("@peg-oracle/client");
      expect(importMapOf(html)["@peg-oracle/client"], page).toBe("/static/vendor/peg-client.js");
    }
    expect(importsOf("ws.js")).toContain("@peg-oracle/client");
    expect(importsOf("receipt.js")).toContain("@peg-oracle/client");
  });

  it("has the ids and hooks the browser test relies on", () => {
    const index = read(join(PUBLIC, "index.html"));
    expect(index).toMatch(/<table id="assets"/);
    expect(index).toMatch(/<ol id="feed"/);
    expect(index).toMatch(/id="conn"/);
    expect(index).toMatch(/id="filter-class"/);
    expect(index).toMatch(/id="filter-state"/);
    const asset = read(join(PUBLIC, "asset.html"));
    for (const id of ["diagram", "countdown", "inspector", "events", "transitions", "chart", "chart-ranges", "chart-status"]) expect(asset).toContain(`id="${id}"`);
    // The chart panel comes first after the card: the page leads with it.
    expect(asset.indexOf('id="chart"')).toBeLessThan(asset.indexOf('id="diagram"'));
    expect(index).toContain('id="state-summary"');
    expect(read(join(PUBLIC, "receipt.html"))).toContain('id="verdict"');
    const indexJs = read(join(STATIC, "index.js"));
    expect(indexJs).toContain("dataset: { symbol: card.symbol }");
    const dom = read(join(STATIC, "dom.js"));
    expect(dom).toMatch(/class: "badge", dataset: \{ state: s \}/);
  });
});

describe("modules", () => {
  for (const file of scripts) {
    const src = read(join(STATIC, file));
    it(`${file}: no eval, no remote imports, imports resolve in /static/ or are vendored packages`, () => {
      expect(src).not.toMatch(/\beval\s*\(/);
      expect(src).not.toMatch(/new\s+Function\s*\(/);
      expect(src).not.toMatch(/https?:\/\/(?!www\.w3\.org\/2000\/svg)/);
      expect(src).not.toMatch(/\.setAttribute\(\s*["']style["']/);
      for (const specifier of importsOf(file)) {
        if (isRelative(specifier)) {
          expect(specifier, `${file} imports ${specifier}`).toMatch(/^\.\/[\w-]+\.js$/);
          expect(scripts).toContain(specifier.slice(2));
        } else {
          // A package: one whose module is served under /static/vendor/ (the pages' import maps are checked above).
          expect(VENDOR_FILES.map(([, s]) => s), `${file} imports ${specifier}`).toContain(specifier);
        }
      }
    });
  }

  it("the shared modules import under Node without a DOM", async () => {
    for (const file of ["format.js", "sparkline.js", "diagram.js", "ws.js", "model.js", "api.js", "dom.js", "chart.js", "chart-data.js"]) {
      await expect(import(join(STATIC, file)), file).resolves.toBeDefined();
    }
  });
});
