/**
 * When the shared intake's next tick comes, read from the stream: a fault test kills a process just before it, so that
 * tick's samples (and the decisions they bring) fall inside the fault, whatever the market's timeline.
 */
import type { JetStreamManager } from "@nats-io/jetstream";
import { decodeIntakeBatch } from "../../src/streams/jetstream/intake-batch.ts";
import { subjects, TOPOLOGY } from "../../src/streams/jetstream/topology.ts";

/**
 * The instant of the intake's next tick at least `leadMs` from now: its phase from the newest sample instant among the
 * last 200 messages of `PEG_INTAKE` (the simulated market stamps every sample of a tick with the tick's instant).
 */
export async function nextTickAt(jsm: JetStreamManager, tickMs: number, leadMs: number): Promise<number> {
  const { last_seq } = (await jsm.streams.info(TOPOLOGY.intake.stream)).state;
  let last = -Infinity;
  for (let seq = last_seq; seq > 0 && last_seq - seq < 200 && last === -Infinity; seq--) {
    const m = await jsm.streams.getMessage(TOPOLOGY.intake.stream, { seq }).catch(() => null);
    if (m === null || m.subject === subjects.intakeTick || m.subject === subjects.intakeSupply) continue;
    for (const { sample } of decodeIntakeBatch(m.data).samples) last = Math.max(last, sample.ts);
  }
  if (last === -Infinity) throw new Error("no samples in PEG_INTAKE to read the intake's tick from");
  let next = last + tickMs;
  while (next - leadMs < Date.now() + 50) next += tickMs;
  return next;
}
