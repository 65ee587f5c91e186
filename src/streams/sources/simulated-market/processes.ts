/**
 * The stochastic building blocks of the simulated market. Their state is a JS number used only to choose magnitudes:
 * a price level is an integer count of fixed units (e.g. 1e-8 USD) and becomes a Decimal through `fromUnits`, so no
 * float ever reaches a price.
 */
import { D, type Decimal } from "../../../methodology/index.ts";
import type { Prng } from "./prng.ts";

const POW10: readonly Decimal[] = Array.from({ length: 19 }, (_, i) => new D(`1${"0".repeat(i)}`));

/** `units x 10^-scale` exactly, from the integer's decimal string (never from a float). */
export function fromUnits(units: number, scale: number): Decimal {
  if (!Number.isSafeInteger(units)) throw new RangeError(`not a safe integer unit count: ${String(units)}`);
  const pow = POW10[scale];
  if (pow === undefined) throw new RangeError(`unsupported scale ${scale}`);
  return new D(units.toFixed(0)).div(pow);
}

/** `value x (1 - micro x 10^-6)`: applies a discount given in micro-units (1 micro = 0.01 bps) exactly. */
export function discounted(value: Decimal, micro: number): Decimal {
  return value.times(fromUnits(1_000_000 - micro, 6));
}

/**
 * A discrete Ornstein-Uhlenbeck process (AR(1)): reverts to `mean` with per-step persistence `rho` and stationary
 * standard deviation `sd`. Used for spreads in bps, where persistence makes noise look like a book, not static.
 */
export class MeanReverting {
  #value: number;
  readonly #mean: number;
  readonly #sd: number;
  readonly #rho: number;
  readonly #innovation: number;

  constructor(mean: number, sd: number, rho: number, rng: Prng) {
    this.#mean = mean;
    this.#sd = sd;
    this.#rho = rho;
    this.#innovation = Math.sqrt(1 - rho * rho) * sd;
    this.#value = mean + sd * rng.normal();
  }

  get value(): number {
    return this.#value;
  }

  step(rng: Prng): number {
    this.#value = this.#mean + this.#rho * (this.#value - this.#mean) + this.#innovation * rng.normal();
    return this.#value;
  }

  /** Stationary standard deviation. */
  get sd(): number {
    return this.#sd;
  }
}

export interface WalkParams {
  /** Starting level and mean-reversion anchor, in units. */
  readonly start: number;
  /** Relative standard deviation of one step (0.0002 = 2 bps). */
  readonly stepSd: number;
  /** Fraction of the gap to `start` closed per step: keeps a long-running demo in a realistic range. */
  readonly revert: number;
  /** Hard bounds in units. */
  readonly min: number;
  readonly max: number;
}

/** A bounded, weakly mean-reverting multiplicative random walk on an integer unit count. */
export class PriceWalk {
  #units: number;
  readonly #p: WalkParams;

  constructor(params: WalkParams) {
    this.#p = params;
    this.#units = Math.round(params.start);
  }

  get units(): number {
    return this.#units;
  }

  step(rng: Prng): number {
    const p = this.#p;
    const next = this.#units + this.#units * p.stepSd * rng.normal() + p.revert * (p.start - this.#units);
    this.#units = Math.min(p.max, Math.max(p.min, Math.round(next)));
    return this.#units;
  }
}
