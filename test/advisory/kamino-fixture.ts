/** Kamino obligations as Kamino's API serialises them, for the adapter's tests (values are decimal strings). */
import { KAMINO_MAIN_MARKET } from "../../src/streams/positions/index.ts";

export const SOL = "So11111111111111111111111111111111111111112";
export const OWNER = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM";
export const OBLIGATION = "3HdrCvoJ91bwgVTejdDXfguo6S2A9jjUkBR5fasq4WhB";

/** One obligation as Kamino's API serialises it (values are decimal strings). */
export function obligation(o: { deposits: [string, string][]; borrows: [string, string][]; liquidationLtv: string; adjustedDebt?: string }): unknown {
  const debt = o.borrows.reduce((s, [, v]) => s + Number(v), 0);
  return {
    obligationAddress: OBLIGATION,
    state: {
      tag: "0",
      lendingMarket: KAMINO_MAIN_MARKET,
      owner: OWNER,
      deposits: o.deposits.map(([mint]) => ({ depositReserve: mint, depositedAmount: "1", marketValueSf: "1" })),
      borrows: [],
      referrer: "11111111111111111111111111111111",
    },
    refreshedStats: {
      leverage: "3.1",
      borrowLimit: "0",
      loanToValue: "0.8",
      liquidationLtv: o.liquidationLtv,
      netAccountValue: "0",
      userTotalBorrow: String(debt),
      userTotalDeposit: "0",
      borrowUtilization: "0.9",
      borrowLiquidationLimit: "0",
      userTotalCollateralDeposit: "0",
      userTotalLiquidatableDeposit: "0",
      potentialElevationGroupUpdate: 0,
      userTotalBorrowBorrowFactorAdjusted: o.adjustedDebt ?? String(debt),
    },
    deposits: o.deposits.map(([mintAddress, v]) => ({ mintAddress, amount: "1000000000", marketValueRefreshed: v })),
    borrows: o.borrows.map(([mintAddress, v]) => ({ mintAddress, amount: "1000000000", marketValueRefreshed: v })),
    obligationTag: 1,
    humanTag: "Multiply",
  };
}

