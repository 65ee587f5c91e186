import { jetstream, type Consumer, type OrderedConsumerOptions } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { LogFn } from "./sample-recorder.ts";
import { untilAnswered } from "./until-answered.ts";

/**
 * How long one try to create an ordered consumer waits for its answer. A live server answers in milliseconds; this
 * leaves room for a loaded cluster.
 */
export const ORDERED_CREATE_TRY_MS = 2_000;

export interface OrderedConsumerTries {
  /** What is being created, for the warning each retry logs. */
  readonly what: string;
  /** Give up (rethrow the last failure) once this long has passed since the first try. */
  readonly budgetMs: number;
  readonly log?: LogFn;
}

/**
 * Creates an ordered consumer of `stream` (ephemeral, one replica), trying again while a try goes unanswered for
 * `ORDERED_CREATE_TRY_MS`. nats-server before 2.12 places such a consumer of a replicated stream on any of the stream's
 * peers, an offline one included (nats-io/nats-server#7165), and the creation is then never answered: with one node of
 * three down, on nats-server 2.9, 7 of 20 creations 2 s after the kill and 11 of 30 creations 30 s after it timed
 * out, the others were answered in 1-4 ms. bench:cluster lost 10 s to one such take-over read and 5 s to another. Each
 * try is placed anew. Every try gets its own copy of `opts`: the client writes the consumer's name prefix into the
 * options it is given, and a second try under the first one's name would meet the first one's placement.
 */
export function orderedConsumer(nc: NatsConnection, stream: string, opts: Partial<OrderedConsumerOptions>, tries: OrderedConsumerTries): Promise<Consumer> {
  const js = jetstream(nc, { timeout: ORDERED_CREATE_TRY_MS });
  return untilAnswered(tries.what, () => js.consumers.get(stream, { ...opts }), { budgetMs: tries.budgetMs, firstWaitMs: 50, ...(tries.log === undefined ? {} : { log: tries.log }) });
}
