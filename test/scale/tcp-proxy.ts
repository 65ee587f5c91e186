/**
 * A TCP proxy a test controls, to cut one process off the network while it keeps running (issue 26 item 3). `cut()`
 * is a black hole, as a real partition is: established connections stop carrying bytes either way (nothing is
 * closed or reset, so the process learns of it only by its own timeouts), and new connections are accepted but go
 * nowhere. `heal()` lets the held bytes through and forwards again, as TCP resumes after a partition heals.
 */
import { createServer, connect, type Server, type Socket } from "node:net";

interface Pair {
  readonly client: Socket;
  readonly upstream: Socket | null;
}

export interface TcpProxy {
  /** `nats://127.0.0.1:<port>` style address of the proxy. */
  readonly port: number;
  cut(): void;
  heal(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(targetPort: number, targetHost = "127.0.0.1"): Promise<TcpProxy> {
  const pairs = new Set<Pair>();
  let isCut = false;

  const forward = (client: Socket): void => {
    const upstream = connect(targetPort, targetHost);
    const pair: Pair = { client, upstream };
    pairs.add(pair);
    client.pipe(upstream);
    upstream.pipe(client);
    const drop = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on("error", drop).on("close", drop);
    upstream.on("error", drop).on("close", drop);
  };

  const server: Server = createServer((client) => {
    if (!isCut) return forward(client);
    // Accepted, then silence: held until the partition heals.
    client.pause();
    const pair: Pair = { client, upstream: null };
    pairs.add(pair);
    client.on("error", () => pairs.delete(pair)).on("close", () => pairs.delete(pair));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("the proxy has no port");

  return {
    port: address.port,
    cut() {
      isCut = true;
      for (const p of pairs) {
        if (p.upstream === null) continue;
        p.client.unpipe(p.upstream);
        p.upstream.unpipe(p.client);
        p.client.pause();
        p.upstream.pause();
      }
    },
    heal() {
      isCut = false;
      for (const p of [...pairs]) {
        if (p.upstream === null) {
          pairs.delete(p);
          forward(p.client);
          p.client.resume();
        } else {
          p.client.pipe(p.upstream);
          p.upstream.pipe(p.client);
        }
      }
    },
    async close() {
      for (const p of pairs) {
        p.client.destroy();
        p.upstream?.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
