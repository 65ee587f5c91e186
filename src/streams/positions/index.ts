/** Lending-position sources behind the advisory loop-exposure figures, and the book that refreshes them. */
export { PositionsBook, type PositionsBookOptions, type PositionsLog } from "./book.ts";
export { kaminoPositions, parseKaminoObligations, positionsOfObligation, KAMINO_DEFAULT_BASE_URL, KAMINO_MAIN_MARKET, type KaminoPositionsOptions } from "./kamino.ts";
export { simulatedPositions, SIM_PROTOCOLS, type SimulatedPositionsOptions } from "./simulated.ts";
export type { PositionSource, PositionSourceStats } from "./source.ts";
