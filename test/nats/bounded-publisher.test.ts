/**
 * BoundedPublisher sends an unanswered publish again within its timeout (issue 26): a stream electing a leader drops
 * what is sent meanwhile, and the first send after the election is acknowledged, not one the caller makes after the
 * whole timeout. A fake JetStream client stands for the server here.
 */
import type { JetStreamClient, PubAck } from "@nats-io/jetstream";
import { describe, expect, it } from "vitest";
import { BoundedPublisher } from "../../src/streams/jetstream/index.ts";

const timeoutError = () => Object.assign(new Error("timeout"), { name: "TimeoutError" });

/** Answers send n with `answer(n)`: an ack, an error, or "drop" (unanswered until the send's own timeout). */
function fakeJs(answer: (n: number) => PubAck | Error | "drop"): { js: JetStreamClient; sends: { at: number; timeout: number }[] } {
  const sends: { at: number; timeout: number }[] = [];
  const t0 = performance.now();
  const js = {
    publish: (_subject: string, _data: unknown, opts: { timeout: number }) => {
      sends.push({ at: Math.round(performance.now() - t0), timeout: opts.timeout });
      const a = answer(sends.length);
      if (a === "drop") return new Promise((_, reject) => setTimeout(() => reject(timeoutError()), opts.timeout));
      return a instanceof Error ? Promise.reject(a) : Promise.resolve(a);
    },
  } as unknown as JetStreamClient;
  return { js, sends };
}

const ack = (seq: number): PubAck => ({ stream: "S", seq, duplicate: false }) as PubAck;

describe("BoundedPublisher", () => {
  it("sends an unanswered publish again every resendMs and resolves with the first ack", async () => {
    const { js, sends } = fakeJs((n) => (n < 3 ? "drop" : ack(7)));
    const p = new BoundedPublisher(js, 4, { resendMs: 100 });
    await expect(p.publish("s", "x", "id", 2_000)).resolves.toMatchObject({ seq: 7 });
    expect(sends).toHaveLength(3);
    expect(sends[2]!.at).toBeLessThan(600);
    // Every send waits at most until the caller's deadline.
    expect(sends.every((s) => s.timeout <= 2_000)).toBe(true);
  });

  it("retries soon after a quick transient failure (no responders while a stream has no leader)", async () => {
    const noResponders = Object.assign(new Error("jetstream is not enabled"), { name: "JetStreamNotEnabled" });
    const { js, sends } = fakeJs((n) => (n < 4 ? noResponders : ack(9)));
    const p = new BoundedPublisher(js, 4, { resendMs: 5_000 });
    await expect(p.publish("s", "x", "id", 5_000)).resolves.toMatchObject({ seq: 9 });
    expect(sends).toHaveLength(4);
    expect(sends[3]!.at).toBeLessThan(1_500);
  });

  it("settles with the first answer that is not transient (a wrong last sequence goes to the caller)", async () => {
    const wrong = Object.assign(new Error("wrong last sequence: 3"), { name: "JetStreamApiError" });
    const { js } = fakeJs((n) => (n === 1 ? "drop" : wrong));
    const p = new BoundedPublisher(js, 4, { resendMs: 50 });
    await expect(p.publish("s", "x", "id", 1_000)).rejects.toBe(wrong);
  });

  it("rejects with the timeout when nothing answers within the caller's timeout", async () => {
    const { js, sends } = fakeJs(() => "drop");
    const p = new BoundedPublisher(js, 4, { resendMs: 100 });
    const started = performance.now();
    await expect(p.publish("s", "x", "id", 450)).rejects.toMatchObject({ name: "TimeoutError" });
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(sends.length).toBeGreaterThanOrEqual(4);
    expect(p.stats).toMatchObject({ failed: 1, inFlight: 0 });
  });
});
