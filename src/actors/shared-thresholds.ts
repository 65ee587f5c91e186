import type { MethodologyAsset, Thresholds } from "../methodology/index.ts";

/**
 * Hands each actor its asset's methodology members with the thresholds object shared by every asset whose thresholds
 * are equal (same members, in the same order, with the same values). The methodology memoises its decimal band
 * levels per thresholds object (by identity): about 1 KB of decimals for each object it meets, so without sharing
 * every actor kept its own copy of levels most assets have in common (the shipped catalog has 19 distinct sets for
 * 69 assets). Only the object's identity changes: its members, and so every receipt and replay, are the same.
 */
export class SharedThresholds {
  readonly #byKey = new Map<string, Thresholds>();

  /** `asset` itself when its thresholds are the first of their kind (or not plain numbers), else a frozen copy. */
  methodologyOf(asset: MethodologyAsset): MethodologyAsset {
    const key = keyOf(asset.thresholds);
    if (key === null) return asset;
    const shared = this.#byKey.get(key);
    if (shared === undefined) {
      this.#byKey.set(key, asset.thresholds);
      return asset;
    }
    return shared === asset.thresholds ? asset : Object.freeze({ ...asset, thresholds: shared });
  }
}

/** Members and values in order; null (never shared) for anything but a plain object of numbers other than -0. */
function keyOf(t: Thresholds): string | null {
  if (Object.getPrototypeOf(t) !== Object.prototype) return null;
  let key = "";
  for (const [name, value] of Object.entries(t)) {
    if (typeof value !== "number" || Object.is(value, -0)) return null;
    key += `${JSON.stringify(name)}:${value},`; // the name quoted: no member name can pass for two
  }
  return key;
}
