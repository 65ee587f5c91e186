/**
 * A TCP proxy a test controls, to cut one process off the network while it keeps running (issue 26 item 3). `cut()`
 * is a black hole, as a real partition is: established connections stop carrying bytes either way (nothing is
 * closed or reset, so the process learns of it only by its own timeouts), and new connections are accepted but go
 * nowhere. `heal()` lets the held bytes through and forwards again, as TCP resumes after a partition heals.
 */
import { spawn } from "node:child_process";
import { createServer, connect, type Server, type Socket } from "node:net";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

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

/** A `TcpProxy` whose commands are answered once the proxy process carried them out. */
export interface TcpProxyProcess {
  readonly port: number;
  cut(): Promise<void>;
  heal(): Promise<void>;
  close(): Promise<void>;
}

/**
 * `startTcpProxy` in a child process: the bytes it carries do not wait for the caller's event loop (bench:cluster's
 * process also runs the WebSocket clients of 10,000 assets and parses every engine's log, and the proxied engine's
 * NATS round trips waited behind that: its take-over's reads took five times the other survivor's).
 */
export async function startTcpProxyProcess(targetPort: number): Promise<TcpProxyProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", fileURLToPath(new URL("./tcp-proxy-child.ts", import.meta.url)), String(targetPort)], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const next = async (): Promise<string> => {
    const r = await lines.next();
    if (r.done === true) throw new Error(`the proxy process exited (${String(child.exitCode)})`);
    return r.value;
  };
  const { port } = JSON.parse(await next()) as { port: number };
  let queue = Promise.resolve();
  const command = (name: string): Promise<void> => {
    const done = queue.then(async () => {
      child.stdin!.write(`${name}\n`);
      const answer = await next();
      if (answer !== `ok ${name}`) throw new Error(`the proxy process answered ${JSON.stringify(answer)} to ${name}`);
    });
    queue = done.catch(() => {});
    return done;
  };
  return {
    port,
    cut: () => command("cut"),
    heal: () => command("heal"),
    close: async () => {
      if (child.exitCode === null) await command("close").catch(() => {});
      child.kill("SIGKILL");
    },
  };
}
