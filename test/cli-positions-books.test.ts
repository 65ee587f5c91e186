/**
 * The service's advisory positions in slices (src/cli/positions-books.ts): the union of the sliced books is exactly the
 * single book over every asset, nothing is served before every slice has loaded, and a stop before the last slice
 * leaves no book running.
 */
import { describe, expect, it } from "vitest";
import { loadShippedCatalog } from "../src/catalog/index.ts";
import { positionsBooks } from "../src/cli/positions-books.ts";
import { SimulatedClock } from "../src/clock.ts";
import { PositionsBook, simulatedPositions } from "../src/streams/positions/index.ts";

const catalog = loadShippedCatalog();
const T0 = Date.parse("2026-11-25T12:00:30Z");

describe("positionsBooks", () => {
  it("serves exactly the single book's exposures, and nothing until every slice has loaded", async () => {
    const clock = new SimulatedClock(T0);
    const single = new PositionsBook({ sources: [simulatedPositions({ assets: catalog.active, seed: 7 })], clock });
    await single.refresh();
    const books = positionsBooks({ assets: catalog.active, seed: 7, kaminoUrl: null, clock, log: () => {}, assetsPerBook: 10 });
    expect(books.snapshot()).toBeNull();
    const loading = books.start();
    expect(books.snapshot()).toBeNull(); // the first slice is loading, the others not started
    await loading;
    const want = single.snapshot()!;
    const got = books.snapshot()!;
    expect(got.updatedAt).toBe(want.updatedAt);
    expect([...got.byMint.keys()].sort()).toEqual([...want.byMint.keys()].sort());
    for (const mint of want.byMint.keys()) expect(got.byMint.get(mint), mint).toEqual(want.byMint.get(mint));
    // The same snapshot object while no slice refreshed.
    expect(books.snapshot()).toBe(got);
    await books.stop();
    await single.stop();
  });

  it("stops between slices: no later slice starts, no refresh stays armed", async () => {
    const clock = new SimulatedClock(T0);
    const books = positionsBooks({ assets: catalog.active, seed: 7, kaminoUrl: null, clock, log: () => {}, assetsPerBook: 10 });
    const loading = books.start();
    await books.stop();
    await loading;
    expect(books.snapshot()).toBeNull();
    expect(clock.pending).toBe(0);
  });
});
