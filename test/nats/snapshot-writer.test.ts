/**
 * The actor snapshot writer (src/streams/jetstream/snapshots.ts): latest state wins, encoded only when written; a
 * flush writes at most `maxPerFlush` assets, the longest-dirty first, `concurrency` at a time; a failed put stays
 * dirty unless replaced; a hand-over writes its asset at once, after its own write in flight and whatever other
 * flushes run; closing writes everything, what a flush running meanwhile failed to write included.
 */
import type { KV } from "@nats-io/kv";
import { describe, expect, it } from "vitest";
import { SnapshotWriter } from "../../src/streams/jetstream/snapshots.ts";

/** The one KV method the writer uses, recording puts; `fail` makes the named keys' puts reject. */
function fakeKv(fail: Set<string> = new Set()) {
  const puts: [string, string][] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const kv = {
    put: async (key: string, value: string) => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await new Promise((r) => setTimeout(r, 1));
      inFlight--;
      if (fail.has(key)) throw new Error("no ack");
      puts.push([key, value]);
      return puts.length;
    },
  };
  return { kv: kv as unknown as KV, puts, maxInFlight: () => maxInFlight };
}

describe("SnapshotWriter", () => {
  it("keeps the latest state per asset and encodes it once, when written", async () => {
    const { kv, puts } = fakeKv();
    let encoded = 0;
    const w = new SnapshotWriter<{ n: number }>(kv, (v) => (encoded++, JSON.stringify(v)));
    for (let n = 0; n < 100; n++) w.update("A", { n });
    w.update("B", { n: 7 });
    expect(encoded).toBe(0);
    await w.flush();
    expect(puts).toEqual([
      ["A", '{"n":99}'],
      ["B", '{"n":7}'],
    ]);
    expect(encoded).toBe(2);
  });

  it("writes at most maxPerFlush a flush, the longest-dirty first, with bounded concurrency; close writes the rest", async () => {
    const { kv, puts, maxInFlight } = fakeKv();
    const w = new SnapshotWriter<string>(kv, String, { maxPerFlush: 3, concurrency: 2 });
    for (const k of ["a", "b", "c", "d", "e"]) w.update(k, `${k}1`);
    w.update("a", "a2"); // replaced: keeps its place (dirty since the first update)
    await w.flush();
    expect(puts.map(([k]) => k)).toEqual(["a", "b", "c"]);
    expect(puts[0]).toEqual(["a", "a2"]);
    expect(w.stats.dirty).toBe(2);
    w.update("a", "a3"); // dirty again: behind d and e now
    await w.flush();
    expect(puts.slice(3).map(([k]) => k)).toEqual(["d", "e", "a"]);
    expect(maxInFlight()).toBe(2);
    for (const k of ["f", "g", "h", "i"]) w.update(k, k);
    await w.close();
    expect(w.stats.dirty).toBe(0);
    expect(puts.slice(6).map(([k]) => k)).toEqual(["f", "g", "h", "i"]);
  });

  it("keeps a failed put dirty (unless a newer state replaced it) and reports the failure", async () => {
    const fail = new Set(["b"]);
    const { kv, puts } = fakeKv(fail);
    const w = new SnapshotWriter<string>(kv);
    w.update("a", "a1");
    w.update("b", "b1");
    await expect(w.flush()).rejects.toThrow(/could not be written/);
    expect(w.stats).toMatchObject({ written: 1, failures: 1, dirty: 1 });
    fail.clear();
    await w.flush();
    expect(puts).toEqual([
      ["a", "a1"],
      ["b", "b1"],
    ]);
  });

  it("closes after a flush whose put failed meanwhile by writing that asset again", async () => {
    // The first put is lost (a connection that died); the server answers the next one.
    const puts: string[] = [];
    let tries = 0;
    const kv = {
      put: async (key: string, value: string) => {
        await new Promise((r) => setTimeout(r, 1));
        if (tries++ === 0) throw new Error("no ack");
        puts.push(`${key}=${value}`);
      },
    } as unknown as KV;
    const w = new SnapshotWriter<string>(kv);
    w.update("A", "a1");
    const periodic = w.flush();
    periodic.catch(() => {});
    // The shutdown comes while that flush's put is out.
    await w.close();
    await expect(periodic).rejects.toThrow(/could not be written/);
    expect(puts).toEqual(["A=a1"]);
  });

  it("writes one asset at once for a hand-over, whatever the budget", async () => {
    const { kv, puts } = fakeKv();
    const w = new SnapshotWriter<string>(kv, String, { maxPerFlush: 1 });
    for (const k of ["a", "b", "c"]) w.update(k, k);
    await w.flushAsset("c");
    expect(puts).toEqual([["c", "c"]]);
    await w.flushAsset("zzz"); // nothing dirty: nothing written
    expect(puts).toHaveLength(1);
    expect(w.stats.dirty).toBe(2);
  });

  it("writes a hand-over's asset while flushes of other assets run on, after its own write in flight", async () => {
    // Puts complete only when released: a flush of other assets that is still running (at 10,000 assets one periodic
    // flush follows another, so waiting for none to run never ended, and a hand-over hung).
    const started: [string, string][] = [];
    const landed: [string, string][] = [];
    const pending = new Map<string, () => void>();
    const put = (mint: string, encoded: string) =>
      new Promise<void>((resolve) => {
        started.push([mint, encoded]);
        pending.set(mint, () => (landed.push([mint, encoded]), resolve()));
      });
    const w = new SnapshotWriter<string>(fakeKv().kv, String, { maxPerFlush: 2, put });
    for (const k of ["a", "b", "c"]) w.update(k, `${k}1`);
    const flushing = w.flush();
    expect(started).toEqual([
      ["a", "a1"],
      ["b", "b1"],
    ]);
    // c is not being written: its hand-over writes it at once.
    const c = w.flushAsset("c");
    await new Promise((r) => setImmediate(r));
    expect(started).toContainEqual(["c", "c1"]);
    pending.get("c")!();
    await c;
    // a is being written (an older state): its newer one goes after that lands, never before.
    w.update("a", "a2");
    const a = w.flushAsset("a");
    await new Promise((r) => setImmediate(r));
    expect(started.filter(([k]) => k === "a")).toEqual([["a", "a1"]]);
    pending.get("a")!();
    await new Promise((r) => setImmediate(r));
    expect(started.filter(([k]) => k === "a")).toEqual([
      ["a", "a1"],
      ["a", "a2"],
    ]);
    pending.get("a")!();
    await a;
    expect(landed.filter(([k]) => k === "a")).toEqual([
      ["a", "a1"],
      ["a", "a2"],
    ]);
    pending.get("b")!();
    await flushing;
  });

  it("refuses limits that could never write", () => {
    expect(() => new SnapshotWriter(fakeKv().kv, String, { maxPerFlush: 0 })).toThrow(RangeError);
    expect(() => new SnapshotWriter(fakeKv().kv, String, { concurrency: 0 })).toThrow(RangeError);
  });
});
