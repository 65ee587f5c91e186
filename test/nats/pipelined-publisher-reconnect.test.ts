/**
 * A publish lost with its connection is sent again when the client reconnects (src/streams/jetstream/pipelined-publisher.ts):
 * after a nats-server loss, what the client had written to the dead connection never reached a stream, and the
 * caller's retry came only after the 5 s ack timeout (bench:cluster: an intake's samples 5 s late). Decided by the
 * bytes: the client reaches NATS through a proxy that swallows what the client sends until the test has seen the
 * publish go by, then drops the connection; the client reconnects through the proxy. Only a publish with a
 * `Nats-Msg-Id` is sent again (a KV put without one could overwrite a newer value).
 */
import { connect as netConnect, createServer, type Server, type Socket } from "node:net";
import { jetstream, jetstreamManager, type PubAck } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PipelinedPublisher } from "../../src/streams/jetstream/pipelined-publisher.ts";
import { startNats, type TestNats } from "../support/nats.ts";
import { waitFor } from "../support/ports.ts";

/** Forwards to NATS; while `swallowing`, what clients send is kept in `swallowed` instead; `drop()` closes every connection. */
class SwallowingProxy {
  swallowing = false;
  swallowed = "";
  readonly #sockets = new Set<Socket>();
  readonly server: Server;
  constructor(target: number) {
    this.server = createServer((client) => {
      const upstream = netConnect(target, "127.0.0.1");
      for (const s of [client, upstream]) {
        this.#sockets.add(s);
        s.on("error", () => {}).on("close", () => (this.#sockets.delete(s), client.destroy(), upstream.destroy()));
      }
      client.on("data", (d: Buffer) => (this.swallowing ? (this.swallowed += d.toString("latin1")) : upstream.write(d)));
      upstream.pipe(client);
    });
  }
  drop(): void {
    for (const s of this.#sockets) s.destroy();
  }
}

let nats: TestNats;
let proxy: SwallowingProxy;
let nc: NatsConnection;
let port: number;

beforeAll(async () => {
  nats = await startNats();
  proxy = new SwallowingProxy(nats.port);
  await new Promise<void>((r) => proxy.server.listen(0, "127.0.0.1", r));
  port = (proxy.server.address() as { port: number }).port;
  nc = await connect({ servers: `nats://127.0.0.1:${port}`, reconnectTimeWait: 100, maxReconnectAttempts: -1 });
  await (await jetstreamManager(nc)).streams.add({ name: "RESEND", subjects: ["resend.>"] });
}, 30_000);
afterAll(async () => {
  await nc?.close();
  proxy?.drop();
  proxy?.server.close();
  await nats?.dispose();
});

/** Resolves on the client's next reconnect. */
async function nextReconnect(): Promise<void> {
  for await (const s of nc.status()) if (s.type === "reconnect") return;
}

/** Publishes while the proxy swallows, waits until the publish went by, then drops the connection; returns its ack. */
async function publishIntoTheVoid(publisher: PipelinedPublisher, subject: string, msgId?: string): Promise<{ ack: Promise<PubAck> }> {
  proxy.swallowed = "";
  proxy.swallowing = true;
  const ack = publisher.publish(subject, new TextEncoder().encode("x"), msgId);
  ack.catch(() => {});
  await waitFor(() => proxy.swallowed.includes(subject), 10_000, "the publish to leave the client");
  proxy.swallowing = false;
  proxy.drop();
  return { ack };
}

describe("PipelinedPublisher across a reconnect", () => {
  it("sends a publish with a Nats-Msg-Id again at once, stored once; one without an id is not sent again", async () => {
    // No timeout, no caller's retry within the test: only the resend can bring the ack.
    const publisher = new PipelinedPublisher(nc, { timeoutMs: 120_000 });
    const jsm = await jetstreamManager(nc);

    const { ack } = await publishIntoTheVoid(publisher, "resend.with-id", "m-1");
    const stored = await Promise.race([ack, new Promise<null>((r) => setTimeout(() => r(null), 20_000))]);
    expect(stored, "acknowledged after the reconnect, long before the publish's timeout").not.toBeNull();
    expect(stored!.duplicate).toBe(false);
    expect(publisher.resent).toBeGreaterThanOrEqual(1);

    const resentBefore = publisher.resent;
    const reconnected = nextReconnect();
    const { ack: unacked } = await publishIntoTheVoid(publisher, "resend.without-id");
    await reconnected;
    // A publish after the reconnect, on the same connection: a copy sent again at the reconnect would be stored first.
    await jetstream(nc).publish("resend.probe", "p");
    const subjects = [];
    for (let seq = 1; seq <= (await jsm.streams.info("RESEND")).state.last_seq; seq++) subjects.push((await jsm.streams.getMessage("RESEND", { seq }))!.subject);
    expect(subjects, "the first message once, the one without an id not sent again").toEqual(["resend.with-id", "resend.probe"]);
    expect(publisher.resent).toBe(resentBefore);
    expect(publisher.stats.inFlight).toBe(1);
    publisher.close();
    await expect(unacked).rejects.toThrow(/closed/);
  }, 60_000);
});
