/**
 * A lease acquisition reads the asset's snapshot to resume from it. A snapshot that cannot be *fetched* (a NATS
 * timeout under load: seen at 10,000 assets by bench:cluster) must fail the read, so the acquisition is tried again;
 * before, it was taken for an unreadable snapshot and the asset resumed from an older transition or cold, rewound.
 * A snapshot that was fetched but does not decode is still ignored, with a warning.
 */
import { describe, expect, it } from "vitest";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import { ensureTopology, readRecovery, type Topology } from "../../src/streams/jetstream/index.ts";
import { natsForSuite } from "../support/nats.ts";

const suite = natsForSuite();
const USDC = loadShippedCatalog().bySymbol("USDC")!;

describe("readRecovery of one asset", () => {
  it("fails when the snapshot cannot be fetched, and ignores one that does not decode", async () => {
    const topology = await ensureTopology(suite.nc);
    const timingOut: Topology = {
      ...topology,
      actors: new Proxy(topology.actors, {
        get: (target, key, receiver) =>
          key === "get" ? () => Promise.reject(Object.assign(new Error("TIMEOUT"), { name: "TimeoutError" })) : Reflect.get(target, key, receiver),
      }),
    };
    await expect(readRecovery([USDC], timingOut)).rejects.toThrow("TIMEOUT");

    await topology.actors.put(USDC.mint, "{not json");
    const warnings: string[] = [];
    const read = await readRecovery([USDC], topology, { log: (_level, msg) => warnings.push(msg) });
    expect(read.states.has(USDC.mint)).toBe(false);
    expect(warnings).toEqual(["ignoring unreadable actor snapshot"]);
  });
});
