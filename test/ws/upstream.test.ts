/**
 * Never connected and blind (issue 26 item 3): a process that cannot reach NATS closes its WebSocket clients with
 * 1013 and `upstream_unavailable`, and refuses new ones, until NATS answers again; then it accepts them. The watch
 * decides by its pings' answers on a clock the test moves, not by waiting.
 */
import { describe, expect, it } from "vitest";
import { loadShippedCatalog } from "../../src/catalog/index.ts";
import { SimulatedClock } from "../../src/clock.ts";
import { WsHub, type WsConnection, type WsTransport } from "../../src/http/ws/hub.ts";
import { watchUpstream } from "../../src/http/ws/upstream.ts";

const catalog = loadShippedCatalog();

class Conn implements WsConnection {
  readonly received: Record<string, unknown>[] = [];
  ended: { code: number; reason: string } | null = null;
  send(text: string): void {
    if (this.ended === null) this.received.push(JSON.parse(text) as Record<string, unknown>);
  }
  subscribe(): void {}
  unsubscribe(): void {}
  end(code: number, reason: string): void {
    this.ended = { code, reason };
  }
  bufferedAmount(): number {
    return 0;
  }
}

const transport: WsTransport = { publish: () => {} };

describe("WebSocket clients of a process cut off from NATS", () => {
  it("are closed with 1013 upstream_unavailable, new ones refused, and accepted again once NATS answers", () => {
    const hub = new WsHub({ catalog, clock: new SimulatedClock(0), transport, onBackpressureClose: () => {} });
    const a = new Conn();
    expect(hub.connect(a, "10.0.0.1")).not.toBeNull();
    hub.unavailable("no answer from NATS for 5 s");
    expect(a.ended).toEqual({ code: 1013, reason: "upstream unavailable" });
    expect(a.received.at(-1)).toEqual({ type: "error", error: "upstream_unavailable", message: "no answer from NATS for 5 s" });
    expect(hub.stats.clients).toBe(0);
    const b = new Conn();
    expect(hub.connect(b, "10.0.0.1")).toBeNull();
    expect(b.ended?.code).toBe(1013);
    expect(b.received).toEqual([{ type: "error", error: "upstream_unavailable", message: "no answer from NATS for 5 s" }]);
    hub.unavailable(null);
    const c = new Conn();
    expect(hub.connect(c, "10.0.0.1")).not.toBeNull();
    expect(c.ended).toBeNull();
    expect(c.received[0]).toMatchObject({ type: "hello" });
  });

  it("the watch reports a loss after the grace without an answer, and the recovery at the next answer", async () => {
    let t = 0;
    let answer = true;
    const unanswered: (() => void)[] = [];
    const changes: (string | null)[] = [];
    const watch = watchUpstream({
      ping: () => (answer ? Promise.resolve() : new Promise<void>((r) => unanswered.push(r))),
      graceMs: 5_000,
      everyMs: 3_600_000,
      now: () => t,
      onChange: (why) => changes.push(why),
    });
    const round = async (ms: number) => {
      t += ms;
      watch.check();
      await new Promise((r) => setImmediate(r));
    };
    await round(1_000);
    answer = false;
    for (let i = 0; i < 4; i++) await round(1_000);
    expect(changes).toEqual([]);
    // One ping is outstanding the whole time: no second one is sent while it waits.
    expect(unanswered).toHaveLength(1);
    await round(1_000);
    expect(watch.down).toMatch(/no answer from NATS for 5 s/);
    expect(changes).toHaveLength(1);
    await round(10_000);
    expect(changes).toHaveLength(1);
    unanswered.shift()!();
    await new Promise((r) => setImmediate(r));
    expect(watch.down).toBeNull();
    expect(changes).toEqual([changes[0], null]);
    watch.stop();
  });
});
