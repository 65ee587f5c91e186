/**
 * The static pages hold to the CSP the server sends (script-src 'self', styles from /static/app.css): no inline
 * scripts, handlers or style attributes, nothing fetched from another origin, no eval; every referenced module
 * exists in the flat /static/ directory; the ids the browser test relies on are there; and the page modules
 * touch no DOM at import time in the shared modules.
 */
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const PUBLIC = fileURLToPath(new URL("../../public/", import.meta.url));
const STATIC = join(PUBLIC, "static");
const PAGES = ["index.html", "asset.html", "receipt.html"];
const read = (p: string): string => readFileSync(p, "utf8");
const scripts = readdirSync(STATIC).filter((f) => f.endsWith(".js"));

describe("pages", () => {
  for (const page of PAGES) {
    const html = read(join(PUBLIC, page));
    it(`${page}: CSP-friendly, same-origin, flat /static/ references`, () => {
      expect(html.startsWith("<!doctype html>")).toBe(true);
      // Scripts only as external modules, no inline code.
      const scriptTags = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
      expect(scriptTags.length).toBe(1);
      for (const [, attrs, body] of scriptTags) {
        expect(attrs).toMatch(/type="module"/);
        expect(attrs).toMatch(/src="\/static\/[\w-]+\.js"/);
        expect(body!.trim()).toBe("");
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

  it("has the ids and hooks the browser test relies on", () => {
    const index = read(join(PUBLIC, "index.html"));
    expect(index).toMatch(/<table id="assets"/);
    expect(index).toMatch(/<ol id="feed"/);
    expect(index).toMatch(/id="conn"/);
    expect(index).toMatch(/id="filter-class"/);
    expect(index).toMatch(/id="filter-state"/);
    const asset = read(join(PUBLIC, "asset.html"));
    for (const id of ["diagram", "countdown", "inspector", "events", "transitions"]) expect(asset).toContain(`id="${id}"`);
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
    it(`${file}: no eval, no remote imports, imports resolve in /static/`, () => {
      expect(src).not.toMatch(/\beval\s*\(/);
      expect(src).not.toMatch(/new\s+Function\s*\(/);
      expect(src).not.toMatch(/https?:\/\/(?!www\.w3\.org\/2000\/svg)/);
      expect(src).not.toMatch(/\.setAttribute\(\s*["']style["']/);
      for (const m of src.matchAll(/^import\s[^;]*?from\s+"([^"]+)";/gm)) {
        expect(m[1], `${file} imports ${m[1]}`).toMatch(/^\.\/[\w-]+\.js$/);
        expect(scripts).toContain(m[1]!.slice(2));
      }
    });
  }

  it("the shared modules import under Node without a DOM", async () => {
    for (const file of ["format.js", "sparkline.js", "diagram.js", "jcs.js", "ws.js", "model.js", "api.js", "dom.js", "sha256.js"]) {
      await expect(import(join(STATIC, file)), file).resolves.toBeDefined();
    }
  });
});
