/**
 * One server of the WebSocket benchmark (bench/ws.bench.ts), run as a child process:
 * `node --import tsx bench/ws-server.ts <uws|ws> <nats-url>`.
 *
 * Both kinds are the service's live stream minus HTTP: a WsHub on the shipped catalog fed by `startLiveFeed` from
 * NATS (PEG_TRANSITIONS, ordered consumer, as in src/http/server.ts), served on 127.0.0.1:<free port>/v1/ws by
 * - uws: the production binding (`uws.App()`, `uwsTransport()`, `attachWs`), or
 * - ws:  the `ws` library baseline (bench/ws-transport.ts).
 *
 * IPC: sends `{ port }` when listening and the feed's back-fill is done; answers `{ op: "stats" }` with its RSS,
 * heap, CPU time, hub counters and, per alert id, the monotonic time the feed handed the transition to the hub (the
 * NATS leg of the latency); `{ op: "stop" }` closes everything and exits.
 */
import { connect } from "@nats-io/transport-node";
import uws from "uWebSockets.js";
import type { us_listen_socket } from "uWebSockets.js";
import { loadShippedCatalog } from "../src/catalog/index.ts";
import { systemClock } from "../src/clock.ts";
import { WsHub } from "../src/http/ws/hub.ts";
import { WS_LIMITS } from "../src/http/ws/protocol.ts";
import { attachWs, uwsTransport } from "../src/http/ws/uws.ts";
import { startLiveFeed, type LiveSink } from "../src/streams/jetstream/index.ts";
import { monoMs, type WsServerKind, type WsServerStats } from "./ws-common.ts";
import { serveWsLib, WsLibTransport } from "./ws-transport.ts";

const HOST = "127.0.0.1";

async function main(kind: WsServerKind, natsUrl: string): Promise<void> {
  const catalog = loadShippedCatalog();
  const nc = await connect({ servers: natsUrl });
  const hubAt = new Map<string, number>();
  const hubDone = new Map<string, number>();
  let hub: WsHub;
  let close: () => Promise<void> | void;
  let port: number;
  if (kind === "uws") {
    const transport = uwsTransport();
    hub = new WsHub({ catalog, clock: systemClock, transport });
    const app = uws.App();
    transport.bind(app);
    attachWs(app, hub, { trustProxy: false });
    const listen = await new Promise<us_listen_socket>((resolve, reject) =>
      app.listen(HOST, 0, (s: us_listen_socket | false) => (s === false ? reject(new Error("uws cannot listen")) : resolve(s))),
    );
    port = uws.us_socket_local_port(listen as never);
    close = () => {
      uws.us_listen_socket_close(listen);
    };
  } else {
    const transport = new WsLibTransport();
    hub = new WsHub({ catalog, clock: systemClock, transport });
    const server = await serveWsLib(hub, transport, { host: HOST, port: 0 });
    port = server.port;
    close = () => server.close();
  }
  const h = hub;
  // The feed's sink is the hub, with the arrival instant of each transition noted on the way.
  const sink: LiveSink = {
    state: (s) => h.state(s),
    transition: (t) => {
      const t0 = monoMs();
      h.transition(t);
      hubAt.set(t.alert_id, t0);
      hubDone.set(t.alert_id, monoMs());
    },
    coverFrom: (seq) => h.coverFrom(seq),
  };
  const feed = await startLiveFeed(nc, sink, { windowMs: WS_LIMITS.replayWindowMs, now: Date.now });
  await feed.ready;
  hub.start();

  const stop = async () => {
    hub.stop();
    await feed.stop().catch(() => {});
    await Promise.resolve(close()).catch(() => {});
    await nc.close().catch(() => {});
    process.exit(0);
  };
  process.on("disconnect", () => process.exit(0)); // the benchmark died: do not linger
  process.on("message", (m: { op: string }) => {
    if (m.op === "stop") void stop();
    else if (m.op === "stats") {
      const mem = process.memoryUsage();
      const cpu = process.cpuUsage();
      const s = hub.stats;
      const stats: WsServerStats = {
        rss: mem.rss,
        heapUsed: mem.heapUsed,
        cpuUs: cpu.user + cpu.system,
        cpuSysUs: cpu.system,
        clients: s.clients,
        backpressureCloses: s.backpressureCloses,
        limitCloses: s.limitCloses,
        transitionsPublished: s.transitionsPublished,
        hubAt: Object.fromEntries(hubAt),
        hubDone: Object.fromEntries(hubDone),
      };
      process.send?.({ op: "stats", stats });
    } else if (m.op === "gc") {
      (globalThis as { gc?: () => void }).gc?.();
      process.send?.({ op: "gc" });
    }
  });
  process.send?.({ op: "listening", port });
}

const [kind, natsUrl] = process.argv.slice(2);
if ((kind !== "uws" && kind !== "ws") || natsUrl === undefined) throw new Error("usage: ws-server.ts <uws|ws> <nats-url>");
await main(kind, natsUrl);
