/**
 * The simulated market's only source of randomness: mulberry32, a 32-bit seeded generator. Every draw goes through
 * integer arithmetic (`Math.imul`, shifts) and IEEE additions/multiplications only (no `Math.log`, `Math.cos`), so the
 * same seed gives bit-identical draws on every platform and Node version.
 */

/** FNV-1a over the label, mixed with the seed: independent streams per asset / process from one user seed. */
export function streamSeed(seed: number, label: string): number {
  let h = 0x811c9dc5 ^ (seed >>> 0);
  for (let i = 0; i < label.length; i++) {
    h ^= label.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  // Final avalanche (murmur3 fmix32) so seeds 1 and 2 do not start on neighbouring states.
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** sqrt(3): scales the Irwin-Hall sum of four uniforms (variance 1/3) to unit variance. */
const SQRT3 = Math.sqrt(3);

export class Prng {
  #state: number;

  constructor(seed: number) {
    this.#state = seed >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) | 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** Uniform in [lo, hi). */
  uniform(lo: number, hi: number): number {
    return lo + (hi - lo) * this.next();
  }

  /** Uniform integer in [lo, hi], both inclusive. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  /** True with probability p. */
  chance(p: number): boolean {
    return this.next() < p;
  }

  /**
   * Approximately standard normal (Irwin-Hall of four uniforms): mean 0, variance 1, bounded to +-3.46. The bound is
   * deliberate: organic noise never produces an outlier large enough to look like an incident.
   */
  normal(): number {
    return (this.next() + this.next() + this.next() + this.next() - 2) * SQRT3;
  }

  /** One element, uniformly. The list must not be empty. */
  pick<T>(items: readonly T[]): T {
    const item = items[Math.floor(this.next() * items.length)];
    if (item === undefined) throw new RangeError("pick from an empty list");
    return item;
  }
}
