/**
 * Synthetic catalogs for the scale benchmarks: the shipped catalog plus copies of its active assets under new symbols
 * (`USDC.17`) and new mints, validated by the same `loadCatalog` as the shipped one, so the service runs them exactly
 * as real assets (one actor each, rows in `assets`, snapshots in `peg_actors`).
 */
import { readFileSync } from "node:fs";
import { base58Encode, loadCatalog, SHIPPED_CATALOG_URL, type Catalog } from "../src/catalog/index.ts";

/** A 32-byte mint that no real asset has: a 0xFE tag byte, then the index. */
function syntheticMint(i: number): string {
  const bytes = new Uint8Array(32);
  bytes[0] = 0xfe;
  bytes[1] = (i >> 16) & 0xff;
  bytes[2] = (i >> 8) & 0xff;
  bytes[3] = i & 0xff;
  for (let b = 4; b < 32; b++) bytes[b] = (i * 131 + b * 31) & 0xff;
  return base58Encode(bytes);
}

/** The shipped catalog grown to `activeAssets` active assets (at least the shipped ones). */
export function syntheticCatalog(activeAssets: number): Catalog {
  const doc = JSON.parse(readFileSync(SHIPPED_CATALOG_URL, "utf8")) as { assets: Record<string, unknown>[] };
  const templates = doc.assets.filter((a) => a["active"] === true);
  const extra = Math.max(0, activeAssets - templates.length);
  for (let i = 0; i < extra; i++) {
    const t = templates[i % templates.length]!;
    doc.assets.push({ ...t, symbol: `${String(t["symbol"])}.${i}`, mint: syntheticMint(i) });
  }
  return loadCatalog(doc);
}
