/**
 * What an engine keeps of PEG_INTAKE for take-overs (`IntakeRing`): a partition's messages within the window and the
 * byte bound, in stream order, and null (read the stream) when a requested start is older than what it is complete
 * from: its start, or the newest message it evicted.
 */
import { describe, expect, it } from "vitest";
import { IntakeRing } from "../../src/streams/jetstream/intake-ring.ts";

const msg = (seq: number, time: number, bytes = 10) => ({ seq, time, data: new Uint8Array(bytes) });

describe("IntakeRing", () => {
  it("gives a unit's messages from a start up to a sequence, and null before what it is complete from", () => {
    const ring = new IntakeRing({ windowMs: 1_000, maxBytes: 1_000 }, 100);
    for (let i = 0; i < 10; i++) ring.add(String(i % 2), msg(i + 1, 100 + i * 50));
    expect(ring.since("0", 100, 99)!.map((m) => m.seq)).toEqual([1, 3, 5, 7, 9]);
    expect(ring.since("1", 200, 8)!.map((m) => m.seq)).toEqual([4, 6, 8]);
    expect(ring.since("0", 99, 99)).toBeNull();
    expect(ring.since("2", 100, 99)).toEqual([]);
  });

  it("evicts by age and by bytes, and is complete only after what it evicted", () => {
    const ring = new IntakeRing({ windowMs: 1_000, maxBytes: 50 }, 0);
    for (let i = 0; i < 4; i++) ring.add("0", msg(i + 1, i * 100));
    ring.add("0", msg(5, 2_000)); // the first four fall out of the window
    expect(ring.since("0", 0, 99)).toBeNull();
    expect(ring.since("0", 301, 99)!.map((m) => m.seq)).toEqual([5]);
    for (let i = 6; i <= 10; i++) ring.add("1", msg(i, 2_000 + i)); // 6 messages of 10 bytes: over 50
    expect(ring.bytes).toBeLessThanOrEqual(50);
    expect(ring.since("0", 2_000, 99)).toBeNull();
  });
});
