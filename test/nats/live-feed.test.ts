/**
 * Where the WebSocket stream's live states come from (src/streams/jetstream/live-feed.ts): an API process (ROLE=api)
 * reads every engine's recomputes from `peg.state.>`; a process that decides them all itself (ROLE=all) hands them
 * over in process and does not listen to `peg.state.>`, so a message there does not reach its hub.
 */
import { Subject } from "rxjs";
import { beforeAll, describe, expect, it } from "vitest";
import { ensureTopology, startLiveFeed, subjects, type LiveSink, type LiveState } from "../../src/streams/jetstream/index.ts";
import { connect } from "@nats-io/transport-node";
import { natsForSuite } from "../support/nats.ts";
import { waitFor } from "../support/ports.ts";

const MINT = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";
const AT = Date.parse("2026-11-26T04:00:00Z");

const suite = natsForSuite();

beforeAll(async () => {
  await ensureTopology(suite.nc);
});

function recordingSink(): LiveSink & { states: LiveState[] } {
  const states: LiveState[] = [];
  return { states, state: (s) => states.push(s), transition: () => {}, coverFrom: () => {} };
}

const published = (discount: string) => JSON.stringify({ v: 1, mint: MINT, ts: new Date(AT).toISOString(), state: "DEPEG", discount });

describe("startLiveFeed", () => {
  it("ends when its connection is closed, instead of re-creating its consumer on it again and again", async () => {
    const nc = await connect({ servers: suite.nats.url });
    const logged: string[] = [];
    const feed = await startLiveFeed(nc, recordingSink(), { windowMs: 60_000, now: Date.now, log: (_level, msg) => void logged.push(msg) });
    await feed.ready;
    await nc.close();
    // The old loop retried 0.1, 0.3, 0.7, 1.2 s after the close; this one ends at once.
    await new Promise((r) => setTimeout(r, 1_500));
    expect(logged.filter((m) => m.includes("cannot re-create the transitions consumer"))).toEqual([]);
    await feed.stop();
  });

  it("reads the recomputes from peg.state.> (an API process)", async () => {
    const sink = recordingSink();
    const feed = await startLiveFeed(suite.nc, sink, { windowMs: 60_000, now: Date.now });
    await feed.ready;
    suite.nc.publish(subjects.state(MINT), published("0.01"));
    await waitFor(() => sink.states.length === 1, 5_000, "the state from NATS");
    expect(sink.states).toEqual([{ mint: MINT, state: "DEPEG", discount: "0.01", at: AT }]);
    await feed.stop();
  });

  it("takes the local recomputes in process and does not listen to peg.state.> (ROLE=all)", async () => {
    const sink = recordingSink();
    const local = new Subject<LiveState>();
    const feed = await startLiveFeed(suite.nc, sink, { windowMs: 60_000, now: Date.now, localStates: local });
    await feed.ready;
    suite.nc.publish(subjects.state(MINT), published("0.02"));
    local.next({ mint: MINT, state: "PEGGED", discount: "0.0001", at: AT + 1_000 });
    // A round trip through the server: the message published above would have been delivered before the flush returns.
    await suite.nc.flush();
    await new Promise((r) => setTimeout(r, 100));
    expect(sink.states).toEqual([{ mint: MINT, state: "PEGGED", discount: "0.0001", at: AT + 1_000 }]);
    await feed.stop();
    // Stopped: no more local states either.
    local.next({ mint: MINT, state: "DEPEG", discount: "0.03", at: AT + 2_000 });
    expect(sink.states).toHaveLength(1);
  });

  it("logs a local state the sink could not take, and never throws it into the engine's emission", async () => {
    const logged: string[] = [];
    const sink: LiveSink = {
      state: () => {
        throw new Error("hub broke");
      },
      transition: () => {},
      coverFrom: () => {},
    };
    const local = new Subject<LiveState>();
    const feed = await startLiveFeed(suite.nc, sink, { windowMs: 60_000, now: Date.now, localStates: local, log: (_l, msg, f) => logged.push(`${msg} ${String(f?.["error"])}`) });
    await feed.ready;
    expect(() => local.next({ mint: MINT, state: "PEGGED", discount: "0", at: AT })).not.toThrow();
    expect(logged).toEqual(["live state not delivered hub broke"]);
    await feed.stop();
  });
});
